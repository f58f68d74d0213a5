// cp: a local file or directory copied into a running instance or a volume (model/file_copy.h):
// packed (cli/workdir.h), uploaded in resumable pieces, and unpacked by the node.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/workdir.h"
#include "model/file_copy.h"

namespace gpurent::cli {
namespace {

struct CopyTarget {
  std::string id;  // an instance (id or name) or a volume ("v-...")
  std::string path;
  bool volume = false;
};

Result<CopyTarget> parse_copy_target(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return fail(Error::invalid(
        "invalid_target",
        fmt::format("'{}' is not INSTANCE:DEST or VOLUME:DEST (e.g. i-abc:data, v-abc:, where an "
                    "empty DEST is the instance's home or the volume's root)",
                    text)));
  }
  CopyTarget target{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  target.volume = target.id.starts_with("v-");
  GPURENT_CHECK(model::check_copy_path(target.path));
  return target;
}

std::string copied_view(const CopyTarget& target, const model::CopyResult& result) {
  const auto count = [](int64_t n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
  };
  return fmt::format(
      "copied {}, {}, {} ({:.1f} KiB) into {}:{}\n", count(result.files, "file", "files"),
      count(result.directories, "directory", "directories"), count(result.links, "link", "links"),
      static_cast<double>(result.bytes) / 1024, target.id, sanitize(result.path));
}

Status copy(Context& ctx, const std::string& source, const std::string& destination) {
  GPURENT_TRY(target, parse_copy_target(destination));
  GPURENT_TRY(api, ctx.api());
  GPURENT_TRY(packed, pack_copy_source(source));
  GPURENT_TRY(upload, upload_packed(ctx, *api, packed, source));
  return ctx.show(
      target.volume ? api->files().copy_into_volume(target.id, upload, target.path)
                    : api->files().copy_into_instance(target.id, upload, target.path),
      [&target](const model::CopyResult& result) { return copied_view(target, result); });
}

}  // namespace

void add_copy_commands(CLI::App& app, Context& ctx) {
  auto source = std::make_shared<std::string>();
  auto destination = std::make_shared<std::string>();
  auto* cp = app.add_subcommand(
      "cp",
      "Copy a local file or directory into a running instance or a volume: cp train.py i-abc:src, "
      "cp data/ v-abc:datasets (a trailing / copies the directory's contents)");
  cp->add_option("source", *source, "a local file or directory")->required();
  cp->add_option("destination", *destination,
                 "INSTANCE:DIR or VOLUME:DIR; DIR relative to the instance's home (or absolute "
                 "in it or in a volume it mounts) or to the volume's root, made if missing")
      ->required();
  cp->callback([&ctx, source, destination] {
    ctx.set_command([&ctx, source, destination] { return copy(ctx, *source, *destination); });
  });
}

}  // namespace gpurent::cli
