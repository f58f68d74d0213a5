// Unpacking a tenant's tar.gz upload on the node: into an instance's home before its first start
// (its workdir, InstanceSpec::workdir), and into a running instance or a volume (`gpurent cp`,
// model/file_copy.h, through the node API).
//
// A workdir is fetched once per node into <data_dir>/workdirs/<upload id> (the reconciler, through
// the server link; copies share that cache) and unpacked into the home once per instance and
// upload: <data_dir>/workdirs/unpacked/<instance id> names the upload unpacked there, so a
// restarted instance keeps the files its runs changed.
//
// Unpacking runs GNU tar as the user whose files it writes, never as root in a directory a tenant
// controls: a sandboxed run's uid and gid (a copy into a running instance enters its sandbox, so
// that it sees and may write exactly what the instance does), or a volume's own user in its
// tenant's group, confined to the volume (UnpackTarget::confine). tar refuses members outside the
// directory ('..', absolute names) and does not restore owners or permissions; the destination's
// directories are opened without following links (O_NOFOLLOW), so a link the tenant left cannot
// take the copy elsewhere. Without a user (no
// sandbox: the node runs one tenant's runs at a time as the agent's user, process_runtime.h) it
// runs as the agent. Each call blocks its caller until tar ends (at most UnpackTarget::timeout).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/sandbox.h"
#include "common/result.h"
#include "model/file_copy.h"

namespace gpurent::agent {

inline constexpr std::chrono::seconds kMaxUnpackTime{600};

struct WorkdirUser {
  uid_t uid = 0;
  gid_t gid = 0;
};

std::filesystem::path workdir_archive(const std::filesystem::path& data_dir,
                                      std::string_view upload_id);

// Where and as whom an archive is unpacked.
struct UnpackTarget {
  // An existing directory, entered as the agent, or inside `sandbox` as its user.
  std::filesystem::path root;
  // The directories below root to unpack into, one name each (model::path_components), made when
  // missing; a link among them is refused, not followed.
  std::vector<std::string> below;
  std::optional<WorkdirUser> user;        // tar runs as this user, after entering root
  const SandboxEntry* sandbox = nullptr;  // a running sandbox to enter first, as its user
  // Write nothing outside root: tar runs in a mount namespace of its own where every mount but
  // root is read-only, so that a member reaching past a link the tenant left below root (an
  // archive may name "x/f" without "x/", and tar follows an existing x) meets a read-only file
  // system. Needs root (and mount_setattr, Linux 5.12).
  bool confine = false;
  mode_t umask = 022;
  std::chrono::seconds timeout = kMaxUnpackTime;  // then tar is killed
};

// Unpacks the tar.gz at `archive` and says what was written (CopyResult::path is left empty).
// Errors: kUnprocessable "invalid_destination" (a directory of `below` is a link or not a
// directory, or cannot be made), kUnprocessable "unpack_failed" (tar failed or timed out: its
// message), kInternal (the archive cannot be opened, fork or pipe failed, the user, sandbox or
// confinement could not be entered).
Result<model::CopyResult> unpack_archive(const std::filesystem::path& archive,
                                         const UnpackTarget& target);

// Counts what `tar -xvv` lists as it extracts, fed in pieces of any size.
class TarListing {
 public:
  void feed(std::string_view piece);
  model::CopyResult finish();

 private:
  void line(std::string_view line);
  std::string partial_;
  model::CopyResult result_;
};

// Unpacks the workdir into home unless it was unpacked there already. Errors: the archive is
// missing or tar failed (kInternal "workdir_unpack_failed", with tar's message).
Status unpack_workdir(const std::filesystem::path& data_dir, std::string_view instance_id,
                      std::string_view upload_id, const std::filesystem::path& home,
                      std::optional<WorkdirUser> user);
// Forgets that a workdir was unpacked for the instance, whose home was deleted (the janitor,
// agent/janitor.h): a later run of it on this node unpacks it again.
Status forget_unpacked_workdir(const std::filesystem::path& data_dir, std::string_view instance_id);

}  // namespace gpurent::agent
