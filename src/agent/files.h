// The agent's file helpers beyond common/files.h's small-file I/O (which the agent uses for its
// identity, simulated GPU ids, workload state and exit records).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "common/files.h"
#include "common/result.h"

namespace gpurent::agent {

// Gives a tree to a user and group, links themselves and not what they point to (the tree is a
// tenant's: a link there may point anywhere).
Status chown_tree(const std::filesystem::path& root, uid_t uid, gid_t gid);

// Opens for reading a file that someone else may put there (a tenant, a guest, a confined QEMU's
// user): not through a link (O_NOFOLLOW), without waiting on a FIFO (O_NONBLOCK), and only a
// regular file. The descriptor is the caller's to close. Errors: kNotFound when there is none,
// else kInternal naming what it is.
Result<int> open_untrusted_file(const std::filesystem::path& path);
// Its whole content, up to max_bytes (more is kInternal).
Result<std::string> read_untrusted_file(const std::filesystem::path& path, size_t max_bytes);

// Whether `path` lies strictly below `dir`, by their names (both absolute, or both relative to one
// directory): a path reaching outside through ".." does not.
bool lies_below(const std::filesystem::path& path, const std::filesystem::path& dir);

// Gives a folder to a user and group, and everything in it when the folder was not theirs yet (a
// VM's first share of it, or after another runtime or another VM's user had it).
Status give_folder(const std::filesystem::path& directory, uid_t uid, gid_t gid);

}  // namespace gpurent::agent
