// A typed client of the Docker Engine HTTP API (version 1.41), as Docker and Podman serve it on a
// unix socket: the part the container runtime needs (containers, their logs and stats, images,
// commands run in them).
//
// Each call is one HTTP exchange on a kept-alive connection (client::HttpClient over the socket),
// bounded by a timeout. Failures come back as values:
// - the engine cannot be reached: kUnavailable, code "engine_unavailable", naming the socket;
// - 404: kNotFound, "no_such_container" / "no_such_image";
// - 409: kConflict, "engine_conflict" (a name in use, removing a running container; Podman 4
//   answers these with 500 and a message that says so, mapped the same);
// - any other error status: kInternal, "engine_error";
// each message carries the engine's own explanation (its "message" field).
// Starting a started container or stopping a stopped one (304) succeeds.
//
// Every container it creates is hardened the same way, whatever the spec (create_body; the why is
// in docs/runtime.md, "Hardening"): not privileged, no-new-privileges (setuid programs and file
// capabilities grant nothing), every capability dropped but kContainerCapabilities, and, in every
// exec, no privileged mode either. create() refuses, before asking the engine, a bind mount of a
// host path that check_bind_source refuses (the engine's socket, the host's kernel and runtime
// directories).
//
// Not thread-safe: one owner (the agent's reconcile thread).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/http_client.h"
#include "common/result.h"

namespace gpurent::agent {

// How a container reaches its GPUs.
enum class GpuAccess {
  kNvidiaDeviceRequest,  // HostConfig.DeviceRequests, driver "nvidia", the GPUs' UUIDs
  kCdi,                  // CDI devices "nvidia.com/gpu=<UUID>" (Podman, Docker 25+)
};

// The capabilities a container keeps (after dropping all): what an ordinary image needs to run as
// root the way images expect: read, write, chown and chmod files it does not own (DAC_OVERRIDE,
// FOWNER, CHOWN, FSETID: package managers, tar, pip), switch to other users (SETUID, SETGID: apt
// drops to _apt, entrypoints use gosu or su) and signal their processes (KILL). Left out, among
// others: NET_RAW (raw sockets: spoofing on the host's network, which containers share),
// NET_BIND_SERVICE (ports below 1024 of that shared network are the node's own: sshd's, a web
// server's), NET_ADMIN, SYS_ADMIN, SYS_PTRACE, SYS_MODULE, MKNOD, SETPCAP, SETFCAP, SYS_CHROOT and
// AUDIT_WRITE.
inline constexpr std::array<std::string_view, 7> kContainerCapabilities = {
    "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID"};

struct BindMount {
  std::string host_path;
  std::string container_path;
  bool read_only = false;
};

struct Ulimit {
  std::string name;  // "nofile", "nproc", ...
  int64_t soft = 0;
  int64_t hard = 0;
};

struct ContainerSpec {
  std::string name;
  std::string image;
  std::vector<std::string> command;  // Cmd; empty: the image's
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> labels;
  std::string working_dir;  // empty: the image's
  std::vector<BindMount> mounts;
  std::vector<std::string> gpu_uuids;
  GpuAccess gpu_access = GpuAccess::kNvidiaDeviceRequest;
  int64_t nano_cpus = 0;     // 0: no CPU limit
  int64_t memory_bytes = 0;  // 0: no memory limit
  int64_t pids_limit = 0;    // 0: no limit
  int64_t shm_bytes = 0;     // /dev/shm size; 0: the engine's default (64 MiB)
  std::vector<Ulimit> ulimits;
  std::string network_mode;  // "host", "none", "bridge", ...; empty: the engine's default
};

struct ContainerInfo {
  std::string id;
  std::string name;
  std::string image;
  std::string state;  // "created", "running", "exited", ...
  bool running = false;
  int exit_code = 0;        // meaningful once exited
  std::string started_at;   // RFC 3339, as the engine writes it
  std::string finished_at;  // likewise; the engine's zero time while it runs
  std::map<std::string, std::string> labels;
};

struct ContainerStats {
  int64_t memory_bytes = 0;   // in use
  uint64_t cpu_total_ns = 0;  // CPU time used so far
  int64_t pids = 0;
};

// A command to run in a running container (`docker exec`), without a TTY or stdin.
struct ExecSpec {
  std::vector<std::string> command;  // argv
  std::map<std::string, std::string> env;
  std::string working_dir;  // empty: the container's
};

struct ExecInfo {
  bool running = false;
  int pid = 0;                   // while running: the command's host PID (the engine's "Pid")
  std::optional<int> exit_code;  // once ended
};

// Output of a multiplexed stream: 1 stdout, 2 stderr.
using OutputSink = std::function<bool(int stream, std::string_view bytes)>;

class DockerClient {
 public:
  // No I/O: the first call connects. socket_path is absolute.
  static Result<DockerClient> open(std::string socket_path,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // The engine's version ("4.3.1"). Not cheap on Podman 4, which asks the package database for
  // each component's version (seconds on a loaded host).
  Result<std::string> version();
  // Whether the engine answers (GET /_ping): the cheap liveness check.
  Status ping();

  Result<std::string> create(const ContainerSpec& spec);  // the new container's id
  Status start(std::string_view container);
  // SIGTERM, then SIGKILL after `grace` (the engine enforces it; the call returns when stopped).
  Status stop(std::string_view container, std::chrono::seconds grace);
  Status kill(std::string_view container, std::string_view signal = "SIGKILL");
  // Blocks until the container is not running (at most `timeout`: kUnavailable "timeout" after)
  // and returns its exit status, as `docker wait` does.
  Result<int> wait(std::string_view container, std::chrono::milliseconds timeout);
  Status remove(std::string_view container, bool force);
  Result<ContainerInfo> inspect(std::string_view container);
  // Containers carrying the label (key=value), running or not.
  Result<std::vector<ContainerInfo>> list(std::string_view label);
  struct LogQuery {
    int tail = -1;            // the last this many lines; -1: all
    int64_t since = 0;        // lines from this Unix second on; 0: from the start
    bool timestamps = false;  // prefix each line with its RFC 3339 time and a space
  };
  // stdout and stderr interleaved as written (the engine's multiplexed stream, demultiplexed).
  Result<std::string> logs(std::string_view container, const LogQuery& query);
  Result<std::string> logs(std::string_view container) { return logs(container, LogQuery{}); }
  Result<ContainerStats> stats(std::string_view container);

  Result<bool> image_exists(std::string_view image);
  // Pulls the image (with its tag). Offline, the engine's error comes back as kUnavailable
  // "image_pull_failed" naming the image.
  Status pull(std::string_view image);

  // Creates the exec; its id. A container that is not running: kConflict "engine_conflict".
  Result<std::string> exec_create(std::string_view container, const ExecSpec& spec);
  // Runs the exec and hands its output to `output` as the engine sends it, until the command's
  // output ends. Returns the command's exit code. When `output` returns false, reading stops and
  // the answer is kUnavailable "output_abandoned" (the command goes on in the container, unread).
  // idle_timeout bounds each wait for output.
  Result<int> exec_start(std::string_view exec, const OutputSink& output,
                         std::chrono::milliseconds idle_timeout);

  Result<ExecInfo> exec_inspect(std::string_view exec);

  const std::string& socket_path() const { return socket_path_; }

 private:
  DockerClient(std::string socket_path, client::HttpClient http, std::chrono::milliseconds timeout);
  // timeout: this call's, instead of the client's.
  Result<client::HttpResponse> call(std::string method, std::string target, std::string body = {},
                                    std::optional<std::chrono::milliseconds> timeout = {});

  std::string socket_path_;
  client::HttpClient http_;
  std::chrono::milliseconds timeout_;
};

// The Docker Engine API's multiplexed stream (8-byte frame headers: stream, 0, 0, 0, size
// big-endian, then that many bytes) taken piece by piece, as a stream arrives: a frame may be split
// anywhere between pieces.
class StreamDemultiplexer {
 public:
  // Hands each complete frame's bytes to `output`, in order; false once `output` returned false.
  bool feed(std::string_view piece, const OutputSink& output);
  // The bytes that arrived of a frame not yet complete (without its header).
  std::string_view unfinished() const;

 private:
  std::string pending_;
};

// A whole multiplexed log stream as plain text; text without frame headers (a TTY container)
// passes unchanged.
std::string demultiplex_logs(std::string_view raw);

// The create request's JSON body for the spec, hardened as the header says (exposed for tests).
std::string create_body(const ContainerSpec& spec);

// Whether a host path may be bind-mounted into a container. Refused (kInvalidArgument
// "forbidden_mount", naming the path and why): a path that is, lies under or holds one of /proc,
// /sys, /dev, /run, /var/run (the host's kernel interfaces, devices, and the sockets of Docker,
// Podman and containerd), the engines' state (/var/lib/docker, /var/lib/containers,
// /var/lib/containerd) or the engine's own socket; any socket. The path is resolved first (links
// followed, as the engine follows them), so a link cannot lead there.
Status check_bind_source(const std::filesystem::path& host_path,
                         const std::filesystem::path& engine_socket);

}  // namespace gpurent::agent
