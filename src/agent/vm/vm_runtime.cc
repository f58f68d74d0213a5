#include "agent/vm/vm_runtime.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>
#include <system_error>
#include <thread>

#include "agent/files.h"
#include "agent/node_runs.h"
#include "agent/runtime/volumes.h"
#include "agent/runtime/workdir.h"
#include "agent/runtime/workload_files.h"
#include "agent/tool_run.h"
#include "agent/vm/guest_agent.h"
#include "agent/vm/guest_gpu_report.h"
#include "agent/vm/passt.h"
#include "agent/vm/unix_socket.h"
#include "agent/vm/vfio.h"
#include "agent/vm/virtiofsd.h"
#include "common/files.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kGuestDir = "guest";
// What QEMU makes lies in a directory of the run's of its own, QEMU's (its user's when it runs as
// one): the run's other files (its pid and exit records among them) stay the agent's alone.
constexpr std::string_view kQemuDir = "qemu";
constexpr std::string_view kConsoleLog = "qemu/console.log";
constexpr std::string_view kPidFile = "qemu/qemu.pid";
constexpr std::string_view kQmpSocket = "qemu/qmp.sock";
constexpr std::string_view kGuestAgentSocket = "qemu/qga.sock";
constexpr std::string_view kQemuLog = "qemu.log";  // QEMU's own output: why it did not start
constexpr std::string_view kPassthroughFile = "passthrough";
constexpr std::string_view kGpusFile = "gpus";
constexpr std::string_view kPasstSocket = "qemu/net.sock";  // passt makes it as QEMU's user
constexpr std::string_view kPasstLog = "passt.log";
constexpr std::string_view kVirtiofsdLog = "virtiofsd.log";
constexpr std::string_view kSeedDir = "seed";
constexpr std::string_view kSshPortFile = "ssh_port";
constexpr int kGuestSshPort = 22;
// The instances' root disks on a cloud image, beside vms/ (whose entries are runs).
constexpr std::string_view kDisksDir = "vm-disks";
// The user cloud-init creates in a cloud image's VM, with the spec's SSH keys.
constexpr std::string_view kCloudUser = "gpurent";
// A run's shared folders are its own files (guest/) and the instance's directory, then its volumes.
constexpr size_t kRunShares = 2;
// Where the guest mounts the run's guest/ directory (the kernel's gpurent.shares).
constexpr std::string_view kGuestRunDir = "/run/gpurent";
// sockaddr_un's sun_path, with its terminating NUL.
constexpr size_t kMaxSocketPath = sizeof(sockaddr_un::sun_path);
constexpr std::string_view kExitMarker = "GPURENT_EXIT ";
// A VM stopped before its command printed its status ended by SIGTERM to QEMU, as a process would.
constexpr int kStoppedExitCode = 128 + SIGTERM;

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A disk's virtual size in bytes, as qemu-img reads it; nullopt when it cannot.
std::optional<int64_t> disk_virtual_size(const std::string& qemu_img, const fs::path& disk) {
  const auto ran = run_tool({.argv = {qemu_img, "info", "--output=json", disk.string()},
                             .timeout = std::chrono::seconds(30),
                             .with_stderr = false});
  if (!ran) return std::nullopt;
  const auto info = Json::parse(ran->output, nullptr, /*allow_exceptions=*/false);
  const auto size = info.is_object() ? info.find("virtual-size") : info.end();
  if (size == info.end() || !size->is_number_integer()) return std::nullopt;
  return size->get<int64_t>();
}

// A cloud image's instance's root disk (its name: a valid instance id, runtime.h).
fs::path root_disk_path(const fs::path& data_dir, std::string_view instance_id) {
  return data_dir / kDisksDir / fmt::format("{}.qcow2", instance_id);
}

// The tag of the run's i-th volume.
std::string volume_tag(size_t i) { return fmt::format("vol{}", i); }

// A file of QEMU's in the run's directory `dir`: in qemu/, or beside the run's other files for a
// run that an agent from before qemu/ started.
fs::path qemu_file(const fs::path& dir, std::string_view file) {
  std::error_code ec;
  const fs::path path = dir / file;
  return fs::is_directory(dir / kQemuDir, ec) ? path : dir / path.filename();
}

// The socket of the virtiofsd serving the run's i-th shared folder (virtio-fs).
std::string virtiofs_socket(size_t i) { return fmt::format("fs{}.sock", i); }

// Ends the run's helpers that no QEMU reached (passt, the virtiofsds: a start that failed or was
// cut short); those it reached end with it.
void hang_up_helpers(const fs::path& dir) {
  hang_up(dir / kPasstSocket);
  hang_up(dir / fs::path(kPasstSocket).filename());  // where agents before this one put it
  for (size_t i = 0;; ++i) {
    const fs::path socket = dir / virtiofs_socket(i);
    std::error_code ec;
    if (!fs::is_socket(socket, ec)) break;
    hang_up(socket);
  }
}

// Gives QEMU's user what root made and QEMU opens: a virtiofsd's socket (to connect, QEMU's user
// must own it), the root disk, a GPU's /dev/vfio node.
Status give_to_qemu_user(const fs::path& path, const RunAs& user) {
  if (::chown(path.c_str(), user.uid, user.gid) != 0) {
    return fail(
        {ErrorKind::kInternal, "vm_start_failed",
         fmt::format("cannot give {} to QEMU's user: {}", path.string(), std::strerror(errno))});
  }
  return {};
}

// The /dev/vfio node of a GPU's IOMMU group, which QEMU opens to drive it.
fs::path vfio_group_node(const fs::path& dev, const PassthroughPlan& plan) {
  return dev / "vfio" / std::to_string(plan.iommu_group);
}

// A confined QEMU's user owns the root disk between runs, its qcow2 header too. Before the agent
// (root) runs qemu-img on it, the header must still be the one the agent made: the image as its
// backing file and no external data file. A header rewritten from inside could otherwise name any
// file of the node for root to open, or to truncate when the disk is grown.
Status check_disk_header(const fs::path& disk, const fs::path& image) {
  const auto changed = [&](std::string_view what) {
    return fail({ErrorKind::kInternal, "vm_start_failed",
                 fmt::format("the root disk {} was changed from inside its VM ({}): the agent "
                             "will not use it; delete the instance's disk, or restore it",
                             disk.string(), what)});
  };
  GPURENT_TRY(fd, open_untrusted_file(disk));
  std::string head(64 << 10, '\0');
  const ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  head.resize(got > 0 ? static_cast<size_t>(got) : 0);
  const auto big_endian = [&](size_t at, size_t bytes) {
    uint64_t value = 0;
    for (size_t i = 0; i < bytes; ++i) value = value << 8 | static_cast<uint8_t>(head[at + i]);
    return value;
  };
  if (head.size() < 104 || head.compare(0, 4, "QFI\xfb") != 0) return changed("not qcow2");
  const uint64_t version = big_endian(4, 4);
  // Incompatible feature bit 2: the data lives in an external file the header names.
  if (version >= 3 && (big_endian(72, 8) & 0x4) != 0) return changed("an external data file");
  const uint64_t offset = big_endian(8, 8);
  const uint64_t size = big_endian(16, 4);
  if (offset > head.size() || size > head.size() - offset ||
      head.compare(offset, size, image.string()) != 0 || size != image.string().size()) {
    return changed("another backing file");
  }
  return {};
}

// The topmost directory above `path` (absolute) that others may not pass: QEMU's user could not
// reach the path through it.
std::optional<fs::path> closed_above(const fs::path& path) {
  fs::path above;
  for (const auto& part : path.parent_path()) {
    above /= part;
    struct stat st {};
    if (above != above.root_path() && ::stat(above.c_str(), &st) == 0 &&
        (st.st_mode & S_IXOTH) == 0) {
      return above;
    }
  }
  return std::nullopt;
}

// What a confined QEMU's mount namespace covers, each with what it reveals of it: the agent's data
// directory (or the directory above it that others may not pass) with the paths QEMU opens there,
// and any other directory that others may not pass above a path QEMU opens (the guest image's).
// The covers are disjoint: each is the topmost closed directory above its paths, or the data
// directory below all open ones.
std::vector<CoveredDirectory> qemu_covers(const fs::path& data_dir,
                                          const std::vector<fs::path>& opened) {
  const fs::path data = fs::absolute(data_dir).lexically_normal();
  std::map<fs::path, std::vector<fs::path>> covers{{closed_above(data).value_or(data), {}}};
  for (const auto& path : opened) {
    if (path.empty()) continue;
    const fs::path absolute = fs::absolute(path).lexically_normal();
    const auto cover = std::ranges::find_if(
        covers, [&](const auto& entry) { return lies_below(absolute, entry.first); });
    if (cover != covers.end()) {
      cover->second.push_back(absolute);
    } else if (const auto closed = closed_above(absolute)) {
      covers[*closed].push_back(absolute);
    }
  }
  std::vector<CoveredDirectory> out;
  for (auto& [directory, reveal] : covers) out.push_back({directory, std::move(reveal)});
  return out;
}

// The guest's shell command that mounts the shared folder `tag` at `path` (both shell words).
std::string guest_mount(VmShares shares, std::string_view tag, std::string_view path) {
  return shares == VmShares::kVirtioFs
             ? fmt::format("mount -t virtiofs {} {}", tag, path)
             : fmt::format("mount -t 9p -o trans=virtio,version=9p2000.L {} {}", tag, path);
}

// The UUIDs of a run's GPUs, as start() recorded them (none for a run without GPUs).
std::vector<std::string> recorded_gpus(const fs::path& dir) {
  std::vector<std::string> gpus;
  const auto record = read_file(dir / kGpusFile, 64 << 10);
  if (!record) return gpus;
  std::istringstream lines(*record);
  for (std::string uuid; std::getline(lines, uuid);) {
    if (!uuid.empty()) gpus.push_back(std::move(uuid));
  }
  return gpus;
}

// The platform's environment, exported: sourced by the command and by every exec.
std::string env_script(const model::WorkloadSpec& spec,
                       const std::vector<PreparedVolume>& volumes) {
  auto env = platform_env(spec);
  env.try_emplace("HOME", "/workspace");
  env.try_emplace("PATH", kGuestPath);
  env.insert_or_assign("GPURENT_VOLUMES", volumes_env(volumes, [](const PreparedVolume& v) {
                         return v.mount.mount_path;
                       }));
  std::string script;
  for (const auto& [name, value] : env) {
    script += fmt::format("export {}={}\n", name, shell_quote(value));
  }
  return script;
}

// What the guest's /init runs: the environment, the volumes mounted at their paths, the
// instance's directory, the command.
std::string command_script(const model::WorkloadSpec& spec,
                           const std::vector<PreparedVolume>& volumes, VmShares shares) {
  std::string script = fmt::format(". {}/env.sh\n", kGuestRunDir);
  if (!spec.gpus.empty()) script += guest_gpu_reporter_script(kGuestRunDir);
  for (size_t i = 0; i < volumes.size(); ++i) {
    const std::string path = shell_quote(volumes[i].mount.mount_path);
    script += fmt::format(
        "mkdir -p {0} && {1} || "
        "{{ echo \"cannot mount volume {2} at \"{0} >&2; exit 125; }}\n",
        path, guest_mount(shares, volume_tag(i), path), volumes[i].mount.volume_id);
  }
  script += "cd /workspace\nexec";
  for (const auto& arg : spec.command) script += " " + shell_quote(arg);
  return script + "\n";
}

// What a cloud image's guest runs each boot (cloud-init's per-boot scripts, written by the seed):
// the run's shares mounted, command.sh with its output on the console, the status after it, and
// the power off that ends the run.
std::string per_boot_script(VmShares shares) {
  return fmt::format(R"sh(#!/bin/sh
# gpurent's VM runtime: the run's command, at every boot (docs/vm-runtime.md).
share() {{ mkdir -p "$2" && {}; }}
if share gpurent /run/gpurent && share workspace /workspace; then
  # The user who logs in with SSH works there too (the command runs as root).
  if id gpurent >/dev/null 2>&1; then chown gpurent:gpurent /workspace; fi
  sh /run/gpurent/command.sh </dev/null >/dev/ttyS0 2>&1
  code=$?
else
  echo "gpurent: the run's folders cannot be mounted ({})" >/dev/ttyS0
  code=125
fi
echo "GPURENT_EXIT $code" >/dev/ttyS0
poweroff
)sh",
                     guest_mount(shares, "\"$1\"", "\"$2\""),
                     shares == VmShares::kVirtioFs
                         ? "a guest kernel without virtio-fs?"
                         : "a guest kernel without virtio-9p? the agent's --vm-shares virtiofs "
                           "serves those");
}

// cloud-init's NoCloud seed for a cloud image's run, written into seed_dir: JSON, which YAML reads
// as it is, so that nothing in a key can become configuration.
Status write_cloud_init_seed(const model::WorkloadSpec& spec, VmShares shares,
                             const fs::path& seed_dir) {
  const Json meta = {{"instance-id", spec.instance_id}, {"local-hostname", spec.instance_id}};
  const Json user = {
      {"users", Json::array({{{"name", kCloudUser},
                              {"shell", "/bin/bash"},
                              {"sudo", "ALL=(ALL) NOPASSWD:ALL"},
                              {"lock_passwd", true},
                              {"ssh_authorized_keys", spec.ssh_keys}}})},
      {"ssh_pwauth", false},
      {"write_files", Json::array({{{"path", "/var/lib/cloud/scripts/per-boot/gpurent.sh"},
                                    {"permissions", "0755"},
                                    {"content", per_boot_script(shares)}}})}};
  std::error_code ec;
  fs::create_directories(seed_dir, ec);
  if (ec) {
    return fail({ErrorKind::kInternal, "vm_start_failed",
                 fmt::format("cannot create the VM's cloud-init seed: {}", ec.message())});
  }
  GPURENT_CHECK(write_file_atomic(seed_dir / "meta-data", meta.dump() + "\n"));
  return write_file_atomic(seed_dir / "user-data", "#cloud-config\n" + user.dump() + "\n");
}

// The status the guest printed last on its console; none when it printed none.
std::optional<int> printed_exit_code(const fs::path& console) {
  // In QEMU's directory, which a confined QEMU's user controls.
  const auto text = read_untrusted_file(console, 64 << 20);
  if (!text) return std::nullopt;
  const size_t at = text->rfind(kExitMarker);
  if (at == std::string::npos) return std::nullopt;
  const char* begin = text->data() + at + kExitMarker.size();
  int code = 0;
  const auto [end, ec] = std::from_chars(begin, text->data() + text->size(), code);
  if (ec != std::errc() || end == begin) return std::nullopt;
  return code;
}

std::optional<WorkloadKey> key_of(const fs::path& dir) {
  const std::string name = dir.filename().string();
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  int64_t run = 0;
  const auto [end, ec] = std::from_chars(name.data() + dot + 1, name.data() + name.size(), run);
  if (ec != std::errc() || end != name.data() + name.size() || run <= 0) return std::nullopt;
  return WorkloadKey{name.substr(0, dot), run};
}

}  // namespace

Result<std::unique_ptr<VmRuntime>> VmRuntime::open(VmRuntimeOptions options) {
  if (options.shares == VmShares::kVirtioFs && !options.users) {
    return fail(Error::internal("VMs' folders over virtio-fs need the node's guest ids"));
  }
  if (options.users) {
    // A confined QEMU opens the image as the instance's user (it passes the directories above
    // whatever their modes: qemu_covers).
    for (const auto& image : {options.kernel, options.initrd, options.cloud_image}) {
      struct stat st {};
      if (!image.empty() && ::stat(image.c_str(), &st) == 0 && (st.st_mode & S_IROTH) == 0) {
        return fail(Error::unprocessable(
            "vm_runtime_unavailable",
            fmt::format("QEMU runs as each instance's user, who may not read the guest image {}: "
                        "make it readable by the node's users (chmod o+r)",
                        image.string())));
      }
    }
  }
  std::error_code ec;
  fs::create_directories(options.data_dir / "vms", ec);
  if (!ec) fs::create_directories(options.instances_dir, ec);
  if (ec) {
    return fail({ErrorKind::kInternal, "vm_runtime_unavailable",
                 fmt::format("cannot create the VM runtime's directories: {}", ec.message())});
  }
  std::unique_ptr<VmRuntime> runtime(new VmRuntime(std::move(options)));
  for (const auto& entry : fs::directory_iterator(runtime->options_.data_dir / "vms", ec)) {
    if (entry.is_directory()) runtime->adopt(entry.path());
  }
  runtime->poll();
  return runtime;
}

fs::path vm_run_dir(const fs::path& data_dir, const WorkloadKey& key) {
  return data_dir / "vms" / fmt::format("{}.{}", key.instance_id, key.run);
}

fs::path vm_guest_agent_socket(const fs::path& data_dir, const WorkloadKey& key) {
  return qemu_file(vm_run_dir(data_dir, key), kGuestAgentSocket);
}

std::optional<uint16_t> vm_ssh_port(const fs::path& data_dir, const WorkloadKey& key) {
  const auto text = read_file(vm_run_dir(data_dir, key) / kSshPortFile, 16);
  if (!text) return std::nullopt;
  uint16_t port = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), port);
  if (ec != std::errc() || end != text->data() + text->size() || port == 0) return std::nullopt;
  return port;
}

std::vector<std::string> vm_exec_argv(const std::vector<std::string>& command) {
  std::vector<std::string> argv = {
      "/bin/sh", "-c",
      // A cloud image's qemu-ga answers before its per-boot script has mounted the run's files.
      fmt::format("[ -r {0}/env.sh ] || {{ echo 'gpurent: the VM is still booting (its run is not "
                  "set up yet); try again in a moment' >&2; exit 125; }}; . {0}/env.sh && cd "
                  "/workspace && exec \"$@\"",
                  kGuestRunDir),
      "gpurent-exec"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

fs::path VmRuntime::run_dir(const WorkloadKey& key) const {
  return vm_run_dir(options_.data_dir, key);
}

fs::path VmRuntime::instance_dir(std::string_view instance_id) const {
  return options_.instances_dir / instance_id;
}

Status VmRuntime::remove_instance(std::string_view instance_id) {
  GPURENT_CHECK(Runtime::remove_instance(instance_id));
  const fs::path disk = root_disk_path(options_.data_dir, instance_id);
  std::error_code ec;
  fs::remove(disk.string() + ".new", ec);
  fs::remove(disk, ec);
  if (ec) {
    return fail(Error::internal(
        fmt::format("cannot delete the root disk of {}: {}", instance_id, ec.message())));
  }
  return {};
}

Result<fs::path> VmRuntime::root_disk(std::string_view instance_id, int disk_gb) {
  fs::path disk = root_disk_path(options_.data_dir, instance_id);
  std::error_code ec;
  if (!fs::exists(disk, ec)) {
    fs::create_directories(disk.parent_path(), ec);
    const fs::path made = disk.string() + ".new";
    fs::remove(made, ec);
    const auto ran =
        run_tool({.argv = {options_.qemu_img, "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
                           options_.cloud_image.string(), made.string()},
                  .timeout = std::chrono::seconds(60)});
    if (!fs::exists(made, ec)) {
      return fail({ErrorKind::kInternal, "vm_start_failed",
                   ran ? fmt::format("the VM's root disk cannot be made: {}", ran->output)
                       : std::string("qemu-img cannot be run (is qemu-utils installed?)")});
    }
    fs::rename(made, disk, ec);
    if (ec) {
      return fail({ErrorKind::kInternal, "vm_start_failed",
                   fmt::format("the VM's root disk cannot be kept: {}", ec.message())});
    }
  }
  if (disk_gb <= 0) return disk;
  GPURENT_CHECK(check_disk_header(disk, options_.cloud_image));
  // Grown (never shrunk) at every start rather than once, so a start cut short after the disk was
  // made still gets its size; the guest's cloud-init grows the root partition and filesystem
  // into it (growpart, resize_rootfs) as it boots.
  const int64_t wanted = int64_t{disk_gb} << 30;
  const auto size = disk_virtual_size(options_.qemu_img, disk);
  if (size && *size >= wanted) return disk;
  const auto ran = run_tool(
      {.argv = {options_.qemu_img, "resize", "-q", disk.string(), fmt::format("{}G", disk_gb)},
       .timeout = std::chrono::seconds(60)});
  if (const auto grown = disk_virtual_size(options_.qemu_img, disk); !grown || *grown < wanted) {
    return fail({ErrorKind::kInternal, "vm_start_failed",
                 fmt::format("the VM's root disk cannot be grown to {} GB: {}", disk_gb,
                             ran ? ran->output : std::string("qemu-img cannot be run"))});
  }
  return disk;
}

Result<std::optional<RunAs>> VmRuntime::qemu_user_of(const model::WorkloadSpec& spec) const {
  if (!options_.users) return std::optional<RunAs>();
  GPURENT_TRY(uid, options_.users->uid_of_instance(spec.instance_id));
  GPURENT_TRY(gid, options_.users->gid_of_tenant(id_owner(spec)));
  RunAs user{.uid = uid, .gid = gid, .groups = {gid}};
  struct stat kvm {};
  if (options_.accelerator == VmAccelerator::kKvm &&
      ::stat((options_.dev / "kvm").c_str(), &kvm) == 0) {
    user.groups.push_back(kvm.st_gid);  // /dev/kvm is root's and its group's (kvm)
  }
  return std::optional<RunAs>(std::move(user));
}

Status VmRuntime::give_to_qemu(const VmMachine& machine, const RunAs& user) const {
  if (!machine.root_disk.empty()) GPURENT_CHECK(give_to_qemu_user(machine.root_disk, user));
  if (!machine.seed.empty()) GPURENT_CHECK(chown_tree(machine.seed, user.uid, user.gid));
  if (options_.shares == VmShares::k9p) {
    // QEMU serves them itself, with the guest's owners and modes in xattrs: the run's own folders
    // are its user's, the volumes stay the tenant's group's, which the tenant's other runs use.
    for (size_t i = 0; i < machine.shares.size(); ++i) {
      const auto& folder = machine.shares[i].directory;
      GPURENT_CHECK(i < kRunShares ? give_folder(folder, user.uid, user.gid)
                                   : share_volume_with_group(folder, user.gid));
    }
  }
  return {};
}

Result<VmRuntime::Launched> VmRuntime::launch_qemu(const VmMachine& machine, const fs::path& dir,
                                                   const std::optional<RunAs>& user) const {
  auto argv = qemu_command(machine);
  argv.front() = options_.qemu;
  // What it makes over 9p is its group's too (qemu_command.h's fmode and dmode).
  // And none of the agent's environment (its join token): QEMU needs none.
  DetachedRun launch{.argv = std::move(argv),
                     .log = dir / kQemuLog,
                     .umask = 007,
                     .environment = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}};
  if (user) {
    // Of the agent's data directory (the node's credential, other runs' records) QEMU reaches
    // only what it opens: its own directory, and the run's files it is given.
    launch.run_as = *user;
    // (passt's socket lies in qemu/.)
    std::vector<fs::path> opened = {dir / kQemuDir,       machine.root_disk, machine.seed,
                                    options_.cloud_image, machine.kernel,    machine.initrd};
    for (const auto& share : machine.shares) {
      opened.push_back(options_.shares == VmShares::k9p ? share.directory : share.socket);
    }
    launch.covers = qemu_covers(options_.data_dir, opened);
    // VFIO pins all of the guest's memory; QEMU's own mappings of a GPU's BARs and ROM come on
    // top (libvirt's rule: the memory and 1 GiB).
    if (!machine.vfio_functions.empty()) {
      launch.memlock_bytes = (uint64_t(machine.memory_mb) + 1024) << 20;
    }
  }
  const auto pid = spawn_detached(launch);
  if (!pid) {
    return fail({ErrorKind::kInternal, "vm_start_failed",
                 fmt::format("QEMU cannot be started: {}", pid.error().message)});
  }
  // Its start time, so that it is never mistaken for a process that reused its pid (it is init's
  // child: it may end and be reaped at any time).
  const auto started = read_proc_stat(*pid);
  const auto ours = [&] { return started && still_running(*pid, started->start_time); };
  // Ready once its monitor answers: QEMU has made the machine and its devices (the GPUs among
  // them) and runs its main loop, which is what -daemonize would have waited for.
  const auto deadline = std::chrono::steady_clock::now() + options_.boot_timeout;
  const fs::path monitor = dir / kQmpSocket;
  while (ours() && std::chrono::steady_clock::now() < deadline) {
    if (monitor_command(monitor, "query-status")) {
      return Launched{.pid = *pid, .start_time = started->start_time};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool timed_out = ours();
  if (timed_out) ::kill(*pid, SIGKILL);
  const std::string said = read_file(dir / kQemuLog, 16 << 10).value_or("");
  return fail({ErrorKind::kInternal, "vm_start_failed",
               timed_out ? fmt::format("QEMU did not make the VM within {} ms: {}",
                                       options_.boot_timeout.count(), said)
                         : fmt::format("QEMU did not start the VM: {}", said)});
}

Status VmRuntime::start(const model::WorkloadSpec& spec) {
  GPURENT_CHECK(validate_workload(spec));
  const WorkloadKey key{spec.instance_id, spec.run};
  GPURENT_CHECK(admit_workload(key, entries_.contains(key), entries_.size()));
  const fs::path dir = run_dir(key);
  const bool virtio_fs = options_.shares == VmShares::kVirtioFs;
  // Longer than any fs<i>.sock.
  const fs::path longest_socket = dir / kQmpSocket;
  if (const size_t length = longest_socket.string().size(); length >= kMaxSocketPath) {
    return fail(Error::unprocessable(
        "vm_start_failed",
        fmt::format("the VM's socket {} is {} bytes long, over a unix socket's {}: give the agent "
                    "a shorter --data-dir",
                    longest_socket.string(), length, kMaxSocketPath - 1)));
  }
  uint32_t guest_ids = 0;
  if (virtio_fs) {
    GPURENT_TRY(given, options_.users->guest_ids_of_tenant(id_owner(spec)));
    guest_ids = given;
  }
  GPURENT_TRY(qemu_user, qemu_user_of(spec));
  const fs::path home = instance_dir(spec.instance_id);
  std::error_code ec;
  fs::create_directories(dir / kGuestDir, ec);
  if (!ec) fs::create_directories(dir / kQemuDir, ec);
  if (!ec) fs::create_directories(home, ec);
  // Its owner's alone (the agent's, QEMU's user's or the guests'): a sandboxed process run of
  // another tenant on the node must not read a VM's disk.
  if (!ec) fs::permissions(home, fs::perms::owner_all, ec);
  if (!ec && qemu_user && ::chown((dir / kQemuDir).c_str(), qemu_user->uid, qemu_user->gid) != 0) {
    ec.assign(errno, std::generic_category());
  }
  if (ec) {
    return fail({ErrorKind::kInternal, "vm_start_failed",
                 fmt::format("cannot create the VM's directories: {}", ec.message())});
  }
  const auto cleanup = [&] {
    hang_up_helpers(dir);
    give_back(dir);
    fs::remove_all(dir, ec);
  };
  if (!spec.workdir.empty()) {
    if (auto unpacked = unpack_workdir(options_.data_dir, spec.instance_id, spec.workdir, home, {});
        !unpacked) {
      cleanup();
      return unpacked;
    }
  }
  auto volumes = prepare_volumes(options_.data_dir, spec);
  if (!volumes) {
    cleanup();
    return fail(volumes.error());
  }
  std::vector<std::string> vfio_functions;
  if (!spec.gpus.empty() && !options_.simulated_gpus) {
    auto passed = pass_through(spec.gpus, dir, qemu_user);
    if (!passed) {
      cleanup();
      return fail(passed.error());
    }
    vfio_functions = std::move(*passed);
  }
  for (const auto& [name, text] :
       {std::pair{"env.sh", env_script(spec, *volumes)},
        std::pair{"command.sh", command_script(spec, *volumes, options_.shares)}}) {
    if (auto written = write_file_atomic(dir / kGuestDir / name, text); !written) {
      cleanup();
      return written;
    }
  }
  // Outside the guest's folder: the GPUs whose reports count are the host's to say.
  if (auto written =
          write_file_atomic(dir / kGpusFile, fmt::format("{}", fmt::join(spec.gpus, "\n")));
      !written) {
    cleanup();
    return written;
  }
  VmMachine machine{
      .name = fmt::format("{}.{}", key.instance_id, key.run),
      .accelerator = options_.accelerator,
      .vcpus = std::max(1, spec.cpu),
      .memory_mb = spec.memory_gb > 0 ? spec.memory_gb * 1024 : options_.default_memory_mb,
      // kRunShares of them; the volumes follow.
      .shares = {{.tag = "gpurent", .directory = dir / kGuestDir},
                 {.tag = "workspace", .directory = home}},
      .serial_log = dir / kConsoleLog,
      .qmp_socket = dir / kQmpSocket,
      .guest_agent_socket = dir / kGuestAgentSocket,
      .pid_file = dir / kPidFile};
  if (!options_.kernel.empty()) {
    machine.kernel = options_.kernel;
    machine.initrd = options_.initrd;
    machine.kernel_args = fmt::format(
        "console=ttyS0 quiet panic=-1 gpurent.sharefs={} "
        "gpurent.shares=gpurent:{},workspace:/workspace",
        guest_fs_type(options_.shares), kGuestRunDir);
  } else {
    auto disk = root_disk(spec.instance_id, spec.disk_gb);
    if (!disk) {
      cleanup();
      return fail(disk.error());
    }
    if (auto seeded = write_cloud_init_seed(spec, options_.shares, dir / kSeedDir); !seeded) {
      cleanup();
      return seeded;
    }
    machine.root_disk = std::move(*disk);
    machine.seed = dir / kSeedDir;
    // The guest's sshd, reached from the node's loopback (the node API tunnels to it).
    const auto services = service_ports(spec.env);
    auto ssh_port = free_loopback_port({services.begin(), services.end()});
    auto recorded = ssh_port ? write_file_atomic(dir / kSshPortFile, std::to_string(*ssh_port))
                             : Status(fail(ssh_port.error()));
    if (!recorded) {
      cleanup();
      return recorded;
    }
    machine.forwards.push_back({.host_port = *ssh_port, .guest_port = kGuestSshPort});
  }
  for (size_t i = 0; i < volumes->size(); ++i) {
    machine.shares.push_back({.tag = volume_tag(i), .directory = (*volumes)[i].dir});
  }
  if (qemu_user) {
    // QEMU's user reads the guest's image and serves (over 9p) the shared folders.
    if (auto given = give_to_qemu(machine, *qemu_user); !given) {
      cleanup();
      return given;
    }
  }
  if (virtio_fs) {
    machine.share_transport = VmShares::kVirtioFs;
    for (size_t i = 0; i < machine.shares.size(); ++i) {
      machine.shares[i].socket = dir / virtiofs_socket(i);
      const VirtiofsShare share{.binary = options_.virtiofsd,
                                .socket = machine.shares[i].socket,
                                .directory = machine.shares[i].directory,
                                .log = dir / kVirtiofsdLog,
                                .guest_ids = guest_ids};
      auto started = give_folder(share.directory, share.guest_ids, share.guest_ids);
      if (started) started = start_virtiofsd(share);
      if (started && qemu_user) started = give_to_qemu_user(share.socket, *qemu_user);
      if (!started) {
        cleanup();
        return started;
      }
    }
  }
  for (const uint16_t port : service_ports(spec.env)) {
    machine.forwards.push_back({.host_port = port, .guest_port = port});
  }
  if (options_.network == VmNetwork::kOutbound) {
    // It parses what the guest sends: beside a confined QEMU it is no more than QEMU, whose user
    // it runs as, and reaches only QEMU's directory of the data directory (passt.h).
    PasstNetwork network{.binary = options_.passt,
                         .socket = dir / kPasstSocket,
                         .log = dir / kPasstLog,
                         .forwards = machine.forwards,
                         .run_as = qemu_user ? std::optional<RunAs>(RunAs{
                                                   .uid = qemu_user->uid,
                                                   .gid = qemu_user->gid,
                                                   .groups = {qemu_user->gid}})  // not /dev/kvm's
                                             : std::nullopt,
                         .uid = ::geteuid(),
                         .gid = ::getegid(),
                         .nameservers = guest_nameservers()};
    if (qemu_user) network.covers = qemu_covers(options_.data_dir, {dir / kQemuDir});
    auto started = start_passt(network);
    if (!started) {
      cleanup();
      return started;
    }
    machine.passt_socket = network.socket;
  }
  machine.vfio_functions = std::move(vfio_functions);
  auto launched = launch_qemu(machine, dir, qemu_user);
  if (!launched) {
    cleanup();
    return fail(launched.error());
  }
  if (auto recorded =
          write_shim_state(dir, {.pid = launched->pid, .start_time = launched->start_time});
      !recorded) {
    ::kill(launched->pid, SIGKILL);
    cleanup();
    return recorded;
  }
  entries_[key] = Entry{
      .info = {.key = key, .phase = model::WorkloadPhase::kRunning, .log_path = dir / kConsoleLog},
      .dir = dir,
      .pid = launched->pid,
      .start_time = launched->start_time,
      .gpus = spec.gpus};
  return {};
}

void VmRuntime::adopt(const fs::path& dir) {
  const auto key = key_of(dir);
  if (!key) return;
  Entry entry{.info = {.key = *key, .log_path = qemu_file(dir, kConsoleLog)}, .dir = dir};
  if (auto ended = read_exit_record(dir)) {
    give_back(dir);  // left over when a GPU could not be given back before
    entry.info.phase = model::WorkloadPhase::kExited;
    entry.info.exit_code = ended->exit_code;
    entry.info.message = ended->message;
  } else if (auto state = read_shim_state(dir)) {
    entry.info.phase = model::WorkloadPhase::kRunning;
    entry.pid = state->pid;
    entry.start_time = state->start_time;
    entry.gpus = recorded_gpus(dir);
  } else {
    // Cut short inside start() before QEMU was recorded: it never ran; the reconciler starts it
    // again if it is still wanted.
    hang_up_helpers(dir);
    std::error_code ec;
    fs::remove_all(dir, ec);
    return;
  }
  spdlog::info("workload_adopted instance={} run={} qemu_pid={} phase={}", key->instance_id,
               key->run, entry.pid, model::to_string(entry.info.phase));
  entries_[*key] = std::move(entry);
}

bool VmRuntime::alive(Entry& entry) {
  if (entry.pid <= 0) return false;
  if (still_running(entry.pid, entry.start_time)) return true;
  if (const auto stat = read_proc_stat(entry.pid); stat && stat->start_time == entry.start_time) {
    // Our QEMU, ended: it was left to init (spawn_detached), so it is the agent's child only
    // where the agent reaps orphans; reaped here then. A pid whose start time differs is someone
    // else's (reused): its status is not ours to take.
    int status = 0;
    ::waitpid(entry.pid, &status, WNOHANG);
  }
  entry.pid = 0;  // never signal a pid that may have been reused
  return false;
}

Result<std::vector<std::string>> VmRuntime::pass_through(const std::vector<std::string>& uuids,
                                                         const fs::path& dir,
                                                         const std::optional<RunAs>& qemu_user) {
  std::vector<PassthroughPlan> plans;
  for (const auto& uuid : uuids) {
    const auto gpu = std::ranges::find(options_.gpus, uuid, &model::Gpu::uuid);
    if (gpu == options_.gpus.end() || gpu->pci_address.empty()) {
      return fail(Error::unprocessable(
          "gpu_passthrough_unavailable",
          fmt::format("GPU {} is not one of this node's GPUs with a PCI address", uuid)));
    }
    GPURENT_TRY(plan, plan_passthrough(options_.sysfs, gpu->pci_address));
    plans.push_back(std::move(plan));
  }
  std::string record;
  for (const auto& plan : plans) record += plan.gpu + "\n";
  GPURENT_CHECK(write_file_atomic(dir / kPassthroughFile, record));
  std::vector<std::string> functions;
  for (const auto& plan : plans) {
    GPURENT_CHECK(bind_to_vfio(options_.sysfs, plan));
    if (qemu_user)
      GPURENT_CHECK(give_to_qemu_user(vfio_group_node(options_.dev, plan), *qemu_user));
    for (auto& function : plan.to_bind()) functions.push_back(std::move(function));
  }
  return functions;
}

void VmRuntime::guest_gpu_samples(int64_t time_ms, std::vector<model::GpuSample>& out) {
  for (auto& [key, entry] : entries_) {
    if (entry.pid == 0 || entry.gpus.empty()) continue;
    auto report =
        read_guest_gpu_report(entry.dir / kGuestDir / kGuestGpuReportFile, entry.reported);
    if (!report) continue;
    entry.reported = report->modified;
    for (auto& sample : parse_guest_gpu_report(report->text, entry.gpus, time_ms)) {
      out.push_back(std::move(sample));
    }
  }
}

void VmRuntime::give_back(const fs::path& dir) {
  const auto record = read_file(dir / kPassthroughFile, 64 << 10);
  if (!record) return;
  bool all_back = true;
  std::istringstream lines(*record);
  for (std::string gpu; std::getline(lines, gpu);) {
    auto plan = plan_passthrough(options_.sysfs, gpu);
    if (plan) {
      // Root's again, as the kernel made it, in case it stays: unbinding removes it.
      const fs::path node = vfio_group_node(options_.dev, *plan);
      if (::chown(node.c_str(), 0, 0) != 0 && errno != ENOENT) {
        spdlog::warn("vm_vfio_node_kept node={} error=\"{}\"", node.string(), std::strerror(errno));
      }
    }
    auto given = plan ? give_back_to_host(options_.sysfs, *plan) : Status(fail(plan.error()));
    if (!given) {
      all_back = false;
      spdlog::error("vm_gpu_not_given_back gpu={} run_dir={} error=\"{}\"", gpu, dir.string(),
                    given.error().message);
    }
  }
  // Kept when a GPU stayed on vfio-pci: the next runtime to open the directory tries again.
  std::error_code ec;
  if (all_back) fs::remove(dir / kPassthroughFile, ec);
}

void VmRuntime::finish(Entry& entry) {
  // passt and the virtiofsds end with the QEMU they served; one that QEMU never reached would wait
  // for it for good.
  hang_up_helpers(entry.dir);
  give_back(entry.dir);
  ExitRecord record;
  if (const auto code = printed_exit_code(entry.info.log_path)) {
    record.exit_code = *code;
  } else {
    record.exit_code = entry.info.stop_requested ? kStoppedExitCode : kKilledExitCode;
    record.message =
        entry.info.stop_requested ? "stopped" : "the VM ended without its command's status";
  }
  // Without the record, an agent that restarts derives the same status from the console again.
  if (auto written = write_exit_record(entry.dir, record); !written) {
    spdlog::warn("VM {}.{}: its exit record was not written: {}", entry.info.key.instance_id,
                 entry.info.key.run, written.error().message);
  }
  entry.info.phase = model::WorkloadPhase::kExited;
  entry.info.exit_code = record.exit_code;
  entry.info.message = record.message;
  entry.kill_at.reset();
}

void VmRuntime::stop(const WorkloadKey& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end() || it->second.info.phase == model::WorkloadPhase::kExited) return;
  Entry& entry = it->second;
  if (entry.info.stop_requested) return;
  entry.info.stop_requested = true;
  if (!alive(entry)) return;
  // A cloud image's guest shuts down when its power button is pressed, leaving its root disk
  // clean; QEMU is signalled when that cannot be asked, and killed if the guest takes too long.
  std::error_code ec;
  if (!fs::exists(entry.dir / kSeedDir, ec) ||
      !monitor_command(qemu_file(entry.dir, kQmpSocket), "system_powerdown")) {
    ::kill(entry.pid, SIGTERM);
  }
  entry.kill_at = std::chrono::steady_clock::now() + options_.stop_grace;
}

void VmRuntime::poll() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [key, entry] : entries_) {
    if (entry.info.phase == model::WorkloadPhase::kExited) continue;
    if (!alive(entry)) {
      finish(entry);
    } else if (entry.kill_at && now >= *entry.kill_at) {
      ::kill(entry.pid, SIGKILL);
    }
  }
}

Status VmRuntime::forget(const WorkloadKey& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  if (it->second.info.phase != model::WorkloadPhase::kExited) {
    return fail(Error::conflict("workload_running",
                                fmt::format("{}.{} is still running", key.instance_id, key.run)));
  }
  std::error_code ec;
  fs::remove_all(it->second.dir, ec);
  entries_.erase(it);
  return {};
}

std::vector<Workload> VmRuntime::workloads() const { return workloads_of(entries_); }

const Workload* VmRuntime::find(const WorkloadKey& key) const {
  return find_workload(entries_, key);
}

std::optional<Runtime::SteadyTime> VmRuntime::next_deadline() const {
  std::optional<SteadyTime> next;
  for (const auto& [key, entry] : entries_) {
    if (entry.kill_at && (!next || *entry.kill_at < *next)) next = entry.kill_at;
  }
  return next;
}

}  // namespace gpurent::agent
