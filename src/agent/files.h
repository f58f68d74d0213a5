// The agent's file helpers beyond common/files.h's small-file I/O (which the agent uses for its
// identity, simulated GPU ids, workload state and exit records).
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "common/files.h"
#include "common/result.h"

namespace gpurent::agent {

// Gives a tree to a user and group, links themselves and not what they point to (the tree is a
// tenant's: a link there may point anywhere).
Status chown_tree(const std::filesystem::path& root, uid_t uid, gid_t gid);

}  // namespace gpurent::agent
