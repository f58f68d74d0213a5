#include "cli/workdir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/pipes.h"
#include "model/agent_protocol.h"

namespace gpurent::cli {
namespace {

constexpr size_t kMaxTarMessageBytes = 4096;

// What tar packs: `members` of `base`, after the `options` (exclusions). `what` names the
// source in errors; `smaller` says how to make it fit.
struct PackRequest {
  std::filesystem::path base;
  std::vector<std::string> members;
  std::vector<std::string> options;
  std::string what;
  std::string smaller;
};

Result<std::string> pack(const PackRequest& request) {
  std::vector<std::string> args = {"tar", "-czf", "-"};
  args.insert(args.end(), request.options.begin(), request.options.end());
  args.insert(args.end(), {"-C", request.base.string(), "--"});
  args.insert(args.end(), request.members.begin(), request.members.end());
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return fail(Error::internal(fmt::format("pipe: {}", std::strerror(errno))));
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return fail(Error::internal(fmt::format("pipe: {}", std::strerror(errno))));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  std::string packed, messages;
  bool too_large = false;
  // The archive is kept up to the limit, then drained, so that tar finishes.
  drain_pipes(
      out[0],
      [&](std::string_view piece) {
        too_large = too_large ||
                    static_cast<int64_t>(packed.size() + piece.size()) > model::kMaxWorkdirBytes;
        if (!too_large) packed.append(piece);
      },
      err[0],
      [&](std::string_view piece) {
        if (messages.size() < kMaxTarMessageBytes) messages.append(piece);
      });
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (too_large) {
    return fail(Error{ErrorKind::kPayloadTooLarge, "upload_too_large",
                      fmt::format("{}: more than {} MiB packed; {}", request.what,
                                  model::kMaxWorkdirBytes >> 20, request.smaller)});
  }
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!messages.empty() && messages.back() == '\n') messages.pop_back();
    return fail(Error::internal(fmt::format("tar could not pack {}: {}", request.what, messages)));
  }
  return packed;
}

}  // namespace

Result<std::string> pack_workdir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return fail(Error::invalid("invalid_workdir",
                               fmt::format("--workdir {}: not a directory", dir.string())));
  }
  PackRequest request{.base = dir,
                      .members = {"."},
                      .options = {"--exclude-vcs"},
                      .what = fmt::format("--workdir {}", dir.string()),
                      .smaller = fmt::format("list what to leave out in {}/{}, and put large data "
                                             "in a volume (gpurent volumes, gpurent cp)",
                                             dir.string(), kWorkdirIgnoreFile)};
  if (std::filesystem::is_regular_file(dir / kWorkdirIgnoreFile, ec)) {
    request.options.push_back("--exclude-from=" + (dir / kWorkdirIgnoreFile).string());
  }
  return pack(request);
}

Result<std::string> pack_copy_source(std::string_view source) {
  const std::filesystem::path path(source);
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return fail(
        Error::invalid("invalid_source", fmt::format("{}: no such file or directory", source)));
  }
  const std::string smaller = "copy its parts one at a time";
  // A volume is shared through its tenant's group: what is copied there stays writable by every
  // instance of the tenant (the node unpacks with umask 0007).
  const std::vector<std::string> options = {"--mode=g+rwX"};
  const auto normal = std::filesystem::absolute(path).lexically_normal();
  // "dir/" (and "." or "/") is the directory's contents; "dir" is the directory itself.
  if (std::filesystem::is_directory(status) && !normal.has_filename()) {
    return pack({.base = normal,
                 .members = {"."},
                 .options = options,
                 .what = std::string(source),
                 .smaller = smaller});
  }
  return pack({.base = normal.parent_path(),
               .members = {normal.filename().string()},
               .options = options,
               .what = std::string(source),
               .smaller = smaller});
}

Result<std::string> upload_packed(Context& ctx, client::ApiClient& api, std::string_view packed,
                                  std::string_view what) {
  GPURENT_TRY(upload, api.files().upload(packed));
  std::string id = upload.value.id;
  ctx.err() << fmt::format("{}: {:.1f} KiB packed, uploaded as {}\n", what,
                           static_cast<double>(packed.size()) / 1024, id)
            << std::flush;
  return id;
}

Result<std::string> upload_workdir(Context& ctx, client::ApiClient& api,
                                   const std::filesystem::path& dir) {
  GPURENT_TRY(packed, pack_workdir(dir));
  return upload_packed(ctx, api, packed, fmt::format("workdir {}", dir.string()));
}

}  // namespace gpurent::cli
