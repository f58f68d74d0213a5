// Exec through the guest agent against a stand-in qemu-ga on a unix socket, speaking its protocol:
// each session is synchronised past whatever an earlier client left (the 0xFF delimiter), the
// command starts with its argv and env, its status is polled until it exits and its output is
// decoded; at the deadline it is killed by its guest pid; an error of qemu-ga's and a socket with
// nobody behind it are errors, not hangs.
#include "agent/vm/guest_agent.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "agent/vm/unix_socket.h"
#include "common/json.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

std::string base64(std::string_view bytes) {
  std::string text(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(text.data(), text.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  text.resize(std::strlen(text.c_str()));
  return text;
}

// qemu-ga as far as exec goes: the command "exits" (3, with output) after `polls_before_exit`
// status calls; never, when negative. What it was asked is kept.
class FakeGuestAgent {
 public:
  explicit FakeGuestAgent(int polls_before_exit) : polls_before_exit_(polls_before_exit) {
    socket_ = fs::path("/tmp") / ("gqga-" + std::to_string(os_random_seed() % 1'000'000));
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, socket_.c_str());
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(listener_, 8), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeGuestAgent() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
    fs::remove(socket_);
  }
  const fs::path& socket() const { return socket_; }
  std::vector<Json> execs() {
    std::lock_guard lock(mutex_);
    return execs_;
  }

 private:
  void serve() {
    for (;;) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      // An earlier client's answer, never read: the sync must skip it.
      send(client, "{\"return\": {}}\n");
      std::string buffer;
      char chunk[4096];
      ssize_t n = 0;
      while ((n = ::recv(client, chunk, sizeof chunk, 0)) > 0) {
        buffer.append(chunk, static_cast<size_t>(n));
        size_t end = 0;
        while ((end = buffer.find('\n')) != std::string::npos) {
          answer(client, Json::parse(buffer.substr(0, end)));
          buffer.erase(0, end + 1);
        }
      }
      ::close(client);
    }
  }
  void answer(int client, const Json& request) {
    const std::string command = request["execute"];
    const Json& arguments = request["arguments"];
    if (command == "guest-sync-delimited") {
      send(client, "\xff" + Json{{"return", arguments["id"]}}.dump() + "\n");
    } else if (command == "guest-exec") {
      std::lock_guard lock(mutex_);
      execs_.push_back(arguments);
      if (arguments["path"] == "/no/such/program") {
        send(client,
             R"({"error": {"class": "GenericError", "desc": "Failed to execute child process"}})"
             "\n");
        return;
      }
      send(client, R"({"return": {"pid": 42}})"
                   "\n");
    } else if (command == "guest-exec-status") {
      const int polls = polls_++;
      if (polls_before_exit_ < 0 || polls < polls_before_exit_) {
        send(client, R"({"return": {"exited": false}})"
                     "\n");
        return;
      }
      send(client, Json{{"return",
                         {{"exited", true},
                          {"exitcode", 3},
                          {"out-data", base64("hi\n")},
                          {"err-data", base64("oops\n")}}}}
                           .dump() +
                       "\n");
    }
  }
  static void send(int client, const std::string& text) {
    ASSERT_EQ(::send(client, text.data(), text.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(text.size()));
  }

  const int polls_before_exit_;
  std::atomic<int> polls_{0};
  fs::path socket_;
  int listener_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Json> execs_;
};

TEST(GuestAgent, ACommandRunsWithItsArgvAndEnvAndItsOutputComesBackAtItsEnd) {
  FakeGuestAgent qga(2);
  const auto ran = guest_exec(qga.socket(), {"/bin/sh", "-c", "echo hi"}, {{"PATH", "/bin"}},
                              std::chrono::seconds(10));
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 3);
  EXPECT_EQ(ran->out, "hi\n");
  EXPECT_EQ(ran->err, "oops\n");
  EXPECT_FALSE(ran->timed_out);
  const auto execs = qga.execs();
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["path"], "/bin/sh");
  EXPECT_EQ(execs[0]["arg"], (Json{"-c", "echo hi"}));
  EXPECT_EQ(execs[0]["env"], (Json{"PATH=/bin"}));
  EXPECT_EQ(execs[0]["capture-output"], true);
}

TEST(GuestAgent, ACommandStillRunningAtTheDeadlineIsKilledInTheGuest) {
  FakeGuestAgent qga(-1);
  const auto ran = guest_exec(qga.socket(), {"sleep", "1000"}, {}, std::chrono::milliseconds(300));
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_TRUE(ran->timed_out);
  EXPECT_EQ(ran->exit_code, 124);
  const auto execs = qga.execs();
  ASSERT_EQ(execs.size(), 2u);
  EXPECT_EQ(execs[1]["arg"], (Json{"-c", "kill -KILL 42"}));
}

TEST(GuestAgent, ItsRefusalsAndAnAbsentAgentAreErrors) {
  FakeGuestAgent qga(0);
  const auto refused = guest_exec(qga.socket(), {"/no/such/program"}, {}, std::chrono::seconds(5));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "guest_agent_error");
  EXPECT_NE(refused.error().message.find("Failed to execute"), std::string::npos);
  const auto absent = guest_exec("/tmp/gqga-nobody-listens", {"true"}, {}, std::chrono::seconds(5));
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().code, "guest_agent_unavailable");
}

// The guest agent's socket lies in QEMU's directory, which a confined QEMU's user controls: a link
// put there in its place (to another VM's socket) or anything but a socket is not connected to.
TEST(GuestAgent, ALinkInPlaceOfItsSocketLeadsNowhere) {
  FakeGuestAgent qga(0);
  const fs::path link = qga.socket().string() + ".link";
  fs::create_symlink(qga.socket(), link);
  const auto through_link = guest_exec(link, {"true"}, {}, std::chrono::seconds(5));
  ASSERT_FALSE(through_link);
  EXPECT_EQ(through_link.error().code, "guest_agent_unavailable");
  EXPECT_NE(through_link.error().message.find("not a socket"), std::string::npos)
      << through_link.error().message;
  fs::remove(link);
  const fs::path file = qga.socket().string() + ".file";
  std::ofstream(file) << "not a socket";
  EXPECT_NE(connect_unix(file).error().message.find("not a socket"), std::string::npos);
  fs::remove(file);
  EXPECT_TRUE(guest_exec(qga.socket(), {"true"}, {}, std::chrono::seconds(5)))
      << "its own socket answers";
}

// A listener put in place of a socket that never accepts (its backlog full) does not hold the
// agent: the connect is given up on at its timeout.
TEST(ConnectUnix, GivesUpOnAListenerThatNeverAccepts) {
  const fs::path socket = fs::temp_directory_path() / fmt::format("gr-full-{}.sock", ::getpid());
  const auto listening = listen_unix(socket);
  ASSERT_TRUE(listening) << listening.error().message;
  std::vector<int> queued;
  for (int i = 0; i < 64; ++i) {  // fill the backlog
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const auto address = unix_address(socket);
    const bool waiting =
        ::connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) == 0;
    queued.push_back(fd);
    if (!waiting) break;
  }
  ASSERT_LT(queued.size(), 64u) << "the backlog never filled";
  const auto began = std::chrono::steady_clock::now();
  const auto connected = connect_unix(socket, std::chrono::milliseconds(200));
  const auto waited = std::chrono::steady_clock::now() - began;
  ASSERT_FALSE(connected);
  EXPECT_EQ(connected.error().code, "socket_unavailable");
  EXPECT_GE(waited, std::chrono::milliseconds(150)) << "it waited for the listener";
  EXPECT_LT(waited, std::chrono::seconds(3)) << "and gave up at its timeout";
  for (const int fd : queued) ::close(fd);
  ::close(*listening);
  fs::remove(socket);
}

}  // namespace
}  // namespace gpurent::agent
