// The agent's file helpers beyond common/files.h's small-file I/O (which the agent uses for its
// identity, simulated GPU ids, workload state and exit records).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>

#include "common/files.h"
#include "common/result.h"

namespace gpurent::agent {

// Walks a tree that someone else may be changing while it is walked (a tenant's home or volume, a
// guest's folder), for root to change its entries' owners or modes. Every entry is opened from its
// directory's descriptor and never through a link, so a directory swapped for a link during the
// walk leads nowhere outside the tree: it is visited as the link it became. `visit` gets each
// entry (TreeEntry), a directory after what it holds, the root last. Entries gone meanwhile are
// skipped, and a directory removed meanwhile holds nothing. Errors: kInternal when the root is not
// a directory that can be opened, when the tree is deeper than kMaxTreeDepth directories (each
// level holds a descriptor while the walk is below it), or the first error of `visit`.
inline constexpr int kMaxTreeDepth = 256;
struct TreeEntry {
  int fd;                             // O_PATH, of the entry itself (a link's is the link's)
  const struct stat& stat;            // fstat's of fd
  const std::filesystem::path& path;  // its name, for messages: never open it by this name
};
Status walk_tree(const std::filesystem::path& root,
                 const std::function<Status(const TreeEntry& entry)>& visit);

// Gives a tree to a user and group (walk_tree), links themselves and not what they point to.
Status chown_tree(const std::filesystem::path& root, uid_t uid, gid_t gid);

// Gives an entry walk_tree visits to a user and group (a link itself, not what it points to).
// Refused for a file with other names where hard links are not protected (check_hard_links).
Status chown_entry(const TreeEntry& entry, uid_t uid, gid_t gid);
// Sets the mode of an entry walk_tree visits. Refused for a link (links have no mode of their own)
// and as chown_entry refuses.
Status chmod_entry(const TreeEntry& entry, mode_t mode);

// A hard link is the file itself: whoever made one in a tenant's tree would have root change the
// file wherever its other names are. Where the kernel protects hard links (fs.protected_hardlinks
// = 1, systemd's default), a tenant can link only files it may write, so every file with other
// names is the tenant's to have changed; elsewhere (links_protected false) such a file is refused.
// Errors: kInternal naming the file and the sysctl.
Status check_hard_links(const TreeEntry& entry, bool links_protected);

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
