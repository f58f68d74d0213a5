#include "agent/node_agent.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "agent/host.h"
#include "agent/janitor.h"
#include "agent/reconciler.h"
#include "agent/runtime/container_runtime.h"
#include "agent/runtime/container_toolkit.h"
#include "agent/runtime/process_runtime.h"
#include "agent/runtime/runtime_set.h"
#include "agent/runtime/volumes.h"
#include "agent/runtime/workdir.h"
#include "agent/telemetry/guest_reports.h"
#include "agent/telemetry/nvml_source.h"
#include "agent/telemetry/sim_source.h"
#include "agent/tool_run.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

std::filesystem::path absolute_or_empty(const std::string& path) {
  return path.empty() ? std::filesystem::path() : std::filesystem::absolute(path);
}

// One thread's view of the server: when to try again, and a log line only when the state changes
// (a server down for an hour yields two lines, not thousands).
class ServerHealth {
 public:
  explicit ServerHealth(std::string_view channel) : channel_(channel) {}

  void succeeded() {
    if (!last_code_.empty()) {
      spdlog::info("server_ok channel={} after_failures={}", channel_, failures_);
    }
    failures_ = 0;
    last_code_.clear();
  }

  // Returns how long to wait before the next try.
  std::chrono::milliseconds failed(const Error& error) {
    failures_ = std::min(failures_ + 1, 30);
    if (error.code != last_code_) {
      last_code_ = error.code;
      if (error.kind == ErrorKind::kUnavailable) {
        spdlog::warn("server_unreachable channel={} code={} error=\"{}\"", channel_, error.code,
                     error.message);
      } else {
        spdlog::error("server_refused channel={} code={} error=\"{}\"", channel_, error.code,
                      error.message);
      }
    }
    return retry_delay(error, failures_);
  }

 private:
  std::string channel_;
  std::string last_code_;  // empty while calls succeed
  int failures_ = 0;
};

// Persists what the server issued at registration, before anything relies on it.
Result<Identity> keep_registration(const model::RegistrationResult& result,
                                   const std::filesystem::path& data_dir) {
  Identity identity{result.node_id, result.credential};
  if (auto saved = save_identity(data_dir, identity); !saved) return fail(saved.error());
  spdlog::info("node_registered node={} identity={}", identity.node_id,
               (data_dir / kIdentityFile).string());
  return identity;
}

// AF_INET or AF_INET6 for an IP address, 0 for anything else (a host name).
int address_family(const std::string& address) {
  in6_addr buffer;
  if (::inet_pton(AF_INET, address.c_str(), &buffer) == 1) return AF_INET;
  if (::inet_pton(AF_INET6, address.c_str(), &buffer) == 1) return AF_INET6;
  return 0;
}

// The GPUs of the runs that run now, with the instance holding each.
BusyGpus busy_gpus(const std::vector<Workload>& workloads,
                   const std::optional<model::DesiredState>& desired) {
  BusyGpus busy;
  if (!desired) return busy;
  for (const auto& spec : desired->workloads) {
    const auto running = std::find_if(workloads.begin(), workloads.end(), [&](const Workload& w) {
      return w.key.instance_id == spec.instance_id && w.key.run == spec.run &&
             w.phase == model::WorkloadPhase::kRunning;
    });
    if (running == workloads.end()) continue;
    for (const auto& gpu : spec.gpus) busy.emplace(gpu, spec.instance_id);
  }
  return busy;
}

}  // namespace

NodeAgent::NodeAgent(AgentOptions options, ServerLinkFactory links, std::string shim_executable)
    : options_(std::move(options)),
      links_(std::move(links)),
      shim_executable_(std::move(shim_executable)) {}

NodeAgent::~NodeAgent() { stop(); }

std::string NodeAgent::node_id() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->identity ? shared_->identity->node_id : std::string();
}

model::NodeRegistration NodeAgent::registration() const {
  model::NodeRegistration registration;
  registration.name = options_.node_name.empty() ? host_name() : options_.node_name;
  registration.gpus = inventory_.gpus;
  registration.cpu_count = host_cpu_count();
  registration.memory_mb = host_memory_mb();
  registration.disk_gb = free_disk_gb(options_.data_dir);
  registration.fabric_group = options_.fabric_group;
  registration.labels = options_.labels;
  registration.address = options_.advertise_address.empty()
                             ? local_address_toward(options_.server_url)
                             : options_.advertise_address;
  registration.simulated = inventory_.simulated;
  registration.benchmarks = true;  // bench/benchmarker.h
  registration.container_runtime = runs_containers();
  registration.vm = vm_;
  registration.agent_version = std::string(kAgentVersion);
  registration.isolation = isolation_.sandbox ? "sandbox" : "none";
  registration.isolation_note = isolation_.note;
  return registration;
}

bool NodeAgent::runs_containers() const {
  return !options_.container_socket.empty() &&
         (!container_toolkit_ || container_toolkit_->gpu_containers);
}

Result<NodeAgent::Isolation> NodeAgent::detect_isolation() const {
  Isolation isolation;
  if (!options_.sandbox) {
    isolation.note = "the operator turned the sandbox off (--no-sandbox)";
    return isolation;
  }
  if (auto probed = probe_sandbox(); !probed) {
    isolation.note = probed.error().message;
    return isolation;
  }
  SandboxOptions sandbox;
  if (!options_.workload_ids.empty()) {
    GPURENT_TRY(ids, parse_id_range(options_.workload_ids));
    sandbox.ids = ids;
  }
  std::string why_not;
  sandbox.cgroups = Cgroups::detect_host(&why_not);
  isolation.note = sandbox.cgroups ? fmt::format("CPU and memory limits through {}",
                                                 sandbox.cgroups->description())
                                   : fmt::format("no CPU or memory limits: {}", why_not);
  isolation.sandbox = std::move(sandbox);
  return isolation;
}

Result<std::unique_ptr<VmRuntime>> NodeAgent::open_vm_runtime(
    std::shared_ptr<WorkloadUsers> users) {
  if (options_.vm_kernel.empty() && options_.vm_image.empty()) {
    return std::unique_ptr<VmRuntime>();
  }
  GPURENT_TRY(host, detect_vm_host(options_.vm_accelerator, inventory_.gpus, inventory_.simulated,
                                   "/dev/kvm", "/sys"));
  if (options_.vm_network == VmNetwork::kOutbound && !run_tool({.argv = {"passt", "--version"}})) {
    return fail(Error::unprocessable(
        "vm_runtime_unavailable",
        "VMs reach the network through passt, which cannot be run here: install it (Debian's "
        "package passt), or give the agent --vm-network isolated"));
  }
  if (options_.vm_shares == VmShares::kVirtioFs && ::geteuid() != 0) {
    return fail(Error::unprocessable(
        "vm_runtime_unavailable",
        "VMs' shared folders go over virtio-fs, whose virtiofsd the agent runs in a user namespace "
        "of the node's guest ids, which only root may map: run the agent as root, or give it "
        "--vm-shares 9p"));
  }
  if (options_.vm_shares == VmShares::kVirtioFs && !isolation_.sandbox) {
    return fail(Error::unprocessable(
        "vm_runtime_unavailable",
        fmt::format("VMs' shared folders go over virtio-fs, whose virtiofsd runs in namespaces "
                    "and with the guest ids that sandboxed runs' need, and this node cannot "
                    "sandbox runs ({}): give the agent --vm-shares 9p",
                    isolation_.note)));
  }
  if (options_.vm_shares == VmShares::kVirtioFs && guest_id_blocks(isolation_.sandbox->ids) == 0) {
    return fail(Error::unprocessable(
        "vm_runtime_unavailable",
        fmt::format("VMs' shared folders go over virtio-fs, whose guests take 65536 ids per tenant "
                    "after --workload-ids ({}-{}), and none are left below 2^31: lower the "
                    "range's end",
                    isolation_.sandbox->ids.first, isolation_.sandbox->ids.last)));
  }
  if (options_.vm_shares == VmShares::kVirtioFs && ::access(kVirtiofsdPath, X_OK) != 0) {
    return fail(Error::unprocessable(
        "vm_runtime_unavailable",
        fmt::format(
            "VMs' shared folders go over virtio-fs, and {} cannot be run here: install "
            "QEMU's (Debian's package qemu-system-common), or give the agent --vm-shares 9p",
            kVirtiofsdPath)));
  }
  spdlog::info("vm_runtime accelerator={} gpu_passthrough={} network={} shares={} note=\"{}\"",
               host.capability.accelerator, host.capability.gpu_passthrough,
               options_.vm_network == VmNetwork::kOutbound ? "outbound" : "isolated",
               guest_fs_type(options_.vm_shares), host.capability.note);
  vm_ = host.capability;
  const std::filesystem::path data_dir = options_.data_dir;
  return VmRuntime::open(
      {.data_dir = data_dir,
       .instances_dir = std::filesystem::weakly_canonical(
           options_.instances_dir.empty() ? default_instances_dir(data_dir)
                                          : std::filesystem::path(options_.instances_dir)),
       // Absolute: an overlay names its backing file for good, whatever QEMU's directory.
       .kernel = absolute_or_empty(options_.vm_kernel),
       .initrd = absolute_or_empty(options_.vm_initrd),
       .cloud_image = absolute_or_empty(options_.vm_image),
       .accelerator = host.accelerator,
       .network = options_.vm_network,
       .simulated_gpus = inventory_.simulated,
       .gpus = inventory_.gpus,
       .shares = options_.vm_shares,
       .users = std::move(users),
       .stop_grace = options_.vm_stop_grace});
}

Status NodeAgent::start() {
  if (started_) return fail(Error::conflict("agent_started", "the agent was already started"));
  started_ = true;
  const std::filesystem::path data_dir = options_.data_dir;
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    return fail(Error::internal(
        fmt::format("cannot create the data directory {}: {}", data_dir.string(), ec.message())));
  }
  GPURENT_TRY(inventory, discover_gpus(options_.sim_gpus, data_dir));
  inventory_ = std::move(inventory);
  GPURENT_TRY(isolation, detect_isolation());
  isolation_ = std::move(isolation);
  if (isolation_.sandbox) {
    spdlog::info("process_isolation mode=sandbox note=\"{}\"", isolation_.note);
  } else {
    spdlog::warn(
        "process_isolation mode=none reason=\"{}\": this node runs one tenant's process "
        "runs at a time",
        isolation_.note);
  }
  GPURENT_TRY(processes, ProcessRuntime::open({.data_dir = data_dir,
                                               .shim_executable = shim_executable_,
                                               .stop_grace = options_.stop_grace,
                                               .instances_dir = options_.instances_dir,
                                               .sandbox = isolation_.sandbox}));
  std::unique_ptr<ContainerRuntime> containers;
  if (!options_.container_socket.empty()) {
    // Simulated GPUs reach no container, so there is nothing to check.
    if (!inventory_.simulated) {
      container_toolkit_ =
          toolkit_policy(probe_container_toolkit(), options_.allow_unsafe_container_toolkit);
      const auto& toolkit = *container_toolkit_;
      if (!toolkit.gpu_containers) {
        spdlog::error("container_toolkit version=\"{}\" gpu_containers=false: {}", toolkit.version,
                      toolkit.note);
      } else if (!toolkit.note.empty()) {
        spdlog::warn("container_toolkit version=\"{}\" gpu_containers=true: {}", toolkit.version,
                     toolkit.note);
      } else {
        spdlog::info("container_toolkit version={} gpu_containers=true", toolkit.version);
      }
    }
    GPURENT_TRY(opened, ContainerRuntime::open(
                            {.data_dir = data_dir,
                             .socket_path = options_.container_socket,
                             .stop_grace = options_.stop_grace,
                             .gpu_access = options_.gpu_access,
                             .gpu_refusal = runs_containers() ? "" : container_toolkit_->note}));
    containers = std::move(opened);
  }
  const std::shared_ptr<WorkloadUsers> users = processes->workload_users();
  GPURENT_TRY(vms, open_vm_runtime(users));
  runtime_ =
      std::make_unique<RuntimeSet>(std::move(processes), std::move(containers), std::move(vms));
  GPURENT_TRY(runs, NodeRuns::open(data_dir));
  runs_ = std::move(runs);
  const model::NodeRegistration registered_as = registration();
  // The advertised address is bound when it is an IP address of this host; a host name (or,
  // without any address, the node's name, as peers would use it), or an address that is not on
  // any interface here (behind NAT), is advertised as it is, with the node API listening on every
  // interface.
  const std::string advertised =
      registered_as.address.empty() ? registered_as.name : registered_as.address;
  const auto open_node_api = [&](const std::string& listen_host) {
    // A copy fetches its upload on a link of its own: a link is one thread's.
    auto fetch = [this](std::string_view upload_id) -> Status {
      GPURENT_TRY(link, links_());
      return fetch_upload(*link, upload_id);
    };
    node_api_ = std::make_unique<NodeApi>(
        *runs_, NodeApiOptions{.listen_host = listen_host,
                               .port = options_.node_api_port,
                               .advertise_host = advertised,
                               .data_dir = data_dir,
                               .container_socket = options_.container_socket,
                               .fetch_upload = std::move(fetch),
                               .users = users});
    return node_api_->start();
  };
  bool listening = false;
  if (address_family(registered_as.address) != 0) {
    if (auto bound = open_node_api(registered_as.address); bound) {
      listening = true;
    } else {
      spdlog::warn("node_api_bind_fallback address={} error=\"{}\"", registered_as.address,
                   bound.error().message);
    }
  }
  if (!listening) GPURENT_CHECK(open_node_api("0.0.0.0"));
  GPURENT_TRY(poll_link, links_());
  GPURENT_TRY(reconcile_link, links_());

  Registrar registrar{options_.join_token, registered_as, data_dir};
  std::optional<Identity> identity;
  if (auto loaded = load_identity(data_dir)) {
    identity = std::move(*loaded);
  } else if (loaded.error().code != "file_not_found") {
    return fail(std::move(loaded).error());
  } else if (options_.join_token.empty()) {
    return fail(
        Error::invalid("join_token_required",
                       fmt::format("{} has no node identity; give a join token for the first start",
                                   data_dir.string())));
  } else if (auto registered =
                 poll_link->register_node(registrar.join_token, registrar.registration)) {
    GPURENT_TRY(kept, keep_registration(*registered, data_dir));
    identity = std::move(kept);
  } else if (registered.error().kind == ErrorKind::kUnavailable ||
             registered.error().kind == ErrorKind::kInternal) {
    // Only a server that cannot be reached is worth waiting for; a refused token is final.
    spdlog::warn("node_register_deferred error=\"{}\"", registered.error().message);
  } else {
    return fail(std::move(registered).error());
  }
  {
    std::lock_guard lock(shared_->mutex);
    shared_->identity = std::move(identity);
  }

  poller_ = std::thread(&NodeAgent::poll_loop, shared_, std::move(poll_link), std::move(registrar));
  reconciler_ = std::thread(&NodeAgent::reconcile_loop, this, std::move(reconcile_link));
  spdlog::info("agent_started node={} server={} data_dir={} gpus={} simulated={}", node_id(),
               options_.server_url, data_dir.string(), inventory_.gpus.size(),
               inventory_.simulated);
  return {};
}

void NodeAgent::stop() {
  {
    std::lock_guard lock(shared_->mutex);
    if (shared_->stopping) return;
    shared_->stopping = true;
  }
  shared_->changed.notify_all();
  if (reconciler_.joinable()) reconciler_.join();
  if (node_api_) node_api_->stop();
  if (poller_.joinable()) {
    bool done;
    {
      std::unique_lock lock(shared_->mutex);
      done = shared_->changed.wait_for(lock, kPollerJoinWait, [&] { return shared_->poller_done; });
    }
    if (done) {
      poller_.join();
    } else {
      spdlog::info("agent_poller_detached reason=\"inside a watch; it exits at its next line\"");
      poller_.detach();
    }
  }
  if (started_) spdlog::info("agent_stopped node={}", node_id());
}

void NodeAgent::poll_loop(std::shared_ptr<Shared> shared, std::unique_ptr<ServerLink> link,
                          const Registrar& registrar) {
  // Tells stop() the poller is finished, however it leaves.
  struct Done {
    Shared& shared;
    ~Done() {
      {
        std::lock_guard lock(shared.mutex);
        shared.poller_done = true;
      }
      shared.changed.notify_all();
    }
  } done{*shared};
  // After every call that may block, the stop is checked first: a detached poller must not log
  // (the process may be exiting) nor write to a data directory another agent may now own.
  const auto stopping = [&] {
    std::lock_guard lock(shared->mutex);
    return shared->stopping;
  };
  const auto sleep_until = [&](SteadyTime until) {
    std::unique_lock lock(shared->mutex);
    return !shared->changed.wait_until(lock, until, [&] { return shared->stopping; });
  };

  ServerHealth health("desired");
  int64_t generation = 0;  // 0: answer at once with whatever the server has
  while (!stopping()) {
    const auto began = std::chrono::steady_clock::now();
    std::optional<Identity> identity;
    {
      std::lock_guard lock(shared->mutex);
      identity = shared->identity;
    }
    if (!identity) {
      auto registered = link->register_node(registrar.join_token, registrar.registration);
      if (stopping()) return;
      auto kept = registered ? keep_registration(*registered, registrar.data_dir)
                             : Result<Identity>(fail(std::move(registered).error()));
      if (!kept) {
        if (!sleep_until(began + health.failed(kept.error()))) return;
        continue;
      }
      health.succeeded();
      {
        std::lock_guard lock(shared->mutex);
        shared->identity = std::move(*kept);
      }
      continue;
    }
    // One watch carries every change; the stop is checked at each line (a keep-alive at least
    // every kWatchKeepalive).
    const Status watched = link->watch_desired(identity->credential, generation,
                                               [&](std::optional<model::DesiredState> desired) {
                                                 if (stopping()) return false;
                                                 health.succeeded();
                                                 if (desired && desired->generation != generation) {
                                                   generation = desired->generation;
                                                   {
                                                     std::lock_guard lock(shared->mutex);
                                                     shared->desired = std::move(*desired);
                                                     shared->desired_pending = true;
                                                   }
                                                   shared->changed.notify_all();
                                                 }
                                                 return true;
                                               });
    if (stopping()) return;
    if (!watched) {
      if (!sleep_until(began + health.failed(watched.error()))) return;
      continue;
    }
    // The server ended the watch (or answered it as a long poll): a new one, not at once.
    if (!sleep_until(began + kMinWatchInterval)) return;
  }
}

std::optional<NodeTelemetry> NodeAgent::make_telemetry() const {
  if (options_.telemetry_interval.count() <= 0) return std::nullopt;
  std::unique_ptr<TelemetrySource> source;
  if (inventory_.simulated) {
    source = std::make_unique<SimTelemetrySource>(
        inventory_.gpus, os_random_seed(),
        std::filesystem::path(options_.data_dir) / kSimFaultsFile);
  } else if (auto nvml = open_nvml_telemetry(inventory_.gpus); nvml) {
    source = std::move(*nvml);
  } else {
    spdlog::warn("telemetry_off code={} error=\"{}\"", nvml.error().code, nvml.error().message);
    return std::nullopt;
  }
  // The reconcile thread both ticks the telemetry and owns the runtime.
  source = std::make_unique<WithGuestReports>(
      std::move(source), [runtime = runtime_.get()](int64_t time_ms, auto& out) {
        runtime->guest_gpu_samples(time_ms, out);
      });
  return std::make_optional<NodeTelemetry>(std::move(source), options_.telemetry_interval);
}

Status NodeAgent::fetch_upload(ServerLink& link, std::string_view upload_id) {
  const auto archive = workdir_archive(options_.data_dir, upload_id);
  std::error_code ec;
  if (std::filesystem::exists(archive, ec)) return {};
  std::optional<Identity> identity;
  {
    std::lock_guard lock(shared_->mutex);
    identity = shared_->identity;
  }
  if (!identity)
    return fail(Error{ErrorKind::kUnavailable, "not_registered", "not registered yet"});
  std::filesystem::create_directories(archive.parent_path(), ec);
  // Each fetch writes its own file: the reconciler and a copy may fetch the same upload at once.
  const auto partial = fmt::format("{}.partial.{}", archive.string(), ::gettid());
  if (auto fetched = link.fetch_upload(identity->credential, upload_id, partial); !fetched) {
    std::filesystem::remove(partial, ec);
    return fail(std::move(fetched).error());
  }
  std::filesystem::rename(partial, archive, ec);
  if (ec) return fail(Error::internal(fmt::format("rename {}: {}", partial, ec.message())));
  return {};
}

void NodeAgent::reconcile_loop(std::unique_ptr<ServerLink> link) {
  // Declared first: the reconciler holds it, and a run in progress ends before the loop's end.
  Benchmarker benchmarker(
      inventory_.gpus, inventory_.simulated,
      inventory_.simulated ? std::filesystem::path() : Benchmarker::find_tool(shim_executable_));
  Reconciler reconciler(*runtime_, *runs_);
  reconciler.set_benchmarker(&benchmarker);
  std::optional<NodeTelemetry> telemetry = make_telemetry();
  if (telemetry) reconciler.set_telemetry(&telemetry->backlog());
  reconciler.set_node_api(node_api_->address(), node_api_->secret());
  reconciler.set_container_runtime(runs_containers(), container_toolkit_);
  reconciler.set_vm_capability(vm_);
  std::optional<Identity> identity;
  // Fetched once per node: an array's tasks share their upload.
  reconciler.set_workdir_fetcher(
      [this, &link](std::string_view upload_id) { return fetch_upload(*link, upload_id); });
  NodeJanitor janitor(options_.data_dir, [this](std::string_view instance_id) {
    return runtime_->remove_instance(instance_id);
  });
  ServerHealth health("report");
  std::optional<model::DesiredState> desired;  // the one being converged to
  SteadyTime retry_at{};
  while (true) {
    {
      std::lock_guard lock(shared_->mutex);
      if (shared_->stopping) return;
      if (shared_->desired_pending) {
        desired = shared_->desired;
        shared_->desired_pending = false;
      }
      identity = shared_->identity;
    }
    runtime_->poll();
    // Nothing is stopped before the first desired state: after a restart, the runs the agent
    // re-adopted may well still be wanted.
    if (desired) {
      reconciler.converge(*desired);
      // After the workloads: a deleted volume is mounted by no workload the server still wants,
      // and a deleted instance's runs are stopping.
      if (auto cleaned = janitor.converge(*desired); !cleaned) {
        spdlog::error("janitor_failed error=\"{}\"", cleaned.error().message);
      }
    }
    auto now = std::chrono::steady_clock::now();
    if (telemetry) {
      telemetry->tick(now, to_unix_ms(wall_clock_.now()),
                      busy_gpus(runtime_->workloads(), desired));
    }
    if (identity && now >= retry_at) {
      if (auto synced = reconciler.sync(*link, identity->credential); synced) {
        health.succeeded();
      } else {
        retry_at = now + health.failed(synced.error());
      }
      now = std::chrono::steady_clock::now();
    }
    auto wake_at = now + options_.report_interval;
    if (const auto deadline = runtime_->next_deadline()) wake_at = std::min(wake_at, *deadline);
    if (telemetry) wake_at = std::min(wake_at, telemetry->next_due());
    std::unique_lock lock(shared_->mutex);
    shared_->changed.wait_until(lock, wake_at,
                                [this] { return shared_->stopping || shared_->desired_pending; });
  }
}

}  // namespace gpurent::agent
