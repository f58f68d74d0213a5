#include "agent/vm/passt.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "agent/runtime/workload_files.h"
#include "agent/test_util.h"
#include "agent/vm/unix_socket.h"
#include "common/files.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;
using testing::eventually;
using testing::TempDir;

constexpr uint32_t kQemuUser = 1234567;

// Whether Debian's passt is installed (scripts/install-deps.sh installs it for the tests).
bool passt_installed() {
  std::error_code ec;
  return fs::exists("/usr/bin/passt", ec);
}

// The pid of the passt that serves `socket`; 0 when none does.
pid_t passt_serving(const fs::path& socket) {
  return testing::process_with("passt", socket.string());
}

TEST(StartPasst, SaysWhenPasstCannotBeRun) {
  TempDir dir;
  const auto started = start_passt({.binary = (dir.path() / "no-passt").string(),
                                    .socket = dir.path() / "net.sock",
                                    .log = dir.path() / "passt.log"});
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, "vm_start_failed");
  EXPECT_NE(started.error().message.find("passt cannot be run"), std::string::npos)
      << started.error().message;
}

TEST(StartPasst, GivesPasstsOwnWordsWhenItEndsWithoutItsSocket) {
  TempDir dir;
  const fs::path fake = dir.path() / "passt";
  std::ofstream(fake) << "#!/bin/sh\necho \"Failed to bind port 40001: Address in use\" >&2\n"
                         "exit 1\n";
  fs::permissions(fake, fs::perms::owner_all);
  const auto started = start_passt({.binary = fake.string(),
                                    .socket = dir.path() / "net.sock",
                                    .log = dir.path() / "passt.log"});
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("passt did not start the VM's network: Failed to bind "
                                         "port 40001"),
            std::string::npos)
      << started.error().message;
}

TEST(StartPasst, IsKilledWhenItMakesNoSocketInTime) {
  TempDir dir;
  const fs::path fake = dir.path() / "passt";
  const fs::path pid_file = dir.path() / "pid";
  std::ofstream(fake) << fmt::format("#!/bin/sh\necho $$ > {}\necho waiting\nexec sleep 60\n",
                                     pid_file.string());
  fs::permissions(fake, fs::perms::owner_all);
  const auto started = start_passt(
      {.binary = fake.string(), .socket = dir.path() / "net.sock", .log = dir.path() / "passt.log"},
      std::chrono::milliseconds(300));
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("passt made no socket within 300 ms: waiting"),
            std::string::npos)
      << started.error().message;
  // The sleep it became was killed, not left behind.
  const pid_t pid = std::atoi(read_file(pid_file, 64).value_or("0").c_str());
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(eventually([&] {
    const auto stat = read_proc_stat(pid);
    return !stat || stat->state == 'Z';
  }));
}

// Beside a confined QEMU, passt runs as QEMU's user and reaches, of the data directory (0700, as
// an agent's is), only QEMU's directory, where it makes its socket; a hang-up ends it.
TEST(StartPasst, AsQemusUserMakesItsSocketInQemusDirectoryOnly) {
  if (!passt_installed()) {
    if (std::getenv("GPURENT_REQUIRE_VM") != nullptr) FAIL() << "passt is not installed";
    GTEST_SKIP() << "passt is not installed";
  }
  if (::geteuid() != 0) GTEST_SKIP() << "passt runs as another user: it needs root";
  TempDir dir;
  const fs::path data = dir.path() / "data";
  const fs::path qemu_dir = data / "vms" / "i-1.1" / "qemu";
  fs::create_directories(qemu_dir);
  fs::permissions(data, fs::perms::owner_all);
  ASSERT_EQ(::chown(qemu_dir.c_str(), kQemuUser, kQemuUser), 0);
  const PasstNetwork network{
      .socket = qemu_dir / "net.sock",
      .log = data / "vms" / "i-1.1" / "passt.log",
      .run_as = RunAs{.uid = kQemuUser, .gid = kQemuUser, .groups = {kQemuUser}},
      // The temporary directory above (0700 too) covers it, as qemu_covers would.
      .covers = {{.directory = dir.path(), .reveal = {qemu_dir}}}};
  const auto started = start_passt(network);
  ASSERT_TRUE(started) << started.error().message;
  struct stat socket {};
  ASSERT_EQ(::stat(network.socket.c_str(), &socket), 0);
  EXPECT_TRUE(S_ISSOCK(socket.st_mode));
  EXPECT_EQ(socket.st_uid, kQemuUser) << "made by passt as QEMU's user";
  // Once its socket listens, passt forks into a PID namespace of its own (PID 1 there), where it
  // sees no QEMU of its user's, and its first process ends.
  pid_t pid = 0;
  std::string status;
  EXPECT_TRUE(eventually([&] {
    pid = passt_serving(network.socket);
    status = read_file(fmt::format("/proc/{}/status", pid), 1 << 16).value_or("");
    return pid > 0 && status.find(fmt::format("NSpid:\t{}\t1\n", pid)) != std::string::npos;
  })) << status;
  EXPECT_NE(status.find(fmt::format("Uid:\t{0}\t{0}\t{0}\t{0}\n", kQemuUser)), std::string::npos)
      << status;
  EXPECT_NE(status.find("NoNewPrivs:\t1\n"), std::string::npos) << status;
  hang_up(network.socket);
  EXPECT_TRUE(eventually([&] { return passt_serving(network.socket) == 0; }))
      << "one client (--one-off), then it ends";

  // A directory QEMU's user may not write: passt cannot make its socket, and the start says so.
  ASSERT_EQ(::chown(qemu_dir.c_str(), 0, 0), 0);
  const auto refused = start_passt(network, std::chrono::seconds(10));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "vm_start_failed");
  EXPECT_EQ(passt_serving(network.socket), 0);
}

}  // namespace
}  // namespace gpurent::agent
