// A helper program gets its output collected and nothing of the agent's but its environment:
// a descriptor the agent holds open (without close-on-exec) is not the tool's. A detached helper
// is no child of the agent's, has its own session, and writes its output to its log.
#include "agent/tool_run.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "common/files.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

TEST(ToolRun, TheToolSeesItsOutputAndNoneOfTheAgentsDescriptors) {
  const int held = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  ASSERT_GE(held, 3);
  const auto ran = run_tool(
      {.argv = {"sh", "-c", "echo \"$GREETING\"; ls /proc/$$/fd"}, .env = {{"GREETING", "hi"}}});
  ::close(held);
  ASSERT_TRUE(ran);
  EXPECT_FALSE(ran->timed_out);
  EXPECT_EQ(ran->output.substr(0, 3), "hi\n");
  // The shell's own descriptors: its input, output and error.
  EXPECT_EQ(ran->output.substr(3), "0\n1\n2\n") << ran->output;
  EXPECT_FALSE(run_tool({.argv = {"/nonexistent/tool"}}));
}

namespace fs = std::filesystem;

fs::path temp_log() {
  return fs::temp_directory_path() /
         ("gpurent-detached-" + std::to_string(os_random_seed()) + ".log");
}

// What the helper wrote to its log once it wrote `last`.
std::string wait_for_log(const fs::path& log, std::string_view last) {
  std::string said;
  for (int i = 0; i < 500 && said.find(last) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    said = read_file(log).value_or("");
  }
  return said;
}

TEST(SpawnDetached, TheHelperIsNoChildOfTheAgentsAndWritesToItsLog) {
  const fs::path log = temp_log();
  const int held = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  ASSERT_GE(held, 3);
  // It says what it holds, then waits for the test to end it.
  const auto pid = spawn_detached(
      {.argv = {"sh", "-c", "echo started; ls /proc/$$/fd; exec sleep 60"}, .log = log});
  ::close(held);
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_EQ(::waitpid(*pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "left to init, not the agent's to reap";
  EXPECT_EQ(wait_for_log(log, "2\n"), "started\n0\n1\n2\n") << "none of the agent's descriptors";
  EXPECT_NE(::getsid(*pid), ::getsid(0)) << "a session of its own";
  EXPECT_EQ(fs::status(log).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(::kill(*pid, SIGKILL), 0);

  const auto missing = spawn_detached({.argv = {"/nonexistent/helper"}, .log = log});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos)
      << missing.error().message;
  EXPECT_FALSE(spawn_detached({.argv = {"no-such-helper-on-path"}, .log = log}));
  EXPECT_FALSE(spawn_detached({.argv = {"true"}, .log = log.parent_path() / "no-such-dir" / "l"}));
  fs::remove(log);
}

// virtiofsd's way: root of a user namespace whose ids are a range of the host's, holding the
// socket the agent passed, with a folder below one only the node's root enters as its /tmp.
TEST(SpawnDetached, AHelperInAUserNamespaceOfItsOwnGetsThePassedDescriptorAndItsTmp) {
  if (::geteuid() != 0) GTEST_SKIP() << "mapping another id range into a namespace needs root";
  const fs::path log = temp_log();
  const fs::path locked = log.string() + ".d";
  fs::create_directories(locked / "folder");
  fs::permissions(locked, fs::perms::owner_all);
  ASSERT_TRUE(write_file_atomic(locked / "folder" / "hello", "from its tmp\n"));
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  const auto pid = spawn_detached(
      {.argv =
           {"sh", "-c",
            "id -u; id -G; tr -s ' ' < /proc/self/uid_map; head -c 6 <&3; echo; cat /tmp/hello; "
            "ls /proc/$$/fd; exec sleep 60"},
       .log = log,
       .pass_fd = pipe_fds[0],
       .private_tmp = locked / "folder",
       .user_namespace = IdMapping{.host_first = 1'200'000, .count = 65536}});
  ::close(pipe_fds[0]);
  ASSERT_TRUE(pid) << pid.error().message;
  ASSERT_EQ(::write(pipe_fds[1], "passed", 6), 6);
  ::close(pipe_fds[1]);
  EXPECT_EQ(wait_for_log(log, "3\n"), "0\n0\n 0 1200000 65536\npassed\nfrom its tmp\n0\n1\n2\n3\n")
      << "root there, no other group, its ids the host's range, descriptor 3 and its /tmp";
  EXPECT_EQ(read_file("/proc/self/mountinfo").value_or("").find(locked.string()), std::string::npos)
      << "its mount is its own, not the node's";
  const std::string status = read_file(fmt::format("/proc/{}/status", *pid)).value_or("");
  EXPECT_NE(status.find("Uid:\t1200000\t1200000\t1200000\t1200000"), std::string::npos)
      << "on the host, one of the range's ids: " << status;
  EXPECT_EQ(::kill(*pid, SIGKILL), 0);
  fs::remove(log);
  fs::remove_all(locked);
}

// QEMU's way: an unprivileged user for good, in a mount namespace where the agent's data
// directory is empty but for the paths it was given, which are the node's own; and so is another
// directory it could not pass (the guest image's, below root's home).
TEST(SpawnDetached, AHelperAsAUserReachesOnlyWhatIsRevealedOfCoveredDirectories) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing users and mounting need root";
  const fs::path log = temp_log();
  const fs::path locked = log.string() + ".d";
  fs::create_directories(locked / "vms" / "run");
  fs::permissions(locked, fs::perms::owner_all);
  ASSERT_TRUE(write_file_atomic(locked / "credential", "secret\n"));
  ASSERT_TRUE(write_file_atomic(locked / "disk", "disk\n"));
  ASSERT_EQ(::chown((locked / "vms" / "run").c_str(), 1234, 1234), 0);
  ASSERT_EQ(::chown((locked / "disk").c_str(), 1234, 1234), 0);
  const fs::path images = log.string() + ".images";
  fs::create_directories(images / "debian");
  fs::permissions(images, fs::perms::owner_all);
  ASSERT_TRUE(write_file_atomic(images / "debian" / "vmlinuz", "kernel\n"));
  fs::permissions(images / "debian" / "vmlinuz", fs::perms::others_read, fs::perm_options::add);
  const std::string dir = locked.string();
  ::setenv("GPURENT_TEST_SECRET", "the agent's", 1);  // none of the agent's environment reaches it
  const auto pid = spawn_detached(
      {.argv = {"sh", "-c",
                fmt::format("echo \"$ONLY ${{GPURENT_TEST_SECRET:-none}}\"; id -u; id -G; "
                            "cat {0}/disk {1}/debian/vmlinuz; "
                            "echo made > {0}/vms/run/made; "
                            "touch {0}/new 2>/dev/null || echo read-only; "
                            "grep NoNewPrivs /proc/self/status; ulimit -l; exec sleep 60",
                            dir, images.string())},
       .log = log,
       .run_as = RunAs{.uid = 1234, .gid = 1234, .groups = {1235}},
       .covers = {{.directory = locked, .reveal = {locked / "vms" / "run", locked / "disk"}},
                  {.directory = images, .reveal = {images / "debian" / "vmlinuz"}}},
       .memlock_bytes = 4 << 20,
       .environment = std::vector<std::string>{"ONLY=given"}});
  ::unsetenv("GPURENT_TEST_SECRET");
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_EQ(wait_for_log(log, "4096\n"),
            "given none\n1234\n1234 1235\ndisk\nkernel\nread-only\nNoNewPrivs:\t1\n4096\n")
      << "its user and groups, and what it was given of a directory it could not enter";
  EXPECT_EQ(read_file(locked / "vms" / "run" / "made").value_or(""), "made\n")
      << "what it writes there is the node's";
  const fs::path its_view = fmt::format("/proc/{}/root{}", *pid, dir);
  EXPECT_TRUE(fs::exists(its_view / "disk"));
  EXPECT_FALSE(fs::exists(its_view / "credential")) << "nothing it was not given is there";
  EXPECT_EQ(read_file("/proc/self/mountinfo").value_or("").find(dir), std::string::npos)
      << "its mounts are its own, not the node's";
  EXPECT_EQ(::kill(*pid, SIGKILL), 0);

  const auto outside =
      spawn_detached({.argv = {"true"},
                      .log = log,
                      .covers = {{.directory = locked / "vms", .reveal = {locked / "disk"}}}});
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("not below"), std::string::npos);
  fs::remove(log);
  fs::remove_all(locked);
  fs::remove_all(images);
}

}  // namespace
}  // namespace gpurent::agent
