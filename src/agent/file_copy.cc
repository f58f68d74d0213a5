#include "agent/file_copy.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>

#include "agent/exec.h"
#include "agent/runtime/volumes.h"
#include "agent/runtime/workdir.h"
#include "agent/tool_run.h"
#include "agent/vm/guest_agent.h"
#include "agent/vm/vm_runtime.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

// Run in a VM by its guest agent: unpacks the staged archive ($2) into the destination ($1),
// made when missing, and removes it.
constexpr std::string_view kUnpackInGuest =
    R"(mkdir -p "$1" && cd "$1" && tar -xzf "$2"; status=$?; rm -f "$2"; exit $status)";

bool starts_with(const std::vector<std::string>& path, const std::vector<std::string>& prefix) {
  return path.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), path.begin());
}

std::string joined(std::string base, const std::vector<std::string>& below) {
  for (const auto& name : below) {
    if (!base.ends_with('/')) base += '/';
    base += name;
  }
  return base;
}

// GPURENT_VOLUMES: "<volume_id>=<path>,..." -> the paths.
std::vector<std::string> volume_paths(const Launch& launch) {
  std::vector<std::string> paths;
  const auto env = launch.env.find("GPURENT_VOLUMES");
  if (env == launch.env.end()) return paths;
  std::string_view rest = env->second;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    if (const size_t eq = entry.find('='); eq != std::string_view::npos) {
      paths.emplace_back(entry.substr(eq + 1));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return paths;
}

}  // namespace

Result<RunCopyDestination> run_copy_destination(const std::filesystem::path& home,
                                                const std::vector<std::string>& volume_paths,
                                                std::string_view path) {
  GPURENT_CHECK(model::check_copy_path(path));
  const auto home_names = model::path_components(home.string());
  auto names = model::path_components(path);
  const bool absolute = path.starts_with('/');
  const bool in_home = absolute && starts_with(names, home_names);
  // Below the home, whichever way it was given (a mount path is where the run finds the volume).
  if (in_home)
    names.erase(names.begin(), names.begin() + static_cast<ptrdiff_t>(home_names.size()));
  for (const auto& volume : volume_paths) {
    const auto volume_names = model::path_components(volume);
    if (!starts_with(volume_names, home_names)) continue;  // not where this runtime puts them
    const std::vector<std::string> below_home(
        volume_names.begin() + static_cast<ptrdiff_t>(home_names.size()), volume_names.end());
    if (below_home.empty() || !starts_with(names, below_home)) continue;
    RunCopyDestination destination{
        volume, {names.begin() + static_cast<ptrdiff_t>(below_home.size()), names.end()}, ""};
    destination.shown = joined(volume, destination.below);
    return destination;
  }
  if (absolute && !in_home) {
    return fail(Error::invalid(
        "path_outside_instance",
        fmt::format("'{}' is neither in the instance's home ({}) nor in a volume it mounts; give "
                    "a path relative to its home",
                    path, home.string())));
  }
  RunCopyDestination destination{home, std::move(names), ""};
  destination.shown = joined(home.string(), destination.below);
  return destination;
}

Result<model::CopyResult> copy_into_run(const std::filesystem::path& workload_dir,
                                        const std::filesystem::path& archive,
                                        std::string_view path) {
  GPURENT_TRY(launch, read_run_launch(workload_dir));
  GPURENT_TRY(destination, run_copy_destination(launch.cwd, volume_paths(launch), path));
  GPURENT_TRY(sandbox, open_run_sandbox(workload_dir, launch));
  // A run without a sandbox shares the agent's user: tar runs as the agent, as the run would.
  GPURENT_TRY(result, unpack_archive(archive, {.root = destination.root,
                                               .below = destination.below,
                                               .sandbox = sandbox ? &*sandbox : nullptr}));
  result.path = destination.shown;
  return result;
}

Result<model::CopyResult> copy_into_volume(const std::filesystem::path& data_dir,
                                           std::string_view volume_id, std::string_view tenant_id,
                                           const std::shared_ptr<WorkloadUsers>& users,
                                           const std::filesystem::path& archive,
                                           std::string_view path) {
  GPURENT_CHECK(model::check_copy_path(path));
  const auto dir = volume_dir(data_dir, volume_id);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return fail(Error::internal(
        fmt::format("cannot create the directory of volume {}: {}", volume_id, ec.message())));
  }
  UnpackTarget target{.root = dir, .below = model::path_components(path), .umask = 0007};
  const auto guest_ids = users ? users->given_guest_ids(tenant_id) : std::nullopt;
  struct stat st {};
  if (guest_ids && ::lstat(dir.c_str(), &st) == 0 && st.st_uid >= *guest_ids &&
      st.st_uid - *guest_ids < kGuestIdCount) {
    target.user = WorkdirUser{*guest_ids, *guest_ids};
    target.confine = true;
  } else if (users) {
    GPURENT_TRY(uid, users->uid_of_instance(volume_id));
    GPURENT_TRY(gid, users->gid_of_tenant(tenant_id));
    GPURENT_CHECK(share_volume_with_group(dir, gid));
    target.user = WorkdirUser{uid, gid};
    target.confine = true;
  }
  GPURENT_TRY(result, unpack_archive(archive, target));
  result.path = joined("/", target.below);
  return result;
}

Result<model::CopyResult> copy_into_vm(const std::filesystem::path& guest_agent_socket,
                                       const std::filesystem::path& archive,
                                       std::string_view path) {
  GPURENT_CHECK(model::check_copy_path(path));
  const std::string destination =
      joined(path.starts_with('/') ? "/" : "/workspace", model::path_components(path));
  // What it holds, listed here: the guest's tar may be busybox's, whose listing differs.
  const auto listed = run_tool({.argv = {"tar", "-tzvv", "-f", archive.string()},
                                .timeout = std::chrono::seconds(120),
                                .max_output_bytes = 64 << 20,
                                .with_stderr = false});
  if (!listed || listed->timed_out) {
    return fail(Error::internal(fmt::format("cannot list the archive {}", archive.string())));
  }
  TarListing listing;
  listing.feed(listed->output);
  model::CopyResult result = listing.finish();
  result.path = destination;
  const std::string staged = fmt::format("/tmp/gpurent-copy-{:016x}.tar.gz", os_random_seed());
  GPURENT_CHECK(guest_write_file(guest_agent_socket, archive, staged));
  GPURENT_TRY(unpacked,
              guest_exec(guest_agent_socket,
                         {"/bin/sh", "-c", std::string(kUnpackInGuest), "gpurent-copy", destination,
                          staged},
                         {{"PATH", std::string(kGuestPath)}},
                         std::chrono::duration_cast<std::chrono::milliseconds>(kMaxUnpackTime)));
  if (unpacked.exit_code != 0) {
    return fail(Error::unprocessable(
        "unpack_failed", fmt::format("unpacking into {} in the VM failed ({}): {}", destination,
                                     unpacked.exit_code, unpacked.err + unpacked.out)));
  }
  return result;
}

}  // namespace gpurent::agent
