// The node's identity: the id and secret credential the server issued at registration, kept in
// <data_dir>/identity.json (mode 0600: the credential lets its holder act as this node). Written
// once per registration, atomically; read at every start so that later starts need no join token.
#pragma once

#include <filesystem>
#include <string>

#include "common/result.h"

namespace gpurent::agent {

inline constexpr std::string_view kIdentityFile = "identity.json";

struct Identity {
  std::string node_id;
  std::string credential;
};

// kNotFound (code "file_not_found") before the first registration; kInternal for a corrupt file.
Result<Identity> load_identity(const std::filesystem::path& data_dir);
Status save_identity(const std::filesystem::path& data_dir, const Identity& identity);

}  // namespace gpurent::agent
