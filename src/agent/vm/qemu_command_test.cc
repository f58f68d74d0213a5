// The VM runtime's QEMU command line: what each part of a machine becomes (and that a comma in a
// path cannot add an option), and a real boot under TCG of the test image (scripts/
// vm-test-image.sh, GPURENT_TEST_VM_IMAGE): the command runs with a host folder shared in, its
// output and exit status reach the serial log, and the guest's powering off ends QEMU; the same
// over virtio-fs, with a real virtiofsd. passt's and virtiofsd's command lines.
#include "agent/vm/qemu_command.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "agent/files.h"
#include "agent/tool_run.h"
#include "agent/vm/passt.h"
#include "agent/vm/virtiofsd.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

// The value after `flag`, each time it appears.
std::vector<std::string> values_of(const std::vector<std::string>& argv, std::string_view flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) out.push_back(argv[i + 1]);
  }
  return out;
}

TEST(QemuCommand, EveryPartOfTheMachineBecomesItsOption) {
  VmMachine m{.name = "i-1.2",
              .accelerator = VmAccelerator::kKvm,
              .vcpus = 8,
              .memory_mb = 65536,
              .root_disk = "/var/lib/gpurent/i-1/root.qcow2",
              .seed = "/var/lib/gpurent/i-1/seed",
              .shares = {{.tag = "workspace", .directory = "/var/lib/gpurent/i-1/workspace"}},
              .vfio_functions = {"0000:3b:00.0", "0000:3b:00.1"},
              .forwards = {{.host_port = 40001, .guest_port = 8888}},
              .serial_log = "/var/lib/gpurent/i-1/2.log",
              .qmp_socket = "/run/gpurent/i-1.qmp",
              .guest_agent_socket = "/run/gpurent/i-1.qga",
              .pid_file = "/run/gpurent/i-1.pid"};
  const auto argv = qemu_command(m);
  EXPECT_EQ(argv.front(), "qemu-system-x86_64");
  EXPECT_EQ(values_of(argv, "-machine"), std::vector<std::string>{"q35,accel=kvm"});
  EXPECT_EQ(values_of(argv, "-cpu"), std::vector<std::string>{"host"});
  EXPECT_EQ(values_of(argv, "-smp"), std::vector<std::string>{"8"});
  EXPECT_EQ(values_of(argv, "-m"), std::vector<std::string>{"65536M"});
  EXPECT_EQ(values_of(argv, "-drive"),
            (std::vector<std::string>{
                "file=/var/lib/gpurent/i-1/root.qcow2,format=qcow2,if=virtio",
                "driver=vvfat,dir=/var/lib/gpurent/i-1/seed,label=cidata,read-only=on,if=virtio"}));
  EXPECT_EQ(values_of(argv, "-fsdev"),
            std::vector<std::string>{"local,id=share0,path=/var/lib/gpurent/i-1/workspace,"
                                     "security_model=mapped-xattr,fmode=0660,dmode=0770"});
  EXPECT_EQ(values_of(argv, "-device"),
            (std::vector<std::string>{
                "virtio-9p-pci,fsdev=share0,mount_tag=workspace", "virtio-serial-pci,id=serial0",
                "virtserialport,bus=serial0.0,chardev=qga,name=org.qemu.guest_agent.0",
                "vfio-pci,host=0000:3b:00.0", "vfio-pci,host=0000:3b:00.1"}));
  EXPECT_EQ(values_of(argv, "-nic"),
            std::vector<std::string>{
                "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:40001-:8888"});
  EXPECT_EQ(
      values_of(argv, "-chardev"),
      (std::vector<std::string>{"file,id=console,path=/var/lib/gpurent/i-1/2.log",
                                "socket,id=qga,path=/run/gpurent/i-1.qga,server=on,wait=off"}));
  EXPECT_EQ(values_of(argv, "-qmp"),
            std::vector<std::string>{"unix:/run/gpurent/i-1.qmp,server=on,wait=off"});
  EXPECT_EQ(values_of(argv, "-kernel"), std::vector<std::string>{}) << "booted from its disk";
  EXPECT_EQ(values_of(argv, "-sandbox"),
            std::vector<std::string>{
                "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"});
  EXPECT_EQ(std::ranges::find(argv, "-daemonize"), argv.end()) << "its fork would be refused";
  for (const char* flag : {"-nodefaults", "-no-user-config", "-no-reboot"}) {
    EXPECT_NE(std::ranges::find(argv, flag), argv.end()) << flag;
  }
}

TEST(QemuCommand, ACommaInAValueCannotAddAnOption) {
  const auto argv = qemu_command({.name = "x",
                                  .accelerator = VmAccelerator::kTcg,
                                  .kernel = "/k",
                                  .kernel_args = "console=ttyS0 a,b",
                                  .root_disk = "/v/a,readonly=off,file=/etc/shadow",
                                  .network = false,
                                  .serial_log = "/l,og",
                                  .qmp_socket = "/q"});
  EXPECT_EQ(
      values_of(argv, "-drive"),
      std::vector<std::string>{"file=/v/a,,readonly=off,,file=/etc/shadow,format=qcow2,if=virtio"});
  EXPECT_EQ(values_of(argv, "-chardev"), std::vector<std::string>{"file,id=console,path=/l,,og"});
  EXPECT_EQ(values_of(argv, "-append"), std::vector<std::string>{"console=ttyS0 a,b"})
      << "the kernel's arguments are one argument, not an option list";
  EXPECT_EQ(values_of(argv, "-machine"), std::vector<std::string>{"q35,accel=tcg"});
  EXPECT_EQ(values_of(argv, "-nic"), std::vector<std::string>{"none"});
}

TEST(QemuCommand, WithPasstTheCardIsItsSocketAndPasstForwardsThePorts) {
  VmMachine m{.name = "i-1.1",
              .forwards = {{.host_port = 40001, .guest_port = 8888}},
              .passt_socket = "/run/gpurent/i,1.net",
              .qmp_socket = "/q"};
  const auto argv = qemu_command(m);
  EXPECT_EQ(values_of(argv, "-netdev"),
            std::vector<std::string>{
                "stream,id=net0,server=off,addr.type=unix,addr.path=/run/gpurent/i,,1.net"});
  EXPECT_EQ(values_of(argv, "-device"), std::vector<std::string>{"virtio-net-pci,netdev=net0"});
  EXPECT_EQ(values_of(argv, "-nic"), std::vector<std::string>{}) << "no user-mode networking";

  const auto passt = passt_command({.binary = "/usr/bin/passt",
                                    .socket = "/run/gpurent/i-1.net",
                                    .log = "/run/gpurent/i-1.log",
                                    .forwards = {{.host_port = 40001, .guest_port = 8888},
                                                 {.host_port = 40002, .guest_port = 22}},
                                    .uid = 0,
                                    .gid = 0});
  EXPECT_EQ(passt.front(), "/usr/bin/passt");
  EXPECT_EQ(values_of(passt, "--tcp-ports"),
            std::vector<std::string>{"127.0.0.1/40001:8888,40002:22"})
      << "forwarded from the loopback only";
  EXPECT_EQ(values_of(passt, "--socket"), std::vector<std::string>{"/run/gpurent/i-1.net"});
  EXPECT_EQ(values_of(passt, "--address"), std::vector<std::string>{"10.0.2.15"});
  EXPECT_EQ(values_of(passt, "--gateway"), std::vector<std::string>{"10.0.2.2"});
  EXPECT_EQ(values_of(passt, "--runas"), std::vector<std::string>{"0:0"}) << "the agent's ids";
  EXPECT_EQ(values_of(passt_command({.socket = "/s", .log = "/l", .run_as = RunAs{.uid = 1200001}}),
                      "--runas"),
            std::vector<std::string>{})
      << "started as QEMU's user, it has no ids to drop";
  EXPECT_EQ(std::ranges::find(passt, "--foreground"), passt.end())
      << "it daemonizes into a PID namespace of its own";
  for (const char* flag : {"--no-map-gw", "--one-off"}) {
    EXPECT_NE(std::ranges::find(passt, flag), passt.end()) << flag;
  }
  EXPECT_EQ(values_of(passt_command({.socket = "/s", .log = "/l"}), "--tcp-ports"),
            std::vector<std::string>{"none"});
  EXPECT_EQ(values_of(passt, "--dns"), std::vector<std::string>{}) << "passt reads resolv.conf";
  EXPECT_EQ(
      values_of(passt_command(
                    {.socket = "/s", .log = "/l", .nameservers = {"192.0.2.53", "198.51.100.53"}}),
                "--dns"),
      (std::vector<std::string>{"192.0.2.53", "198.51.100.53"}));
}

TEST(QemuCommand, VirtioFsSharesTheGuestsMemoryAndGivesEachFolderItsVirtiofsd) {
  const auto argv = qemu_command(
      {.name = "i-1.1",
       .accelerator = VmAccelerator::kKvm,
       .memory_mb = 4096,
       .share_transport = VmShares::kVirtioFs,
       .shares = {{.tag = "gpurent", .directory = "/d/guest", .socket = "/d/fs0.sock"},
                  {.tag = "vol0", .directory = "/d/volumes/v-1", .socket = "/d/f,s1.sock"}},
       .network = false,
       .qmp_socket = "/q"});
  EXPECT_EQ(values_of(argv, "-machine"),
            std::vector<std::string>{"q35,accel=kvm,memory-backend=ram"});
  EXPECT_EQ(values_of(argv, "-m"), std::vector<std::string>{"4096M"});
  EXPECT_EQ(values_of(argv, "-object"),
            std::vector<std::string>{"memory-backend-memfd,id=ram,size=4096M,share=on"})
      << "virtiofsd maps the guest's memory: it must be shared";
  EXPECT_EQ(values_of(argv, "-chardev"),
            (std::vector<std::string>{"file,id=console,path=", "socket,id=share0,path=/d/fs0.sock",
                                      "socket,id=share1,path=/d/f,,s1.sock"}));
  EXPECT_EQ(values_of(argv, "-device"),
            (std::vector<std::string>{"vhost-user-fs-pci,chardev=share0,tag=gpurent",
                                      "vhost-user-fs-pci,chardev=share1,tag=vol0"}));
  EXPECT_EQ(values_of(argv, "-fsdev"), std::vector<std::string>{}) << "no 9p";

  const auto without_shares = qemu_command(
      {.name = "x", .share_transport = VmShares::kVirtioFs, .network = false, .qmp_socket = "/q"});
  EXPECT_EQ(values_of(without_shares, "-object"), std::vector<std::string>{})
      << "no folder, no shared memory";
}

TEST(VirtiofsdCommand, ItServesOneFolderConfinedWithoutDevicesOrXattrs) {
  const auto argv = virtiofsd_command({.binary = "/usr/lib/qemu/virtiofsd",
                                       .socket = "/d/fs0.sock",
                                       .directory = "/var/lib/gpurent/volumes/v-1",
                                       .log = "/d/virtiofsd.log"});
  EXPECT_EQ(argv.front(), "/usr/lib/qemu/virtiofsd");
  EXPECT_NE(std::ranges::find(argv, "--fd=3"), argv.end()) << "the agent's socket";
  EXPECT_EQ(values_of(argv, "-o"),
            (std::vector<std::string>{"source=/tmp", "sandbox=namespace", "modcaps=-mknod:-setfcap",
                                      "no_xattr", "log_level=warn"}));
}

// A node whose resolv.conf names only systemd-resolved's stub on its loopback (Ubuntu's) gives its
// guests the upstream resolvers systemd-resolved lists; a plain resolv.conf gives its own.
TEST(GuestNameservers, LoopbackResolversAreReplacedBySystemdResolvedsUpstreams) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpurent-resolv-test-" + std::to_string(os_random_seed()));
  fs::create_directories(dir);
  ASSERT_TRUE(write_file_atomic(dir / "stub.conf",
                                "# managed by systemd-resolved\nnameserver 127.0.0.53\n"
                                "options edns0 trust-ad\nsearch example.internal\n"));
  ASSERT_TRUE(write_file_atomic(dir / "upstream.conf",
                                "nameserver 10.1.0.2\nnameserver 2001:db8::53\n"
                                "nameserver not-an-address\nnameserver 10.1.0.3\n"
                                "nameserver 10.1.0.4\nnameserver 10.1.0.5\n"));
  ASSERT_TRUE(write_file_atomic(dir / "plain.conf", "nameserver 192.0.2.53\n"));
  EXPECT_EQ(guest_nameservers(dir / "stub.conf", dir / "upstream.conf"),
            (std::vector<std::string>{"10.1.0.2", "10.1.0.3", "10.1.0.4"}))
      << "IPv4 only, at most three";
  EXPECT_EQ(guest_nameservers(dir / "plain.conf", dir / "upstream.conf"),
            std::vector<std::string>{"192.0.2.53"});
  EXPECT_EQ(guest_nameservers(dir / "stub.conf", dir / "missing.conf"), std::vector<std::string>{})
      << "no usable resolver: passt is left to say so";
  fs::remove_all(dir);
}

// The test image's kernel and initrd (scripts/vm-test-image.sh); `make test` requires them.
std::optional<fs::path> test_image() {
  const char* dir = std::getenv("GPURENT_TEST_VM_IMAGE");
  if (dir == nullptr || !fs::exists(fs::path(dir) / "vmlinuz")) return std::nullopt;
  return fs::path(dir);
}

// Boots the test image under TCG with a host folder shared in over `shares`; the guest reads the
// host's file, writes its own, gives it to uid 1234, tries to make a device file, and exits 3.
void boot_with_a_host_folder(VmShares shares) {
  const auto image = test_image();
  if (!image) {
    if (std::getenv("GPURENT_REQUIRE_VM") != nullptr) FAIL() << "GPURENT_TEST_VM_IMAGE is not set";
    GTEST_SKIP() << "no VM test image (GPURENT_TEST_VM_IMAGE=$(scripts/vm-test-image.sh))";
  }
  const fs::path dir =
      fs::path("/tmp") / ("gpurent-vm-test-" + std::to_string(os_random_seed() % 1'000'000));
  fs::create_directories(dir / "share");
  // Only the node's root enters it (as the agent's data directory): not virtiofsd's ids.
  fs::permissions(dir, fs::perms::owner_all);
  std::ofstream(dir / "share" / "in.txt") << "from the host\n";
  // What the initrd's /init runs: the command, base64 on the kernel's command line.
  const std::string command =
      "cat /data/in.txt; echo from-the-guest > /data/out.txt; chown 1234:1234 /data/out.txt; "
      "mknod /data/null c 1 3; exit 3";
  const auto encoded = run_tool({.argv = {"sh", "-c", "printf %s \"$0\" | base64 -w0", command}});
  ASSERT_TRUE(encoded);
  VmMachine machine{.name = "i-boot.1",
                    .accelerator = VmAccelerator::kTcg,
                    .memory_mb = 256,
                    .kernel = *image / "vmlinuz",
                    .initrd = *image / "initrd.gz",
                    .kernel_args = fmt::format("console=ttyS0 quiet panic=-1 gpurent.sharefs={} "
                                               "gpurent.shares=data:/data gpurent.cmd={}",
                                               guest_fs_type(shares), encoded->output),
                    .share_transport = shares,
                    .shares = {{.tag = "data", .directory = dir / "share"}},
                    .network = false,
                    .serial_log = dir / "console.log",
                    .qmp_socket = dir / "qmp.sock"};
  if (shares == VmShares::kVirtioFs) {
    machine.shares[0].socket = dir / "fs0.sock";
    const VirtiofsShare share{.socket = machine.shares[0].socket,
                              .directory = machine.shares[0].directory,
                              .log = dir / "virtiofsd.log",
                              .guest_ids = kDefaultGuestIds};
    ASSERT_TRUE(give_folder(share.directory, share.guest_ids, share.guest_ids));
    const auto started = start_virtiofsd(share);
    ASSERT_TRUE(started) << started.error().message;
  }
  const auto ran = run_tool({.argv = qemu_command(machine), .timeout = std::chrono::seconds(120)});
  ASSERT_TRUE(ran) << "qemu-system-x86_64 is not installed (scripts/install-deps.sh test)";
  EXPECT_FALSE(ran->timed_out) << ran->output;
  const std::string console = read_file(dir / "console.log").value_or("");
  EXPECT_NE(console.find("from the host"), std::string::npos) << console;
  EXPECT_NE(console.find("GPURENT_EXIT 3"), std::string::npos) << console;
  EXPECT_EQ(read_file(dir / "share" / "out.txt").value_or(""), "from-the-guest\n");
  struct stat out {};
  ASSERT_EQ(::stat((dir / "share" / "out.txt").c_str(), &out), 0);
  // 9p keeps the guest's owner in an xattr, the file staying QEMU's; virtio-fs makes it the file's,
  // as one of the node's guest ids (no user of the node's).
  EXPECT_EQ(out.st_uid, shares == VmShares::kVirtioFs ? kDefaultGuestIds + 1234 : ::geteuid());
  EXPECT_FALSE(fs::is_character_file(dir / "share" / "null")) << "no device file on the node";
  if (shares == VmShares::kVirtioFs) {
    EXPECT_NE(console.find("mknod: /data/null: Operation not permitted"), std::string::npos)
        << console;
    // virtiofsd ends with its QEMU (once it has seen QEMU hang up).
    std::optional<ToolOutput> left;
    for (int i = 0; i < 100; ++i) {
      left = run_tool({.argv = {"pgrep", "-f", (dir / "fs0.sock").string()}});
      if (!left || left->output.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(left) << "pgrep cannot be run";
    EXPECT_EQ(left->output, "");
  }
  fs::remove_all(dir);
}

TEST(QemuBoot, AKernelAndInitrdRunTheCommandWithAHostFolderUnderTcg) {
  boot_with_a_host_folder(VmShares::k9p);
}

TEST(QemuBoot, AHostFolderOverVirtioFs) {
  if (::geteuid() != 0) GTEST_SKIP() << "virtiofsd maps the guest ids: it needs root";
  boot_with_a_host_folder(VmShares::kVirtioFs);
}

}  // namespace
}  // namespace gpurent::agent
