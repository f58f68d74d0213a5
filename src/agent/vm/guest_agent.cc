#include "agent/vm/guest_agent.h"

#include <fmt/format.h>
#include <poll.h>
#include <sodium.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "agent/vm/unix_socket.h"
#include "common/json.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

using Clock = std::chrono::steady_clock;

// How long qemu-ga may take over one answer (a guest under TCG is slow, not this slow).
constexpr auto kAnswerTimeout = std::chrono::seconds(10);
constexpr auto kPollInterval = std::chrono::milliseconds(50);
// How long a killed command's output is waited for.
constexpr auto kKillGrace = std::chrono::seconds(2);
// Two streams of 16 MiB, base64, and the JSON around them.
constexpr size_t kMaxAnswerBytes = 48 << 20;
constexpr char kDelimiter = '\xff';  // what guest-sync-delimited's answer follows
// What one guest-file-write carries (before base64).
constexpr size_t kFilePiece = 1 << 20;

// Who is at the other end of the socket: qemu-ga in the guest, or QEMU's own monitor (QMP),
// which speaks the same protocol but greets its client and needs no sync.
enum class Peer { kGuestAgent, kMonitor };

Error unavailable(Peer peer, std::string_view why) {
  if (peer == Peer::kMonitor) {
    return {ErrorKind::kUnavailable, "vm_monitor_unavailable",
            fmt::format("QEMU's monitor does not answer ({})", why)};
  }
  return {ErrorKind::kUnavailable, "guest_agent_unavailable",
          fmt::format("the VM's guest agent does not answer ({}): the guest may still be booting, "
                      "or its image has no qemu-ga",
                      why)};
}
Error protocol_error(std::string_view what) {
  return {ErrorKind::kInternal, "guest_agent_error", fmt::format("qemu-ga: {}", what)};
}

// One session with qemu-ga (synchronised) or QEMU's monitor (its capabilities negotiated): a
// connection for one command.
class Session {
 public:
  static Result<Session> open(const std::filesystem::path& socket, Peer peer = Peer::kGuestAgent) {
    // The socket lies in QEMU's directory, which a confined QEMU's user controls: no link there
    // leads the agent to another VM's socket (connect_unix).
    auto connected = connect_unix(socket);
    if (!connected) return fail(unavailable(peer, connected.error().message));
    Session session(*connected, peer);
    if (peer == Peer::kMonitor) {
      GPURENT_TRY(greeting, session.read_answer(Clock::now() + kAnswerTimeout));
      if (!greeting.contains("QMP")) return fail(protocol_error("no QMP greeting"));
      GPURENT_CHECK(session.call("qmp_capabilities", Json::object()));
    } else {
      GPURENT_CHECK(session.sync());
    }
    return session;
  }
  Session(Session&& other) noexcept : fd_(std::exchange(other.fd_, -1)), peer_(other.peer_) {
    buffer_ = std::move(other.buffer_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  Session& operator=(Session&&) = delete;
  ~Session() {
    if (fd_ >= 0) ::close(fd_);
  }

  // The command's "return"; qemu-ga's "error" as guest_agent_error with its description.
  Result<Json> call(std::string_view command, Json arguments) {
    GPURENT_CHECK(send({{"execute", command}, {"arguments", std::move(arguments)}}));
    const auto deadline = Clock::now() + kAnswerTimeout;
    GPURENT_TRY(answer, read_answer(deadline));
    while (answer.contains("event")) {  // the monitor's events come between answers
      GPURENT_TRY(next, read_answer(deadline));
      answer = std::move(next);
    }
    if (answer.contains("error")) {
      return fail(protocol_error(
          fmt::format("{}: {}", command, answer["error"].value("desc", answer["error"].dump()))));
    }
    if (!answer.contains("return")) return fail(protocol_error("an answer without a return"));
    return answer["return"];
  }

 private:
  Session(int fd, Peer peer) : fd_(fd), peer_(peer) {}

  Status send(const Json& message) {
    const std::string text = message.dump() + "\n";
    size_t sent = 0;
    while (sent < text.size()) {
      const ssize_t n = ::send(fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail(unavailable(peer_, std::strerror(errno)));
      sent += static_cast<size_t>(n);
    }
    return {};
  }

  // More bytes into buffer_, waiting until the deadline.
  Status receive(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return fail(unavailable(peer_, "no answer in time"));
    pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(left.count()));
    if (polled < 0 && errno == EINTR) return {};
    if (polled <= 0) return fail(unavailable(peer_, "no answer in time"));
    char chunk[64 * 1024];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) return {};
    if (n <= 0) return fail(unavailable(peer_, "the connection closed"));
    if (buffer_.size() + static_cast<size_t>(n) > kMaxAnswerBytes) {
      return fail(protocol_error("an answer longer than any it gives"));
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return {};
  }

  Result<Json> read_answer(Clock::time_point deadline) {
    size_t end = 0;
    while ((end = buffer_.find('\n')) == std::string::npos) GPURENT_CHECK(receive(deadline));
    const std::string line = buffer_.substr(0, end);
    buffer_.erase(0, end + 1);
    Json answer = Json::parse(line, nullptr, false);
    if (!answer.is_object()) return fail(protocol_error("an answer that is not a JSON object"));
    return answer;
  }

  // guest-sync-delimited: whatever precedes the delimiter is an earlier client's, and so is any
  // answer that does not carry this session's id.
  Status sync() {
    const int64_t id = static_cast<int64_t>(os_random_seed() & 0x7fffffff);
    GPURENT_CHECK(send({{"execute", "guest-sync-delimited"}, {"arguments", {{"id", id}}}}));
    const auto deadline = Clock::now() + kAnswerTimeout;
    size_t at = 0;
    while ((at = buffer_.find(kDelimiter)) == std::string::npos) {
      buffer_.clear();
      GPURENT_CHECK(receive(deadline));
    }
    buffer_.erase(0, at + 1);
    for (;;) {
      GPURENT_TRY(answer, read_answer(deadline));
      if (answer.value("return", Json()) == id) return {};
    }
  }

  int fd_ = -1;
  Peer peer_;
  std::string buffer_;
};

Result<std::string> decoded(const Json& status, const char* key) {
  const auto it = status.find(key);
  if (it == status.end()) return std::string();
  if (!it->is_string()) return fail(protocol_error(fmt::format("{} is not base64 text", key)));
  const auto& text = it->get_ref<const std::string&>();
  std::string bytes(text.size() / 4 * 3 + 3, '\0');
  size_t length = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(bytes.data()), bytes.size(), text.data(),
                        text.size(), nullptr, &length, nullptr,
                        sodium_base64_VARIANT_ORIGINAL) != 0) {
    return fail(protocol_error(fmt::format("{} is not base64", key)));
  }
  bytes.resize(length);
  return bytes;
}

Result<Json> exec_status(const std::filesystem::path& socket, int64_t pid) {
  GPURENT_TRY(session, Session::open(socket));
  return session.call("guest-exec-status", {{"pid", pid}});
}

// Polls until the command exits (true, with its status and output in result) or the deadline.
Result<bool> wait_for_exit(const std::filesystem::path& socket, int64_t pid,
                           Clock::time_point deadline, GuestExecResult& result) {
  for (;;) {
    GPURENT_TRY(status, exec_status(socket, pid));
    if (status.value("exited", false)) {
      result.exit_code =
          status.contains("signal") ? 128 + status.value("signal", 0) : status.value("exitcode", 0);
      GPURENT_TRY(out, decoded(status, "out-data"));
      GPURENT_TRY(err, decoded(status, "err-data"));
      result.out = std::move(out);
      result.err = std::move(err);
      return true;
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace

Result<GuestExecResult> guest_exec(const std::filesystem::path& socket,
                                   const std::vector<std::string>& argv,
                                   const std::map<std::string, std::string>& env,
                                   std::chrono::milliseconds timeout) {
  if (argv.empty()) return fail(Error::invalid("invalid_command", "the command is empty"));
  Json variables = Json::array();
  for (const auto& [name, value] : env) variables.push_back(name + "=" + value);
  Json started;
  {
    // A session per command: qemu-ga serves one client at a time, so another exec in the same VM
    // gets its turn between this one's polls.
    GPURENT_TRY(session, Session::open(socket));
    GPURENT_TRY(
        answer,
        session.call("guest-exec", {{"path", argv.front()},
                                    {"arg", std::vector<std::string>(argv.begin() + 1, argv.end())},
                                    {"env", std::move(variables)},
                                    {"capture-output", true}}));
    started = std::move(answer);
  }
  const int64_t pid = started.value("pid", int64_t{-1});
  if (pid <= 0) return fail(protocol_error("guest-exec gave no pid"));
  GuestExecResult result;
  GPURENT_TRY(ended, wait_for_exit(socket, pid, Clock::now() + timeout, result));
  if (ended) return result;
  // Killed in the guest by its guest pid (the shell's own kill: no PATH needed), then its output
  // so far collected.
  {
    GPURENT_TRY(session, Session::open(socket));
    GPURENT_CHECK(session.call("guest-exec", {{"path", "/bin/sh"},
                                              {"arg", {"-c", fmt::format("kill -KILL {}", pid)}},
                                              {"env", Json::array()}}));
  }
  GPURENT_CHECK(wait_for_exit(socket, pid, Clock::now() + kKillGrace, result));
  result.exit_code = 124;
  result.timed_out = true;
  return result;
}

Status guest_write_file(const std::filesystem::path& socket, const std::filesystem::path& from,
                        const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) {
    return fail({ErrorKind::kInternal, "copy_failed",
                 fmt::format("cannot read {}: {}", from.string(), std::strerror(errno))});
  }
  GPURENT_TRY(session, Session::open(socket));
  GPURENT_TRY(opened, session.call("guest-file-open", {{"path", to}, {"mode", "w"}}));
  if (!opened.is_number_integer()) return fail(protocol_error("guest-file-open gave no handle"));
  const int64_t handle = opened.get<int64_t>();
  std::string piece(kFilePiece, '\0');
  std::string text(sodium_base64_ENCODED_LEN(kFilePiece, sodium_base64_VARIANT_ORIGINAL), '\0');
  Status written;
  while (written && in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    const auto length = static_cast<size_t>(in.gcount());
    if (length == 0) break;
    sodium_bin2base64(text.data(), text.size(),
                      reinterpret_cast<const unsigned char*>(piece.data()), length,
                      sodium_base64_VARIANT_ORIGINAL);
    auto wrote = session.call(
        "guest-file-write",
        {{"handle", handle},
         {"buf-b64", std::string_view(
                         text.data(),
                         sodium_base64_ENCODED_LEN(length, sodium_base64_VARIANT_ORIGINAL) - 1)}});
    if (!wrote) {
      written = fail(wrote.error());
    } else if (wrote->value("count", int64_t{-1}) != static_cast<int64_t>(length)) {
      written = fail(protocol_error("guest-file-write wrote less than it was given"));
    }
  }
  if (written && in.bad()) {
    written = fail({ErrorKind::kInternal, "copy_failed",
                    fmt::format("cannot read {}: {}", from.string(), std::strerror(errno))});
  }
  // Closed whatever happened: qemu-ga keeps a handle until it is.
  const auto closed = session.call("guest-file-close", {{"handle", handle}});
  GPURENT_CHECK(written);
  return closed ? Status() : Status(fail(closed.error()));
}

Status monitor_command(const std::filesystem::path& socket, std::string_view command) {
  GPURENT_TRY(session, Session::open(socket, Peer::kMonitor));
  GPURENT_CHECK(session.call(command, Json::object()));
  return {};
}

}  // namespace gpurent::agent
