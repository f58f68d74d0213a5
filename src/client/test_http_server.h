// For tests only: a scripted HTTP/1.1 server on 127.0.0.1, port 0.
//
// Each accepted connection gets its own thread, which reads requests (Content-Length bodies only)
// and hands each to the test's handler together with the connection, so the handler decides the
// exact bytes on the wire: a normal answer, a chunked stream written in steps, silence, or a close
// without an answer. Plain POSIX sockets keep this header cheap to compile. The destructor shuts
// every socket down and joins every thread.
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gpurent::client::test_support {

class TestHttpServer {
 public:
  struct Request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
    int connection = 0;  // 1 for the first accepted connection, 2 for the next, ...
  };

  class Connection {
   public:
    explicit Connection(int fd) : fd_(fd) {}
    void write(std::string_view bytes) {
      while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) return;
        bytes.remove_prefix(static_cast<size_t>(n));
      }
    }
    // Ends the connection from the server's side (the client sees EOF).
    void close() {
      ::shutdown(fd_, SHUT_RDWR);
      closed_ = true;
    }
    bool closed() const { return closed_; }

   private:
    int fd_;
    bool closed_ = false;
  };

  using Handler = std::function<void(const Request&, Connection&)>;

  explicit TestHttpServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      std::abort();
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~TestHttpServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(listen_fd_);
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      for (const int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
      threads.swap(threads_);
    }
    for (auto& thread : threads) thread.join();
  }

  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }

  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  int connections() const { return connections_.load(); }

  static std::string response(int status, std::string_view content_type, std::string_view body,
                              std::string_view extra_headers = "") {
    return fmt::format("HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}\r\n{}",
                       status, content_type, body.size(), extra_headers, body);
  }
  static std::string chunk(std::string_view data) {
    return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      const int number = ++connections_;
      std::lock_guard lock(mutex_);
      open_fds_.push_back(fd);
      threads_.emplace_back([this, fd, number] { serve(fd, number); });
    }
  }

  void serve(int fd, int number) {
    Connection connection(fd);
    std::string pending;
    while (!connection.closed()) {
      Request request;
      if (!read_request(fd, pending, request)) break;
      request.connection = number;
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
      }
      handler_(request, connection);
    }
    std::lock_guard lock(mutex_);
    std::erase(open_fds_, fd);
    ::close(fd);
  }

  static bool fill(int fd, std::string& pending) {
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    pending.append(buffer, static_cast<size_t>(n));
    return true;
  }

  static bool read_request(int fd, std::string& pending, Request& request) {
    size_t header_end;
    while ((header_end = pending.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(fd, pending)) return false;
    }
    const std::string head = pending.substr(0, header_end);
    pending.erase(0, header_end + 4);
    size_t line_end = head.find("\r\n");
    const std::string request_line = head.substr(0, line_end);
    const size_t first_space = request_line.find(' ');
    const size_t second_space = request_line.find(' ', first_space + 1);
    request.method = request_line.substr(0, first_space);
    request.target = request_line.substr(first_space + 1, second_space - first_space - 1);
    while (line_end != std::string::npos) {
      const size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line = head.substr(start, line_end - start);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const size_t value_start = line.find_first_not_of(' ', colon + 1);
      request.headers[name] = value_start == std::string::npos ? "" : line.substr(value_start);
    }
    const auto length = request.headers.find("content-length");
    const size_t body_size = length == request.headers.end() ? 0 : std::stoul(length->second);
    while (pending.size() < body_size) {
      if (!fill(fd, pending)) return false;
    }
    request.body = pending.substr(0, body_size);
    pending.erase(0, body_size);
    return true;
  }

  Handler handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::vector<Request> requests_;
};

}  // namespace gpurent::client::test_support
