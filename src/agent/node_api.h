// The node API: a small authenticated HTTP server that the agent serves on its advertised address,
// so that the control plane can reach what runs on the node's loopback (as the Kubernetes API
// server reaches the kubelet on :10250).
//
//   ANY  /i/<instance>/<service>/...          forwarded to 127.0.0.1:<the run's service port>
//        X-Gpurent-Run: <run>                 (path and query unchanged; bodies stream; WebSocket
//                                              upgrades become a tunnel)
//   POST /v1/node/exec?instance=I&run=R       {"command": [...], "timeout_s": N} -> exec frames
//                                              (model/exec_protocol.h)
//   POST /v1/node/files?instance=I&run=R&upload=U&path=P
//                                             `gpurent cp`: unpacks the upload into the running
//                                              process or VM run (file_copy.h) -> CopyResult
//   POST /v1/node/volume-files?volume=V&tenant=T&upload=U&path=P
//                                             the same into a volume's data on this node
//   GET  /v1/node/ssh?instance=I&run=R        an upgrade (Upgrade: ssh): answered 101 here, then
//                                             a byte tunnel to the SSH server of a VM run booted
//                                             from a cloud image (vm_ssh_port); other runs: 422
//                                             "ssh_unavailable"
//
// A copy fetches its upload first unless the node has it (NodeApiOptions::fetch_upload; the
// server granted it to this node), then unpacks it on one of kCopyWorkers threads, never on the
// I/O thread; at most kMaxCopiesInFlight at once (more: 503 "node_busy"). A container run is
// refused (422 "copy_unsupported": its files are the engine's to write; copy into a volume it
// mounts instead). stop() waits for the copies under way (each at most kMaxUnpackTime).
//
// Exec reaches a process run through its shim (exec.h), a container run through the engine
// (container_exec.h), and a VM run through its guest agent (vm/guest_agent.h), whose output
// arrives in one piece when the command ends.
//
// Every request carries `Authorization: Bearer <secret>`: a random secret drawn at each start and
// sent to the server with every report (NodeReport::node_api_secret), so it changes with every
// agent start and a restarted server learns it again from the next report. Without it: 401.
//
// Forwarding to a service, the agent puts the run's service token into the request
// (`Authorization: token <GPURENT_SERVICE_TOKEN>`, which Jupyter accepts for HTTP and WebSocket),
// so the token never leaves the node, and sets Host (and Origin, when present) to the service's
// own loopback address: a service bound to loopback (Jupyter with --ip=127.0.0.1) refuses other
// Host names (DNS-rebinding protection) and compares Origin with Host on WebSockets. Cross-site
// requests are the server's to refuse (it checks Origin before it forwards a cookie-authenticated
// request), since it is where the browser's credentials are.
//
// Threading: its own thread runs its io_context; the run table (NodeRuns) is shared with the
// reconcile thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "agent/node_runs.h"
#include "agent/runtime/workload_users.h"
#include "common/result.h"
#include "net/http.h"

namespace gpurent::agent {

inline constexpr std::string_view kRunHeader = "X-Gpurent-Run";
inline constexpr std::string_view kNodeExecPath = "/v1/node/exec";
inline constexpr std::string_view kNodeFilesPath = "/v1/node/files";
inline constexpr std::string_view kNodeSshPath = "/v1/node/ssh";
inline constexpr std::string_view kNodeVolumeFilesPath = "/v1/node/volume-files";
inline constexpr int kCopyWorkers = 2;
inline constexpr int kMaxCopiesInFlight = 8;
// Exec in a VM waits for the command's end on a thread of its own (vm/guest_agent.h), at most
// this many at once (more: 503 "node_busy"), and at most kMaxVmExecTime: its answer comes at the
// end, and the server waits kForwardIoTimeout (300 s) for the first byte.
inline constexpr int kMaxVmExecsInFlight = 4;
inline constexpr std::chrono::seconds kMaxVmExecTime{280};

struct NodeApiOptions {
  std::string listen_host = "127.0.0.1";  // an IP address to bind
  uint16_t port = 0;                      // 0: an ephemeral port
  std::string advertise_host;             // how the server reaches it; "" = listen_host
  std::filesystem::path data_dir;         // the agent's (process runs' launch records)
  std::string container_socket;           // the engine of container runs; "" = none
  // Makes an upload present at workdir_archive(data_dir, id), fetching it from the server when
  // missing; called on copy workers, so thread-safe. Unset: copies are refused (503).
  std::function<Status(std::string_view upload_id)> fetch_upload;
  std::shared_ptr<WorkloadUsers> users;  // sandboxed runs' users and groups; null: no sandbox
};

// Whether an Authorization header presents `secret` as a bearer token (compared in constant time).
bool presents_secret(std::string_view authorization, std::string_view secret);

// Where a request to a service of a run goes: the decision of the node API's forwarder, apart from
// the secret check. Errors are problem+json answers.
net::ForwardDecision service_forward(const net::RequestHead& head, const NodeRuns& runs);

// "host:port", with brackets around an IPv6 host.
std::string host_port(std::string_view host, uint16_t port);

class NodeApi {
 public:
  NodeApi(NodeRuns& runs, NodeApiOptions options);
  ~NodeApi();  // stops
  NodeApi(const NodeApi&) = delete;
  NodeApi& operator=(const NodeApi&) = delete;

  // Binds and starts serving. Error "listen_failed" when the address cannot be bound.
  Status start();
  void stop();

  const std::string& address() const { return address_; }  // "host:port", set by start()
  const std::string& secret() const { return secret_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string address_;
  const std::string secret_;
};

}  // namespace gpurent::agent
