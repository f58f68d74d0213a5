#include "agent/identity.h"

#include <fmt/format.h>

#include "agent/files.h"
#include "common/json.h"

namespace gpurent::agent {

Result<Identity> load_identity(const std::filesystem::path& data_dir) {
  const auto path = data_dir / kIdentityFile;
  GPURENT_TRY(text, read_file(path));
  const auto corrupt = [&](const Error& error) {
    return Error::internal(fmt::format("{} is corrupt ({}); delete it to register the node again",
                                       path.string(), error.message));
  };
  auto json = parse_json_object(text);
  if (!json) return fail(corrupt(json.error()));
  auto node_id = required_string(*json, "node_id", 256);
  if (!node_id) return fail(corrupt(node_id.error()));
  auto credential = required_string(*json, "credential", 256);
  if (!credential) return fail(corrupt(credential.error()));
  return Identity{std::move(*node_id), std::move(*credential)};
}

Status save_identity(const std::filesystem::path& data_dir, const Identity& identity) {
  const Json json = {{"node_id", identity.node_id}, {"credential", identity.credential}};
  return write_file_atomic(data_dir / kIdentityFile, json.dump(2) + "\n", 0600);
}

}  // namespace gpurent::agent
