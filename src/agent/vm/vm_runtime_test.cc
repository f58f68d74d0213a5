// The VM runtime with real VMs under TCG (the test image, scripts/vm-test-image.sh): a run's
// command exits with its status in the console log, its file kept in the instance's directory and
// one written to its volume in the volume's data on the node;
// a sleeping VM survives its runtime, is adopted by a new one on the same directory, runs an exec
// through its guest agent, and stops with SIGTERM's status. With a stand-in QEMU and a fake sysfs:
// a run's GPUs are bound to vfio-pci and given to QEMU with its services' ports, and given back to
// the host when the VM ends or fails to start. A cloud image's VM: its own root disk across runs,
// cloud-init's user with the spec's key, a graceful stop.
#include "agent/vm/vm_runtime.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/node_runs.h"
#include "agent/runtime/process_runtime.h"
#include "agent/runtime/runtime_set.h"
#include "agent/runtime/workload_files.h"
#include "agent/test_util.h"
#include "agent/tool_run.h"
#include "agent/vm/fake_sysfs.h"
#include "agent/vm/guest_agent.h"
#include "client/http_client.h"
#include "common/files.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

// The node's workload users, as a root agent with a sandbox keeps them: QEMU runs confined, as
// the instance's user.
void with_workload_users(VmRuntimeOptions& options) {
  fs::create_directories(options.data_dir);
  auto users = WorkloadUsers::open(options.data_dir, kDefaultWorkloadIds);
  ASSERT_TRUE(users) << users.error().message;
  options.users = std::make_shared<WorkloadUsers>(std::move(*users));
}

// The folders go over virtio-fs, each tenant's guests with the ids an agent would give them.
void share_over_virtio_fs(VmRuntimeOptions& options) {
  options.shares = VmShares::kVirtioFs;
  if (!options.users) with_workload_users(options);
}

// Real VMs under TCG, from the test image an environment variable names, in a directory of the
// test's own: short, as QMP's unix socket path must fit in 108 bytes.
class RealVmTest : public ::testing::Test {
 protected:
  // The image an environment variable names (with `within` it, when a directory); nullopt when
  // there is none. The tests may skip without it, but not under GPURENT_REQUIRE_VM.
  static std::optional<std::string> image_from(const char* variable, const fs::path& within) {
    const char* image = std::getenv(variable);
    if (image == nullptr ||
        !fs::exists(within.empty() ? fs::path(image) : fs::path(image) / within)) {
      EXPECT_EQ(std::getenv("GPURENT_REQUIRE_VM"), nullptr) << variable << " is not set";
      return std::nullopt;
    }
    return image;
  }
  void TearDown() override {
    if (dir_.empty()) return;
    // A test that failed half-way leaves its VMs running: QEMU was left to init (and its passt ends
    // with it). Only a QEMU whose command line names this test's directory is killed.
    std::error_code ec;
    for (const auto& run : fs::directory_iterator(dir_ / "data" / "vms", ec)) {
      const auto pid_text = read_file(run.path() / "qemu" / "qemu.pid", 64);
      const int pid = pid_text ? std::atoi(pid_text->c_str()) : 0;
      const auto command = pid > 0 ? read_file(fmt::format("/proc/{}/cmdline", pid), 1 << 16)
                                   : Result<std::string>(fail(Error::internal("no pid")));
      if (command && command->find(dir_.string()) != std::string::npos) ::kill(pid, SIGKILL);
    }
    fs::remove_all(dir_);
  }
  static fs::path test_dir(std::string_view prefix) {
    return fs::path("/tmp") / fmt::format("{}-{}", prefix, os_random_seed() % 1'000'000);
  }

  // Polls until the run has exited.
  static const Workload* wait_exited(VmRuntime& runtime, const WorkloadKey& key,
                                     std::chrono::seconds within) {
    for (auto waited = std::chrono::milliseconds(0); waited < within;
         waited += std::chrono::milliseconds(100)) {
      runtime.poll();
      const Workload* w = runtime.find(key);
      if (w != nullptr && w->phase == model::WorkloadPhase::kExited) return w;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return nullptr;
  }

  fs::path dir_;
  VmRuntimeOptions options_;
};

// The kernel+initrd test image: a TCG boot takes seconds.
class VmRuntimeTest : public RealVmTest {
 protected:
  void SetUp() override {
    const auto image = image_from("GPURENT_TEST_VM_IMAGE", "vmlinuz");
    if (!image)
      GTEST_SKIP() << "no VM test image (GPURENT_TEST_VM_IMAGE=$(scripts/vm-test-image.sh))";
    dir_ = test_dir("gvm");
    options_ = {.data_dir = dir_ / "data",
                .instances_dir = dir_ / "instances",
                .kernel = fs::path(*image) / "vmlinuz",
                .initrd = fs::path(*image) / "initrd.gz",
                .accelerator = VmAccelerator::kTcg,
                .default_memory_mb = 256,
                .stop_grace = std::chrono::seconds(5)};
    if (::geteuid() == 0) with_workload_users(options_);
  }
  static const Workload* wait_exited(VmRuntime& runtime, const WorkloadKey& key) {
    return RealVmTest::wait_exited(runtime, key, std::chrono::seconds(120));
  }

  void runs_a_command_with_its_folders();

  // The run's QEMU runs as its instance's user, in its tenant's group, under its seccomp filter,
  // and sees of the agent's data directory only its own files.
  // What /proc/PID/status says of a helper that runs as the instance's user: its uid, its tenant's
  // gid, no capabilities and no way to gain any.
  void expect_instances_user(const std::string& status, const WorkloadKey& key) const {
    const uint32_t uid = *options_.users->uid_of_instance(key.instance_id);
    const uint32_t gid = *options_.users->gid_of_tenant("t-1");
    EXPECT_NE(status.find(fmt::format("Uid:\t{0}\t{0}\t{0}\t{0}\n", uid)), std::string::npos)
        << status;
    EXPECT_NE(status.find(fmt::format("Gid:\t{0}\t{0}\t{0}\t{0}\n", gid)), std::string::npos);
    EXPECT_NE(status.find("CapEff:\t0000000000000000\n"), std::string::npos);
    EXPECT_NE(status.find("NoNewPrivs:\t1\n"), std::string::npos);
  }
  void expect_qemu_confined(const WorkloadKey& key) const {
    const fs::path run = vm_run_dir(options_.data_dir, key);
    const int pid = std::atoi(read_file(run / "qemu" / "qemu.pid", 64).value_or("0").c_str());
    ASSERT_GT(pid, 0);
    const std::string status = read_file(fmt::format("/proc/{}/status", pid)).value_or("");
    expect_instances_user(status, key);
    EXPECT_NE(status.find("Seccomp:\t2\n"), std::string::npos) << "QEMU's -sandbox filter";
    const fs::path its_view = fmt::format("/proc/{}/root", pid);
    const auto seen = [&](const fs::path& path) {
      return fs::exists(its_view / path.relative_path());
    };
    EXPECT_TRUE(fs::exists(options_.data_dir / "credential"));
    EXPECT_FALSE(seen(options_.data_dir / "credential"))
        << "the agent's files are not QEMU's to see";
    EXPECT_FALSE(seen(run / "state.json")) << "nor the run's records";
    EXPECT_TRUE(seen(run / "qemu" / "qmp.sock"));
    EXPECT_TRUE(seen(run / "guest" / "command.sh")) << "the folders it serves over 9p";
  }

  static model::WorkloadSpec spec(std::string id, std::vector<std::string> command) {
    model::WorkloadSpec s;
    s.instance_id = std::move(id);
    s.tenant_id = "t-1";
    s.run = 1;
    s.command = std::move(command);
    s.env = {{"GREETING", "it's a VM"}};
    return s;
  }
};

// A command runs with its env in /workspace, its files kept in the instance's directory and its
// volume's on the node; over virtio-fs, the files it makes are the node's guest ids'.
void VmRuntimeTest::runs_a_command_with_its_folders() {
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  auto s = spec("i-vm", {"sh", "-c",
                         "echo \"$GREETING in $(pwd) as $GPURENT_INSTANCE_ID\"; "
                         "echo kept > /workspace/note; echo \"$GPURENT_VOLUMES\" > "
                         "'/mnt/my data/seen'; chown 1000 '/mnt/my data/seen'; exit 7"});
  s.volumes = {{.volume_id = "v-data", .mount_path = "/mnt/my data"}};
  ASSERT_TRUE((*runtime)->start(s));
  EXPECT_EQ((*runtime)->start(s).error().code, "workload_exists");
  const WorkloadKey key{"i-vm", 1};
  const Workload* ended = wait_exited(**runtime, key);
  ASSERT_NE(ended, nullptr) << "the VM did not end";
  EXPECT_EQ(ended->exit_code, 7);
  const std::string log = read_file(ended->log_path).value_or("");
  EXPECT_NE(log.find("it's a VM in /workspace as i-vm"), std::string::npos) << log;
  EXPECT_EQ(read_file((*runtime)->instance_dir("i-vm") / "note").value_or(""), "kept\n");
  EXPECT_EQ(fs::status((*runtime)->instance_dir("i-vm")).permissions() & fs::perms::all,
            fs::perms::owner_all)
      << "no other user of the node reads a VM's disk";
  const fs::path seen = options_.data_dir / "volumes" / "v-data" / "seen";
  EXPECT_EQ(read_file(seen).value_or(""), "v-data=/mnt/my data\n")
      << "the volume's data is the node's, mounted at its path in the guest";
  struct stat note {
  }, seen_stat{};
  ASSERT_EQ(::stat(((*runtime)->instance_dir("i-vm") / "note").c_str(), &note), 0);
  ASSERT_EQ(::stat(seen.c_str(), &seen_stat), 0);
  if (options_.shares == VmShares::kVirtioFs) {
    const auto guests = options_.users->given_guest_ids("t-1");
    ASSERT_TRUE(guests) << "the tenant's guests were given their ids";
    EXPECT_EQ(note.st_uid, *guests) << "the guest's root";
    EXPECT_EQ(seen_stat.st_uid, *guests + 1000) << "the guest's uid 1000";
  } else {
    EXPECT_EQ(note.st_uid, options_.users ? *options_.users->uid_of_instance("i-vm") : ::geteuid())
        << "QEMU's user's, the guest's owner kept in an xattr";
    if (options_.users) {
      // The volume stays the tenant's group's, as process runs have it: they may use it at once.
      const uint32_t group = *options_.users->gid_of_tenant("t-1");
      EXPECT_EQ(seen_stat.st_gid, group);
      EXPECT_EQ(seen_stat.st_mode & 07777, 0660u);
      struct stat volume {};
      ASSERT_EQ(::stat(seen.parent_path().c_str(), &volume), 0);
      EXPECT_EQ(volume.st_uid, 0u);
      EXPECT_EQ(volume.st_gid, group);
      EXPECT_EQ(volume.st_mode & 07777, 02770u);
    }
  }
  ASSERT_TRUE((*runtime)->forget(key));
  EXPECT_EQ((*runtime)->find(key), nullptr);
  EXPECT_TRUE(fs::exists((*runtime)->instance_dir("i-vm"))) << "the instance keeps its disk";
}

TEST_F(VmRuntimeTest, ACommandRunsInItsVmWithItsEnvAndExitsWithItsStatus) {
  runs_a_command_with_its_folders();
}

TEST_F(VmRuntimeTest, ACommandRunsWithItsFoldersOverVirtioFs) {
  if (::geteuid() != 0) GTEST_SKIP() << "virtiofsd maps the guest ids: it needs root";
  share_over_virtio_fs(options_);
  // As the agent's data directory is: only the node's root enters it, not the guest ids.
  fs::permissions(dir_, fs::perms::owner_all);
  runs_a_command_with_its_folders();

  // Another tenant's guests make their files with ids of their own, beside the first's.
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  auto other = spec("i-other", {"sh", "-c", "echo mine > /workspace/note"});
  other.tenant_id = "t-2";
  ASSERT_TRUE((*runtime)->start(other));
  const Workload* ended = wait_exited(**runtime, {"i-other", 1});
  ASSERT_NE(ended, nullptr) << "the VM did not end";
  EXPECT_EQ(ended->exit_code, 0) << read_file(ended->log_path).value_or("");
  struct stat note {};
  ASSERT_EQ(::stat(((*runtime)->instance_dir("i-other") / "note").c_str(), &note), 0);
  EXPECT_EQ(note.st_uid, *options_.users->given_guest_ids("t-1") + kGuestIdCount)
      << "the next block: no file of one tenant's guests is the other's";
}

// A stand-in for the NVIDIA driver's nvidia-smi in the guest: it answers the reporter's query
// (and only it) for the run's GPU and for one that is not the run's.
constexpr std::string_view kFakeNvidiaSmi =
    R"sh(mkdir -p /usr/local/bin && cat >/usr/local/bin/nvidia-smi <<'EOF'
#!/bin/sh
[ "$1" = "--query-gpu=uuid,utilization.gpu,utilization.memory,memory.used,memory.free,temperature.gpu,power.draw" ] || exit 2
[ "$2" = "--format=csv,noheader,nounits" ] || exit 2
echo "GPU-sim-0, 55, 20, 2048, 79000, 70, 250.25"
echo "GPU-not-its-own, 1, 1, 1, 1, 1, 1.0"
EOF
chmod +x /usr/local/bin/nvidia-smi; exec sleep 600)sh";

TEST_F(VmRuntimeTest, AVmOutlivesItsRuntimeIsAdoptedAndStops) {
  const WorkloadKey key{"i-sleeper", 1};
  options_.simulated_gpus = true;
  ASSERT_TRUE(write_file_atomic(options_.data_dir / "credential", "the node's\n"));
  {
    auto first = VmRuntime::open(options_);
    ASSERT_TRUE(first);
    auto s = spec("i-sleeper", {"sh", "-c", std::string(kFakeNvidiaSmi)});
    s.gpus = {"GPU-sim-0"};
    ASSERT_TRUE((*first)->start(s));
    EXPECT_EQ((*first)->find(key)->phase, model::WorkloadPhase::kRunning);
  }  // the agent restarts: QEMU runs on
  auto second = VmRuntime::open(options_);
  ASSERT_TRUE(second);
  const Workload* adopted = (*second)->find(key);
  ASSERT_NE(adopted, nullptr);
  EXPECT_EQ(adopted->phase, model::WorkloadPhase::kRunning);
  // The guest boots on and runs its command under the new runtime.
  bool booted = false;
  for (int i = 0; i < 1200 && !booted; ++i) {
    (*second)->poll();
    ASSERT_EQ((*second)->find(key)->phase, model::WorkloadPhase::kRunning);
    booted = read_file(adopted->log_path).value_or("").find("GPURENT_BOOTED") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(booted) << read_file(adopted->log_path).value_or("");
  if (options_.users) expect_qemu_confined(key);
  // The guest reports its GPU (the adopting runtime knows which is its own), and only once per
  // report it writes.
  std::vector<model::GpuSample> reported;
  for (int i = 0; i < 900 && reported.empty(); ++i) {
    (*second)->guest_gpu_samples(1'790'000'000'000, reported);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(reported.size(), 1u) << read_file(adopted->log_path).value_or("");
  EXPECT_EQ(reported[0].uuid, "GPU-sim-0");
  EXPECT_EQ(reported[0].time_ms, 1'790'000'000'000);
  EXPECT_EQ(reported[0].gpu_util_pct, 55);
  EXPECT_EQ(reported[0].temperature_c, 70);
  EXPECT_EQ(reported[0].power_w, 250.25);
  reported.clear();
  (*second)->guest_gpu_samples(1'790'000'001'000, reported);
  EXPECT_TRUE(reported.empty()) << "the same report is not read twice";
  // Exec through the guest agent, as the run's command runs: its env, in /workspace.
  Result<GuestExecResult> ran = fail(Error::internal("not tried"));
  for (int i = 0; i < 20 && !(ran = guest_exec(vm_guest_agent_socket(options_.data_dir, key),
                                               vm_exec_argv({"sh", "-c",
                                                             "echo \"$GREETING in $(pwd)\"; "
                                                             "echo err >&2; exit 5"}),
                                               {}, std::chrono::seconds(30)));
       ++i) {
    ASSERT_EQ(ran.error().code, "guest_agent_unavailable") << ran.error().message;
  }
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 5);
  EXPECT_EQ(ran->out, "it's a VM in /workspace\n");
  EXPECT_EQ(ran->err, "err\n");
  const auto missing = guest_exec(vm_guest_agent_socket(options_.data_dir, key),
                                  vm_exec_argv({"no-such-program"}), {}, std::chrono::seconds(30));
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_EQ(missing->exit_code, 127);
  EXPECT_EQ((*second)->forget(key).error().code, "workload_running");
  (*second)->stop(key);
  EXPECT_TRUE((*second)->next_deadline());
  const Workload* stopped = wait_exited(**second, key);
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->exit_code, 143);
  // A third runtime reads the same end from the record.
  auto third = VmRuntime::open(options_);
  ASSERT_TRUE(third);
  EXPECT_EQ((*third)->find(key)->exit_code, 143);
}

// The node's first IPv4 address that is not a loopback one (where a guest's outbound traffic can
// be seen arriving); nullopt on a host without one.
std::optional<std::string> node_network_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (const ifaddrs* a = list; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET ||
        (a->ifa_flags & IFF_LOOPBACK) != 0 || (a->ifa_flags & IFF_UP) == 0) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) found = text;
  }
  ::freeifaddrs(list);
  return found;
}

// A TCP listener on every address of the node that keeps the first line of each connection.
class LineCatcher {
 public:
  LineCatcher() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    socklen_t length = sizeof(address);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "cannot listen: " << std::strerror(errno);
      return;
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      for (int client; (client = ::accept(fd_, nullptr, nullptr)) >= 0;) {
        std::string line;
        char c = 0;
        while (::read(client, &c, 1) == 1 && c != '\n') line += c;
        ::close(client);
        const std::lock_guard lock(mutex_);
        lines_.push_back(line);
      }
    });
  }
  ~LineCatcher() {
    ::shutdown(fd_, SHUT_RDWR);  // ends the accept
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  LineCatcher(const LineCatcher&) = delete;
  LineCatcher& operator=(const LineCatcher&) = delete;
  uint16_t port() const { return port_; }
  std::vector<std::string> lines() {
    const std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

// What a guest's network reaches: it sends a line to a listener on the node's network address
// and one to the same port through the gateway (which QEMU's user-mode networking, unrestricted,
// would map to the node's loopback), then serves a page on its service's port.
class VmNetworkTest : public VmRuntimeTest {
 protected:
  struct Seen {
    std::string log;
    std::vector<std::string> lines;  // what the node's listener heard
  };
  // passt, which parses what the guest sends, runs beside a confined QEMU as QEMU does.
  void expect_passt_confined(const WorkloadKey& key) const {
    const std::string socket = (vm_run_dir(options_.data_dir, key) / "qemu" / "net.sock").string();
    const pid_t passt = testing::process_with("passt", socket);
    ASSERT_GT(passt, 0) << "no passt serves " << socket;
    expect_instances_user(read_file(fmt::format("/proc/{}/status", passt), 1 << 16).value_or(""),
                          key);
  }

  // Runs the guest under the network and returns what was seen once its page was served.
  std::optional<Seen> run_with(VmNetwork network) {
    const auto node_address = node_network_address();
    if (!node_address) {
      ADD_FAILURE() << "this host has no network address but its loopback";
      return std::nullopt;
    }
    LineCatcher catcher;
    options_.network = network;
    auto runtime = VmRuntime::open(options_);
    EXPECT_TRUE(runtime) << runtime.error().message;
    if (!runtime) return std::nullopt;
    const uint16_t web = free_loopback_port({}).value();
    auto http = client::HttpClient::create(fmt::format("http://127.0.0.1:{}", web));
    auto s = spec("i-net", {"sh", "-c",
                            fmt::format("echo outbound | nc -w 10 {0} {1} && echo sent-outbound; "
                                        "echo via-gateway | nc -w 5 10.0.2.2 {1} && echo "
                                        "gateway-reached; echo served > /workspace/page; "
                                        "exec httpd -f -p {2} -h /workspace",
                                        *node_address, catcher.port(), web)});
    s.env["GPURENT_PORT_WEB"] = std::to_string(web);
    EXPECT_TRUE((*runtime)->start(s));
    const WorkloadKey key{"i-net", 1};
    const auto log_path = (*runtime)->find(key)->log_path;
    bool served = false;
    for (int i = 0; i < 1200 && !served && http; ++i) {
      (*runtime)->poll();
      if ((*runtime)->find(key)->phase != model::WorkloadPhase::kRunning) break;
      if (fs::exists((*runtime)->instance_dir("i-net") / "page")) {
        auto got = http->send({.target = "/page"}, std::chrono::seconds(5));
        served = got && got->status == 200 && got->body == "served\n";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    Seen seen{read_file(log_path).value_or(""), catcher.lines()};
    if (network == VmNetwork::kOutbound && options_.users) expect_passt_confined(key);
    (*runtime)->stop(key);
    EXPECT_NE(wait_exited(**runtime, key), nullptr);
    EXPECT_TRUE(served) << "the service's port did not reach the guest: " << seen.log;
    return seen;
  }
};

// Outbound (passt, the default): the node's network, not the node's loopback.
TEST_F(VmNetworkTest, AnOutboundVmReachesTheNodesNetworkButNotItsLoopback) {
  const auto seen = run_with(VmNetwork::kOutbound);
  ASSERT_TRUE(seen);
  EXPECT_NE(seen->log.find("sent-outbound"), std::string::npos) << seen->log;
  EXPECT_EQ(seen->log.find("gateway-reached"), std::string::npos) << seen->log;
  EXPECT_EQ(seen->lines, std::vector<std::string>{"outbound"})
      << "the node's network heard the guest, its loopback did not: " << seen->log;
}

// Isolated (QEMU's user-mode networking, restricted): nothing; the service's port still reaches in.
TEST_F(VmNetworkTest, AnIsolatedVmReachesNothing) {
  const auto seen = run_with(VmNetwork::kIsolated);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->log.find("sent-outbound"), std::string::npos) << seen->log;
  EXPECT_EQ(seen->log.find("gateway-reached"), std::string::npos) << seen->log;
  EXPECT_EQ(seen->lines, std::vector<std::string>{});
}

// A cloud image (scripts/vm-cloud-image.sh: Debian with cloud-init and qemu-ga) under TCG: the
// instance's root disk is an overlay kept across its runs, cloud-init's user gets the spec's SSH
// key, each boot runs the run's command, and a stop shuts the guest down.
class VmCloudImageTest : public RealVmTest {
 protected:
  void SetUp() override {
    const auto image = image_from("GPURENT_TEST_VM_CLOUD_IMAGE", "");
    if (!image) {
      GTEST_SKIP() << "no cloud image (GPURENT_TEST_VM_CLOUD_IMAGE=$(scripts/vm-cloud-image.sh))";
    }
    dir_ = test_dir("gvc");
    options_ = {.data_dir = dir_ / "data",
                .instances_dir = dir_ / "instances",
                .cloud_image = *image,
                .accelerator = VmAccelerator::kTcg,
                .default_memory_mb = 768,
                .stop_grace = std::chrono::seconds(60)};
    // The image's kernel is Debian's cloud kernel, without virtio-9p.
    share_over_virtio_fs(options_);
  }
  // A full system boots in about a minute.
  static const Workload* wait_exited(VmRuntime& runtime, const WorkloadKey& key) {
    return RealVmTest::wait_exited(runtime, key, std::chrono::seconds(300));
  }
};

TEST_F(VmCloudImageTest, RunsEachBootOnTheInstancesOwnRootDiskWithItsUserAndKey) {
  constexpr std::string_view kKey =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICwa4sBUcPlIif1WN+56sNJou2Z1eM/g65b0pLsYOSty a@b";
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  model::WorkloadSpec s;
  s.instance_id = "i-cloud";
  s.tenant_id = "t-1";
  s.run = 1;
  s.env = {{"GREETING", "it's a cloud VM"}};
  s.ssh_keys = {std::string(kKey)};
  s.disk_gb = 6;  // the image's root filesystem is 3 GiB
  s.command = {"sh", "-c",
               "echo \"$GREETING in $(pwd)\"; echo \"keys: $(cat "
               "/home/gpurent/.ssh/authorized_keys)\"; id gpurent; echo first > /var/tmp/marker; "
               "echo kept > /workspace/note; df -P -k / | awk 'NR == 2 { print \"root_kb=\" $2 }'; "
               "exit 3"};
  ASSERT_TRUE((*runtime)->start(s));
  const Workload* ended = wait_exited(**runtime, {"i-cloud", 1});
  ASSERT_NE(ended, nullptr) << "the VM did not end";
  std::string log = read_file(ended->log_path).value_or("");
  EXPECT_EQ(ended->exit_code, 3) << log;
  EXPECT_NE(log.find("it's a cloud VM in /workspace"), std::string::npos) << log;
  EXPECT_NE(log.find(fmt::format("keys: {}", kKey)), std::string::npos) << log;
  EXPECT_NE(log.find("uid=1000(gpurent)"), std::string::npos) << log;
  EXPECT_EQ(read_file((*runtime)->instance_dir("i-cloud") / "note").value_or(""), "kept\n");
  struct stat home {};
  ASSERT_EQ(::stat((*runtime)->instance_dir("i-cloud").c_str(), &home), 0);
  EXPECT_EQ(home.st_uid, *options_.users->given_guest_ids("t-1") + 1000)
      << "/workspace is the guest's user gpurent's (uid 1000), on the node a guest id";
  // cloud-init grew the root filesystem into the disk of disk_gb.
  const size_t root_kb = log.find("root_kb=");
  ASSERT_NE(root_kb, std::string::npos) << log;
  EXPECT_GT(std::stoll(log.substr(root_kb + 8)), int64_t{5} << 20) << log;
  ASSERT_TRUE((*runtime)->forget({"i-cloud", 1}));

  // The next run boots the same root disk (what the first left in /var/tmp is there) and runs its
  // command again; it answers execs, and a stop presses its power button.
  s.run = 2;
  s.command = {"sh", "-c", "echo \"found $(cat /var/tmp/marker)\"; exec sleep 600"};
  ASSERT_TRUE((*runtime)->start(s));
  const WorkloadKey key{"i-cloud", 2};
  const auto log_path = (*runtime)->find(key)->log_path;
  bool found = false;
  for (int i = 0; i < 3000 && !found; ++i) {
    (*runtime)->poll();
    ASSERT_EQ((*runtime)->find(key)->phase, model::WorkloadPhase::kRunning)
        << read_file(log_path).value_or("");
    found = read_file(log_path).value_or("").find("found first") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(found) << read_file(log_path).value_or("");
  const auto ran = guest_exec(vm_guest_agent_socket(options_.data_dir, key),
                              vm_exec_argv({"sh", "-c", "echo \"$GREETING in $(pwd)\""}), {},
                              std::chrono::seconds(60));
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->out, "it's a cloud VM in /workspace\n");
  (*runtime)->stop(key);
  const Workload* stopped = wait_exited(**runtime, key);
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->exit_code, 143);
  log = read_file(log_path).value_or("");
  EXPECT_NE(log.find("reboot: Power down"), std::string::npos)
      << "the guest shut down, not killed: " << log;
}

// A stand-in for qemu-system-x86_64 (the machine is a sleep) and a sysfs with one GPU and its
// audio function in an IOMMU group of their own.
class VmPassthroughTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path("/tmp") / ("gvp-" + std::to_string(os_random_seed() % 1'000'000));
    fs::create_directories(dir_);
    // Records its arguments beside its monitor's socket, then answers on the monitor as QEMU
    // does, standing in for the machine until it is signalled.
    write_file(dir_ / "qemu", R"(#!/usr/bin/python3
import os, socket, sys
args = sys.argv[1:]
monitor = args[args.index("-qmp") + 1].split(",")[0][len("unix:"):]
with open(os.path.join(os.path.dirname(monitor), "args"), "w") as out:
    out.write("".join(arg + "\n" for arg in args))
server = socket.socket(socket.AF_UNIX)
server.bind(monitor)
server.listen()
while True:
    client, _ = server.accept()
    with client, client.makefile("rw") as stream:
        stream.write('{"QMP": {"version": {}, "capabilities": []}}\n')
        stream.flush()
        for line in stream:
            stream.write('{"return": {}}\n')
            stream.flush()
)");
    write_file(dir_ / "broken-qemu",
               "#!/bin/sh\necho 'vfio 0000:3b:00.0: group 42 is not viable' >&2; exit 1\n");
    sysfs_.add(kGpu, 42, "0x030200", "nvidia");
    sysfs_.add("0000:3b:00.1", 42, "0x040300", "snd_hda_intel");
    sysfs_.add("0000:5e:00.0", 43, "0x030200", "nvidia");
    sysfs_.add("0000:5f:00.0", 43, "0x020000", "mlx5_core");
    model::Gpu gpu;
    gpu.uuid = "GPU-a";
    gpu.pci_address = kGpu;
    model::Gpu shared = gpu;
    shared.uuid = "GPU-shared";
    shared.pci_address = "0000:5e:00.0";
    options_ = {.data_dir = dir_ / "data",
                .instances_dir = dir_ / "instances",
                .kernel = dir_ / "vmlinuz",
                // QEMU's own networking: its forwards are in the stand-in's arguments.
                .network = VmNetwork::kIsolated,
                .gpus = {gpu, shared},
                .sysfs = sysfs_.root(),
                .qemu = (dir_ / "qemu").string(),
                .dev = dir_ / "dev",
                .stop_grace = std::chrono::seconds(5)};
    fs::create_directories(dir_ / "dev" / "vfio");
    for (const char* group : {"42", "43"}) FakeSysfsTree::write(dir_ / "dev" / "vfio" / group, "");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An executable anyone may run (a confined QEMU's user among them).
  static void write_file(const fs::path& path, const std::string& text) {
    FakeSysfsTree::write(path, text);
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  }
  // What the stand-in QEMU of the run was given.
  std::string qemu_args() const {
    return read_file(vm_run_dir(options_.data_dir, {"i-gpu", 1}) / "qemu" / "args").value_or("");
  }
  std::string driver_override() const {
    return FakeSysfsTree::read(sysfs_.root() / "bus" / "pci" / "devices" / kGpu /
                               "driver_override");
  }
  static model::WorkloadSpec gpu_spec(std::string gpu) {
    model::WorkloadSpec s;
    s.instance_id = "i-gpu";
    s.run = 1;
    s.command = {"nvidia-smi"};
    s.gpus = {std::move(gpu)};
    s.env = {{"GPURENT_PORT_WEB", "18080"}};
    return s;
  }

  // Whether the agent may let a confined QEMU lock a guest's memory (it has CAP_SYS_RESOURCE).
  static bool memlock_can_be_raised() {
    rlimit held{};
    ::getrlimit(RLIMIT_MEMLOCK, &held);
    rlimit raised{RLIM_INFINITY, RLIM_INFINITY};
    if (::setrlimit(RLIMIT_MEMLOCK, &raised) != 0) return false;
    ::setrlimit(RLIMIT_MEMLOCK, &held);
    return true;
  }

  // A start of GPU-a with options_ fails as vm_start_failed saying `words`, and leaves the GPU
  // given back and no run behind.
  void expect_gpu_start_fails_saying(std::string_view words) {
    auto runtime = VmRuntime::open(options_);
    ASSERT_TRUE(runtime) << runtime.error().message;
    const auto refused = (*runtime)->start(gpu_spec("GPU-a"));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, "vm_start_failed");
    EXPECT_NE(refused.error().message.find(words), std::string::npos) << refused.error().message;
    EXPECT_EQ(driver_override(), "\n") << "bound for the start, given back when it failed";
    EXPECT_TRUE((*runtime)->workloads().empty());
    EXPECT_FALSE(fs::exists(options_.data_dir / "vms" / "i-gpu.1"));
  }

  static constexpr const char* kGpu = "0000:3b:00.0";
  fs::path dir_;
  FakeSysfsTree sysfs_;
  VmRuntimeOptions options_;
};

TEST_F(VmPassthroughTest, AGpuIsBoundForTheVmAndGivenBackWhenItEnds) {
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  ASSERT_TRUE((*runtime)->start(gpu_spec("GPU-a")));
  EXPECT_EQ(driver_override(), "vfio-pci");
  const std::string args = qemu_args();
  EXPECT_NE(args.find("vfio-pci,host=0000:3b:00.0\n"), std::string::npos) << args;
  EXPECT_NE(args.find("vfio-pci,host=0000:3b:00.1\n"), std::string::npos) << args;
  EXPECT_NE(args.find("hostfwd=tcp:127.0.0.1:18080-:18080"), std::string::npos) << args;

  const WorkloadKey key{"i-gpu", 1};
  (*runtime)->stop(key);
  const Workload* ended = nullptr;
  for (int i = 0; i < 200 && ended == nullptr; ++i) {
    (*runtime)->poll();
    const Workload* w = (*runtime)->find(key);
    if (w->phase == model::WorkloadPhase::kExited) ended = w;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(ended, nullptr);
  EXPECT_EQ(ended->exit_code, 143);
  EXPECT_EQ(driver_override(), "\n") << "given back to the host's driver";
  EXPECT_EQ(FakeSysfsTree::read(sysfs_.root() / "bus" / "pci" / "drivers_probe"), "0000:3b:00.1");
}

// A confined QEMU (a root agent's, with its workload users) runs as the instance's user: it is
// given its GPU's /dev/vfio node, which is root's again once the GPU is given back, and may lock
// the guest's memory for VFIO, which only an agent with CAP_SYS_RESOURCE can let it.
TEST_F(VmPassthroughTest, AConfinedQemuIsGivenItsGpusGroupNodeForTheRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "QEMU's user is the instance's: it needs root";
  with_workload_users(options_);
  const fs::path node = dir_ / "dev" / "vfio" / "42";
  const auto owner_of = [](const fs::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? std::pair{st.st_uid, st.st_gid} : std::pair{~0U, ~0U};
  };
  if (!memlock_can_be_raised()) {
    // This host cannot let QEMU pin a guest: the start says so and leaves nothing bound.
    expect_gpu_start_fails_saying("may not lock 2048 MiB of memory");
    EXPECT_EQ(owner_of(node), (std::pair{0U, 0U}));
    return;
  }
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  ASSERT_TRUE((*runtime)->start(gpu_spec("GPU-a")));
  // No tenant in the spec: the instance is its own.
  const std::pair user{*options_.users->uid_of_instance("i-gpu"),
                       *options_.users->gid_of_tenant("i-gpu")};
  EXPECT_EQ(owner_of(node), user);
  EXPECT_EQ(owner_of(vm_run_dir(options_.data_dir, {"i-gpu", 1}) / "qemu" / "args"), user)
      << "written by QEMU as the instance's user";
  (*runtime)->stop({"i-gpu", 1});
  for (int i = 0; i < 200 && (*runtime)->find({"i-gpu", 1})->phase != model::WorkloadPhase::kExited;
       ++i) {
    (*runtime)->poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(driver_override(), "\n") << "given back to the host's driver";
  EXPECT_EQ(owner_of(node), (std::pair{0U, 0U}));
}

// An instance's files (its directory, which the process runtime shares, and its root disk) are
// deleted only once no runtime runs it: a VM still running keeps them whole.
TEST_F(VmPassthroughTest, AnInstancesFilesAreDeletedOnlyOnceNoRuntimeRunsIt) {
  auto vms = VmRuntime::open(options_);
  ASSERT_TRUE(vms) << vms.error().message;
  VmRuntime* vm = vms->get();
  auto processes = ProcessRuntime::open(
      {.data_dir = dir_ / "processes", .instances_dir = options_.instances_dir});
  ASSERT_TRUE(processes) << processes.error().message;
  RuntimeSet runtimes(std::move(*processes), nullptr, std::move(*vms));
  auto spec = gpu_spec("GPU-a");
  spec.vm = true;
  ASSERT_TRUE(runtimes.start(spec));
  const fs::path home = runtimes.instance_dir("i-gpu");
  const fs::path disk = options_.data_dir / "vm-disks" / "i-gpu.qcow2";
  fs::create_directories(disk.parent_path());
  FakeSysfsTree::write(home / "note", "kept");
  FakeSysfsTree::write(disk, "a root disk");
  EXPECT_EQ(runtimes.remove_instance("i-gpu").error().code, "instance_running");
  EXPECT_EQ(vm->remove_instance("i-gpu").error().code, "instance_running");
  EXPECT_EQ(FakeSysfsTree::read(home / "note"), "kept");

  runtimes.stop({"i-gpu", 1});
  for (int i = 0; i < 200 && runtimes.find({"i-gpu", 1})->phase != model::WorkloadPhase::kExited;
       ++i) {
    runtimes.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(runtimes.remove_instance("i-gpu"));
  EXPECT_FALSE(fs::exists(home));
  EXPECT_FALSE(fs::exists(disk));
  EXPECT_TRUE(runtimes.remove_instance("i-gpu")) << "nothing left is no error";
  EXPECT_EQ(runtimes.remove_instance("../etc").error().code, "invalid_instance_id");
}

// A confined QEMU opens the guest image as the instance's user: an image only root may read is
// refused when the runtime opens (the agent's start), saying what to do, not at a VM's start.
TEST_F(VmPassthroughTest, AConfinedQemuNeedsAGuestImageTheNodesUsersMayRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "QEMU's user is the instance's: it needs root";
  with_workload_users(options_);
  FakeSysfsTree::write(options_.kernel, "a kernel");
  fs::permissions(options_.kernel, fs::perms::owner_read | fs::perms::owner_write);
  const auto refused = VmRuntime::open(options_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "vm_runtime_unavailable");
  EXPECT_NE(refused.error().message.find("chmod o+r"), std::string::npos)
      << refused.error().message;
  fs::permissions(options_.kernel, fs::perms::others_read, fs::perm_options::add);
  EXPECT_TRUE(VmRuntime::open(options_));
}

// A run that an agent from before qemu/ started has QEMU's files beside its records: a new agent
// adopts it and reads its console there.
TEST_F(VmPassthroughTest, ARunFromBeforeQemusOwnDirectoryIsAdoptedWithItsConsole) {
  const fs::path run = vm_run_dir(options_.data_dir, {"i-old", 1});
  fs::create_directories(run);
  ASSERT_TRUE(write_file_atomic(run / "console.log", "booted\nGPURENT_EXIT 4\n"));
  const auto machine = spawn_detached({.argv = {"sleep", "60"}, .log = dir_ / "old-qemu.log"});
  ASSERT_TRUE(machine) << machine.error().message;
  const auto stat = read_proc_stat(*machine);
  ASSERT_TRUE(stat);
  ASSERT_TRUE(write_shim_state(run, {.pid = *machine, .start_time = stat->start_time}));
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  const Workload* adopted = (*runtime)->find({"i-old", 1});
  ASSERT_NE(adopted, nullptr);
  EXPECT_EQ(adopted->phase, model::WorkloadPhase::kRunning);
  EXPECT_EQ(adopted->log_path, run / "console.log");
  ASSERT_EQ(::kill(*machine, SIGKILL), 0);
  for (int i = 0; i < 200 && (*runtime)->find({"i-old", 1})->phase != model::WorkloadPhase::kExited;
       ++i) {
    (*runtime)->poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ((*runtime)->find({"i-old", 1})->exit_code, 4) << "the status its guest printed";
}

// A confined QEMU's user controls qemu/: a console it replaced by a link (to a file of the node's)
// or a FIFO is not read by the agent, which runs as root, and does not hold its loop.
TEST_F(VmPassthroughTest, AConsoleReplacedByALinkOrAFifoIsNotRead) {
  ASSERT_TRUE(write_file_atomic(dir_ / "the-nodes", "GPURENT_EXIT 9\n"));
  for (const bool fifo : {false, true}) {
    const WorkloadKey key{fifo ? "i-fifo" : "i-link", 1};
    const fs::path run = vm_run_dir(options_.data_dir, key);
    fs::create_directories(run / "qemu");
    if (fifo) {
      ASSERT_EQ(::mkfifo((run / "qemu" / "console.log").c_str(), 0600), 0);
    } else {
      fs::create_symlink(dir_ / "the-nodes", run / "qemu" / "console.log");
    }
    const auto machine = spawn_detached({.argv = {"sleep", "60"}, .log = dir_ / "sleep.log"});
    ASSERT_TRUE(machine) << machine.error().message;
    ASSERT_TRUE(write_shim_state(
        run, {.pid = *machine, .start_time = read_proc_stat(*machine)->start_time}));
    auto runtime = VmRuntime::open(options_);
    ASSERT_TRUE(runtime) << runtime.error().message;
    ASSERT_EQ(::kill(*machine, SIGKILL), 0);
    for (int i = 0; i < 200 && (*runtime)->find(key)->phase != model::WorkloadPhase::kExited; ++i) {
      (*runtime)->poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ((*runtime)->find(key)->exit_code, 137) << "no status read through it";
  }
}

// The root disk is a confined QEMU's user's between runs, its header too: one rewritten from
// inside to name another backing file is refused before the agent (root) runs qemu-img on it.
TEST_F(VmPassthroughTest, ARootDiskWhoseHeaderWasChangedFromInsideIsRefused) {
  const fs::path base = dir_ / "base.qcow2";
  const auto made =
      run_tool({.argv = {"qemu-img", "create", "-q", "-f", "qcow2", base.string(), "16M"}});
  ASSERT_TRUE(made && fs::exists(base)) << "qemu-img (qemu-utils) is not installed";
  options_.kernel.clear();
  options_.cloud_image = base;
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  model::WorkloadSpec s;
  s.instance_id = "i-disk";
  s.run = 1;
  s.command = {"true"};
  s.disk_gb = 1;
  ASSERT_TRUE((*runtime)->start(s));
  (*runtime)->stop({"i-disk", 1});
  for (int i = 0;
       i < 300 && (*runtime)->find({"i-disk", 1})->phase != model::WorkloadPhase::kExited; ++i) {
    (*runtime)->poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE((*runtime)->forget({"i-disk", 1}));
  const fs::path disk = options_.data_dir / "vm-disks" / "i-disk.qcow2";
  const auto rebased = run_tool({.argv = {"qemu-img", "rebase", "-u", "-f", "qcow2", "-b",
                                          "/etc/hostname", "-F", "raw", disk.string()}});
  ASSERT_TRUE(rebased && rebased->output.empty()) << (rebased ? rebased->output : "");
  s.run = 2;
  const auto refused = (*runtime)->start(s);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "vm_start_failed");
  EXPECT_NE(refused.error().message.find("another backing file"), std::string::npos)
      << refused.error().message;
}

TEST_F(VmPassthroughTest, AGpuThatCannotPassOrAVmThatFailsLeavesNothingBound) {
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime);
  EXPECT_EQ((*runtime)->start(gpu_spec("GPU-unknown")).error().code, "gpu_passthrough_unavailable");
  EXPECT_EQ((*runtime)->start(gpu_spec("GPU-shared")).error().code, "iommu_group_shared");
  EXPECT_EQ(driver_override(), "(null)\n");

  options_.qemu = (dir_ / "broken-qemu").string();
  expect_gpu_start_fails_saying("not viable");
}

// virtio-fs: a virtiofsd that cannot run fails the start; one that runs is ended when QEMU fails
// after it (it would wait for its QEMU for good). Either way nothing stays bound or behind.
TEST_F(VmPassthroughTest, AStartThatFailsOverVirtioFsLeavesNoVirtiofsdBehind) {
  if (::geteuid() != 0) GTEST_SKIP() << "virtiofsd maps the guest ids: it needs root";
  share_over_virtio_fs(options_);
  options_.virtiofsd = "/nonexistent/virtiofsd";
  expect_gpu_start_fails_saying("--vm-shares 9p");

  options_.virtiofsd = kVirtiofsdPath;
  options_.qemu = (dir_ / "broken-qemu").string();
  // QEMU's user is confined: on a host where it may not pin the guest's memory, the start fails
  // before QEMU runs, after the virtiofsds all the same.
  expect_gpu_start_fails_saying(memlock_can_be_raised() ? "not viable" : "may not lock");
  std::optional<ToolOutput> left;
  for (int i = 0; i < 100; ++i) {
    left = run_tool({.argv = {"pgrep", "-f", (options_.instances_dir / "i-gpu").string()}});
    if (!left || left->output.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(left) << "pgrep cannot be run";
  EXPECT_EQ(left->output, "") << "the virtiofsds that QEMU never reached were hung up on";
  struct stat home {};
  ASSERT_EQ(::stat((options_.instances_dir / "i-gpu").c_str(), &home), 0);
  EXPECT_EQ(home.st_uid, kDefaultGuestIds) << "given to the guest's root for its share";
}

}  // namespace
}  // namespace gpurent::agent
