// What the node API (node_api.h) needs to know about the node's runs, shared between the
// reconcile thread (which starts runs and publishes their state) and the node API's thread (which
// serves proxied requests and exec): the loopback port of each HTTP service a run serves, the
// run's service token, and whether the run is running and where (process or container).
//
// Services. When a run that declares services (WorkloadSpec::services) is started, bind_services()
// picks a free loopback TCP port for each and one random token for the run, and records them in
// <data_dir>/services/<instance>.<run>.json (mode 0600) before the run starts: a restarted agent
// re-adopts the run and must still know where it listens and what its token is. The token never
// leaves the node: the workload gets it in GPURENT_SERVICE_TOKEN (service_env), the node API puts
// it into the requests it forwards. A port is free when it is chosen; another process on the node
// could take it before the workload binds it (the workload then fails to listen, visibly).
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/runtime/runtime.h"
#include "common/result.h"

namespace gpurent::agent {

struct RunServices {
  std::map<std::string, uint16_t> ports;  // service name -> loopback port
  std::string token;                      // the run's GPURENT_SERVICE_TOKEN
};

// The environment a run with these services gets: GPURENT_PORT_<NAME> and GPURENT_BASE_URL_<NAME>
// per service (NAME upper-cased, '-' as '_'; the base URL is /i/<instance>/<name>/, the path the
// server proxies) and GPURENT_SERVICE_TOKEN.
std::map<std::string, std::string> service_env(std::string_view instance_id,
                                               const RunServices& services);
// The ports a run's env gives its services (its GPURENT_PORT_* variables, as service_env made
// them), in ascending order.
std::vector<uint16_t> service_ports(const std::map<std::string, std::string>& env);
// "jupyter-lab" -> "JUPYTER_LAB".
std::string service_env_suffix(std::string_view name);

// A loopback TCP port that is free now and not in `taken`. Error "no_free_port" (kUnavailable).
Result<uint16_t> free_loopback_port(const std::set<uint16_t>& taken);

// Which runtime a run is in (runtime_set.h): where exec and copies reach it.
enum class RunPlace { kProcess, kContainer, kVm };
inline RunPlace place_of(const model::WorkloadSpec& spec) {
  if (spec.vm) return RunPlace::kVm;
  return spec.image.empty() ? RunPlace::kProcess : RunPlace::kContainer;
}

// What the reconciler publishes about a run after each pass.
struct PublishedRun {
  WorkloadKey key;
  bool running = false;
  RunPlace place = RunPlace::kProcess;
};

struct RunView {
  bool running = false;
  RunPlace place = RunPlace::kProcess;
  std::optional<RunServices> services;
};

class NodeRuns {
 public:
  // Loads the bindings recorded under data_dir/services.
  static Result<std::unique_ptr<NodeRuns>> open(const std::filesystem::path& data_dir);

  // Picks the ports and the token of a run's services and records them durably. Calling it again
  // for a run that has them returns the recorded ones.
  Result<RunServices> bind_services(const WorkloadKey& key, const std::vector<std::string>& names);
  // Forgets a run's bindings (its record too): the run was forgotten or never started.
  void release(const WorkloadKey& key);
  // Replaces the published state of every run; bindings of runs not listed are released (a run
  // that ended while no agent ran leaves its record behind until then).
  void publish(const std::vector<PublishedRun>& runs);

  std::optional<RunView> find(const WorkloadKey& key) const;

 private:
  explicit NodeRuns(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path record_path(const WorkloadKey& key) const;
  void release_locked(const WorkloadKey& key);

  const std::filesystem::path dir_;
  mutable std::mutex mutex_;
  std::map<WorkloadKey, RunServices> services_;
  std::map<WorkloadKey, PublishedRun> published_;
};

}  // namespace gpurent::agent
