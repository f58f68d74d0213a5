// For tests only: a real Podman serving the Docker Engine API on a unix socket in a temp dir, with
// storage of its own (vfs), cgroupfs, runc, and one tiny image built from the host's static
// busybox (`localhost/gpurent-test:busybox`, with sh, sleep, echo, cat, env, ...; its own command
// prints "image default").
//
// `make test` installs podman, runc and busybox-static (scripts/install-deps.sh), so a test that
// finds Podman missing fails with the reason; it is never skipped silently.
//
// The service lives as long as the PodmanService object (one per test suite: ctest runs every test
// in a process of its own). Two services at once on one host get in each other's way (Podman's
// locks are host-wide), so each holds an exclusive lock on /tmp/gpurent-podman.lock while it
// lives: parallel test processes take turns. Containers are removed before the service stops, so
// no mount is left behind and the directory can be deleted; it is kept when the service failed to
// start, for its logs.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "agent/runtime/docker_api.h"

namespace gpurent::agent::testing {

class PodmanService {
 public:
  static constexpr const char* kImage = "localhost/gpurent-test:busybox";

  // Starts the service; nullptr with the reason in *why when it cannot run here.
  static std::unique_ptr<PodmanService> start(std::string* why) {
    auto service = std::unique_ptr<PodmanService>(new PodmanService());
    *why = service->boot();
    if (!why->empty()) {
      service->keep_dir_ = true;
      return nullptr;
    }
    return service;
  }

  ~PodmanService() {
    if (pid_ > 0) {
      podman("rm --all --force --time 0");
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    std::error_code ec;
    if (!dir_.empty() && !keep_dir_) std::filesystem::remove_all(dir_, ec);
    if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
  }
  PodmanService(const PodmanService&) = delete;
  PodmanService& operator=(const PodmanService&) = delete;

  const std::string& socket_path() const { return socket_; }
  const std::filesystem::path& dir() const { return dir_; }

  // Runs `podman ARGS` on this service's storage; its exit status.
  int podman(const std::string& args) const {
    const std::string command =
        environment() + " podman " + args + " >>" + (dir_ / "podman.log").string() + " 2>&1";
    return std::system(command.c_str());
  }

 private:
  PodmanService() = default;

  std::string environment() const {
    return "CONTAINERS_CONF=" + (dir_ / "containers.conf").string() +
           " CONTAINERS_STORAGE_CONF=" + (dir_ / "storage.conf").string();
  }

  // "" when the service runs and the image is there; else why not.
  std::string boot() {
    if (std::system("command -v podman >/dev/null 2>&1") != 0) {
      return "podman is not installed (scripts/install-deps.sh test installs it)";
    }
    if (!std::filesystem::exists("/bin/busybox")) {
      return "/bin/busybox is missing (scripts/install-deps.sh test installs busybox-static)";
    }
    lock_fd_ = ::open("/tmp/gpurent-podman.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX) != 0)
      return "cannot lock /tmp/gpurent-podman.lock";
    // Short: the socket path must fit in sockaddr_un.
    std::string pattern = "/tmp/gpurent-podman-XXXXXX";
    if (!::mkdtemp(pattern.data())) return "cannot create a temp dir";
    dir_ = pattern;
    socket_ = (dir_ / "podman.sock").string();
    std::ofstream(dir_ / "storage.conf") << "[storage]\ndriver = \"vfs\"\n"
                                         << "runroot = \"" << (dir_ / "run").string() << "\"\n"
                                         << "graphroot = \"" << (dir_ / "root").string() << "\"\n";
    // This machine refuses containers the host's rlimits: explicit ones, as the runtime sets.
    std::ofstream(dir_ / "containers.conf")
        << "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n"
        << "[engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n"
        << "runtime = \"runc\"\ntmp_dir = \"" << (dir_ / "tmp").string() << "\"\n"
        << "volume_path = \"" << (dir_ / "volumes").string() << "\"\n";
    if (std::string error = build_image(); !error.empty()) return error;

    pid_ = ::fork();
    if (pid_ < 0) return "fork failed";
    if (pid_ == 0) {
      const std::string log = (dir_ / "service.log").string();
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::setenv("CONTAINERS_CONF", (dir_ / "containers.conf").c_str(), 1);
      ::setenv("CONTAINERS_STORAGE_CONF", (dir_ / "storage.conf").c_str(), 1);
      const std::string uri = "unix://" + socket_;
      ::execlp("podman", "podman", "system", "service", "--time", "0", uri.c_str(),
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto client = DockerClient::open(socket_, std::chrono::seconds(2));
          client && client->ping()) {
        return "";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "podman system service did not answer within 60 s; see " +
           (dir_ / "service.log").string();
  }

  std::string build_image() const {
    const auto root = dir_ / "rootfs";
    std::filesystem::create_directories(root / "bin");
    std::filesystem::create_directories(root / "tmp");
    std::filesystem::create_directories(root / "proc");
    std::filesystem::create_directories(root / "dev");
    std::filesystem::create_directories(root / "sys");
    std::filesystem::create_directories(root / "etc");
    std::filesystem::copy_file("/bin/busybox", root / "bin" / "busybox");
    for (const char* tool : {"sh", "sleep", "echo", "cat", "env", "ls", "id", "ps", "kill", "true",
                             "false", "nproc", "head", "wc", "grep", "touch", "mkdir", "trap"}) {
      std::filesystem::create_symlink("busybox", root / "bin" / tool);
    }
    std::ofstream(root / "etc" / "passwd") << "root:x:0:0:root:/root:/bin/sh\n";
    const std::string tar =
        "tar -C " + root.string() + " -cf " + (dir_ / "rootfs.tar").string() + " . >/dev/null 2>&1";
    if (std::system(tar.c_str()) != 0) return "cannot build the busybox root file system";
    if (podman("import --change 'ENV PATH=/bin' --change 'CMD [\"echo\", \"image default\"]' " +
               (dir_ / "rootfs.tar").string() + " " + kImage) != 0) {
      return "podman import failed; see " + (dir_ / "podman.log").string();
    }
    return "";
  }

  std::filesystem::path dir_;
  std::string socket_;
  pid_t pid_ = 0;
  int lock_fd_ = -1;
  bool keep_dir_ = false;
};

}  // namespace gpurent::agent::testing
