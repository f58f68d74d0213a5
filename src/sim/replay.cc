#include "sim/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "agent/sim_workloads.h"
#include "common/random.h"
#include "controller/controller.h"

namespace gpurent::sim {
namespace {

using controller::Controller;
using model::Instance;
using model::InstanceState;

constexpr Micros kTenantCredit = Micros{1'000'000'000'000'000};  // never the reason work waits
constexpr int64_t kMillisPerSecond = 1000;
// The whole controller is checked every (nodes + work items) / kCheckedObjectsPerStep steps (every
// step on small runs), so checking costs about as much per step as this many objects' worth: a
// step handles a few objects, and checking a node scores it, so more would make the checks most
// of a large run.
constexpr size_t kCheckedObjectsPerStep = 4;

int64_t round_up(int64_t value, int64_t unit) { return (value + unit - 1) / unit; }

model::InstanceSpec instance_spec(const WorkItem& item) {
  const auto& d = item.request.per_node;
  model::InstanceSpec spec;
  spec.name = item.id;
  spec.gpu_types = item.request.gpu_types;
  spec.min_gpu_memory_gb = static_cast<int>(round_up(item.request.min_gpu_memory_mib, 1024));
  spec.gpu_count = d.gpu_count;
  spec.gpu_milli = d.gpu_milli;
  spec.gpu_memory_gb = static_cast<int>(round_up(d.gpu_memory_mib, 1024));
  spec.cpu = static_cast<int>(round_up(d.cpu_milli, 1000));
  spec.memory_gb = static_cast<int>(round_up(d.memory_mib, 1024));
  spec.disk_gb = static_cast<int>(d.disk_gb);
  spec.node_selector.insert(item.request.node_selector.begin(), item.request.node_selector.end());
  spec.command = {"simulated"};
  spec.pricing = item.pricing;  // reserved is refused before (set_up)
  return spec;
}

model::NodeRegistration registration(const sched::NodeSpec& node) {
  model::NodeRegistration r;
  r.name = node.id;
  r.cpu_count = static_cast<int>(round_up(node.cpu_milli, 1000));
  r.memory_mb = node.memory_mib;
  r.disk_gb = node.disk_gb;
  r.fabric_group = node.fabric_group;
  r.labels.insert(node.labels.begin(), node.labels.end());
  r.simulated = true;
  r.agent_version = "simulate";
  for (const auto& gpu : node.gpus) {
    r.gpus.push_back({.uuid = fmt::format("GPU-{}-{}", node.id, gpu.index),
                      .index = gpu.index,
                      .type = node.gpu_type,
                      .name = node.gpu_type,
                      .memory_mb = node.gpu_memory_mib,
                      .nvlink_domain = gpu.nvlink_domain,
                      .pcie_switch = gpu.pcie_switch,
                      .numa_node = gpu.numa_node});
  }
  return r;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::lround(q * static_cast<double>(values.size() - 1)));
  return values[std::min(rank, values.size() - 1)];
}

// The replay's state: the controller under a manual clock, and the simulated agents.
class Replay {
 public:
  Replay(const SimInput& input, const ReplayOptions& options)
      : input_(input),
        clock_(from_unix_ms(0)),
        controller_(clock_, {.heartbeat_timeout = Millis(int64_t{1} << 50),
                             .billing_interval = Millis(3'600'000),
                             .seed = options.seed,
                             .placement_policy = options.policy,
                             .monitoring = false}) {
    report_.mode = "replay";
    report_.policy = std::string(sched::to_string(options.policy));
    report_.seed = options.seed;
    report_.work_items = static_cast<int64_t>(input.work.size());
  }

  Result<SimReport> run() {
    GPURENT_CHECK(set_up());
    std::vector<size_t> arrivals(input_.work.size());
    for (size_t i = 0; i < arrivals.size(); ++i) arrivals[i] = i;
    std::stable_sort(arrivals.begin(), arrivals.end(), [&](size_t a, size_t b) {
      return input_.work[a].arrival_s < input_.work[b].arrival_s;
    });
    const auto began = std::chrono::steady_clock::now();
    size_t next = 0;
    while (next < arrivals.size() || !exits_.empty()) {
      const int64_t arrival_ms = next < arrivals.size()
                                     ? input_.work[arrivals[next]].arrival_s * kMillisPerSecond
                                     : std::numeric_limits<int64_t>::max();
      const int64_t exit_ms =
          exits_.empty() ? std::numeric_limits<int64_t>::max() : exits_.begin()->at_ms;
      advance_to(std::min(arrival_ms, exit_ms));
      if (exit_ms <= arrival_ms) {
        const Exit done = *exits_.begin();
        exits_.erase(exits_.begin());
        GPURENT_CHECK(complete(done));
      } else {
        GPURENT_CHECK(submit(arrivals[next++]));
      }
      controller_.tick();
      GPURENT_CHECK(settle());
    }
    GPURENT_CHECK(check());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return finish(seconds);
  }

 private:
  // A run's end, when its agent says it ends: one order in time for every node's exits.
  struct Exit {
    int64_t at_ms = 0;
    std::string instance_id;
    int64_t run = 0;
    std::string node_id;
    bool operator<(const Exit& other) const {
      return std::tie(at_ms, instance_id, run) <
             std::tie(other.at_ms, other.instance_id, other.run);
    }
  };

  Status set_up() {
    for (const auto& item : input_.work) {
      if (item.pricing == model::PricingModel::kReserved) {
        return fail(
            Error::invalid("invalid_csv", fmt::format("work item {}: reserved pricing needs a "
                                                      "reservation, which replay does not book",
                                                      item.id)));
      }
    }
    const std::string admin_secret = "simulate-admin";
    GPURENT_CHECK(controller_.accounts().bootstrap_admin(hash_secret(admin_secret), "sim", 0));
    admin_ = *controller_.accounts().credentials().authenticate(hash_secret(admin_secret));
    GPURENT_CHECK(controller_.accounts().credentials().create_join_token(
        admin_, "simulate", Millis(int64_t{1} << 50), hash_secret("simulate-join")));
    for (const auto& node : input_.nodes) {
      report_.gpu_milli_capacity += static_cast<int64_t>(node.gpus.size()) * sched::kMilliPerGpu;
      const std::string credential = "simulate-node-" + node.id;
      GPURENT_CHECK(controller_.register_node(hash_secret("simulate-join"), registration(node),
                                              credential, hash_secret(credential)));
    }
    report_.nodes = static_cast<int64_t>(input_.nodes.size());
    check_every_ =
        std::max<uint64_t>(1, (input_.nodes.size() + input_.work.size()) / kCheckedObjectsPerStep);
    std::set<std::string> tenants;
    for (const auto& item : input_.work) tenants.insert(item.tenant.empty() ? "sim" : item.tenant);
    for (const auto& name : tenants) {
      GPURENT_TRY(tenant, controller_.accounts().create_tenant(admin_, name));
      GPURENT_CHECK(controller_.accounts().credentials().create_api_key(
          admin_,
          {.tenant_id = tenant.id, .name = name, .secret_hash = hash_secret("key-" + name)}));
      GPURENT_CHECK(
          controller_.accounts().topup(admin_, tenant.id, kTenantCredit, "simulate", std::nullopt));
      principals_.emplace(
          name, *controller_.accounts().credentials().authenticate(hash_secret("key-" + name)));
    }
    return settle();
  }

  void advance_to(int64_t at_ms) {
    const int64_t now_ms = to_unix_ms(clock_.now());
    if (at_ms <= now_ms) return;
    allocated_area_ += static_cast<double>(allocated_milli_) * static_cast<double>(at_ms - now_ms);
    clock_.advance(Millis(at_ms - now_ms));
  }

  Status submit(size_t index) {
    const WorkItem& item = input_.work[index];
    const auto& who = principals_.at(item.tenant.empty() ? "sim" : item.tenant);
    ++report_.decisions;
    std::string first_member;
    if (item.request.nodes > 1) {
      model::JobSpec spec{instance_spec(item), item.request.nodes, 1, 0};
      auto created = controller_.create_job(who, std::move(spec), std::nullopt, "");
      if (!created) return refused(created.error());
      first_member = created->job.tasks.front().members.front();
      for (const auto& member : created->job.tasks.front().members) item_of_[member] = index;
    } else {
      auto created = controller_.create_instance(who, instance_spec(item), std::nullopt, "");
      if (!created) return refused(created.error());
      first_member = created->instance.id;
      item_of_[first_member] = index;
    }
    leader_of_[index] = first_member;
    return settle();
  }

  // Items the controller refuses outright (e.g. a GPU type no price covers) count as failed.
  static Status refused(const Error& error) {
    if (error.kind == ErrorKind::kInternal) return fail(error);
    return {};
  }

  // The run's time is up: its agent ends it, and reports if the controller still counts on it.
  Status complete(const Exit& done) {
    agents_.at(done.node_id).advance(agent::sim_time(clock_.now()), {done.instance_id, done.run});
    const auto* instance = *controller_.instances().get(admin_, done.instance_id);
    if (instance->run != done.run || !model::holds_gpus(instance->state)) return {};
    woken_.insert(instance->node_id);
    return settle();
  }

  // Lets the simulated agents answer until nothing changes: each node whose desired set changed
  // reports its whole truth, which may place or stop more work.
  Status settle() {
    for (;;) {
      auto changes = controller_.take_changes();
      observe(changes);
      woken_.merge(changes.woken_nodes);
      if (woken_.empty()) break;
      const std::string node = *woken_.begin();
      woken_.erase(woken_.begin());
      GPURENT_TRY(desired, controller_.fleet().desired_state(node));
      auto& agent = agents_.try_emplace(node, agent_options()).first->second;
      const auto report = agent::converge_and_report(agent, desired, agent::sim_time(clock_.now()));
      GPURENT_CHECK(controller_.apply_report(node, report));
      for (const auto& status : report.workloads) {
        if (status.phase != model::WorkloadPhase::kRunning) continue;
        // A set: a run reported running again keeps its one place.
        if (const auto ends_at = agent.ends_at({status.instance_id, status.run})) {
          exits_.insert(
              {ends_at->time_since_epoch().count(), status.instance_id, status.run, node});
        }
      }
      GPURENT_CHECK(check_now_and_then());
    }
    return check_now_and_then();
  }

  // Every node's agent runs a work item for the item's duration, and any number of them (the
  // controller decides what fits).
  agent::SimWorkloads::Options agent_options() {
    return {
        .duration_of = [this](const model::WorkloadSpec& spec) -> agent::SimWorkloads::Duration {
          const auto& item = input_.work[item_of_.at(spec.instance_id)];
          if (!item.duration_s) return std::nullopt;
          return std::chrono::seconds(*item.duration_s);
        },
        .max_runs = std::numeric_limits<size_t>::max()};
  }

  // The whole controller every check_every_ steps: a check costs O(nodes + instances), so on a
  // large run checking every step would be most of it.
  Status check_now_and_then() {
    if (++steps_ % check_every_ != 0) return {};
    return check();
  }

  Status check() {
    ++report_.invariant_checks;
    auto checked = controller_.check_invariants();
    if (!checked) {
      return fail(Error{ErrorKind::kInternal, "invariant_violated",
                        fmt::format("at t={} s: {}", to_unix_ms(clock_.now()) / kMillisPerSecond,
                                    checked.error().message)});
    }
    return {};
  }

  // Follows the instances' changes: allocation over time, first starts, preemptions.
  void observe(const controller::ChangeSet& changes) {
    for (const Instance& instance : changes.instances) {
      const int64_t milli =
          model::holds_gpus(instance.state)
              ? int64_t{instance.gpu_milli} * static_cast<int64_t>(instance.gpus.size())
              : 0;
      auto& tracked = milli_of_[instance.id];
      allocated_milli_ += milli - tracked;
      tracked = milli;
      if (instance.state == InstanceState::kPreempted &&
          counted_preemptions_.insert({instance.id, instance.run}).second) {
        ++report_.preempted;
      }
      const auto item = item_of_.find(instance.id);
      if (item == item_of_.end() || leader_of_.at(item->second) != instance.id) continue;
      if (instance.state == InstanceState::kStarting && !first_start_.contains(item->second)) {
        first_start_[item->second] = to_unix_ms(clock_.now());
      }
    }
  }

  Result<SimReport> finish(double seconds) {
    const int64_t end_ms = to_unix_ms(clock_.now());
    std::vector<double> waits;
    for (const auto& [index, started_ms] : first_start_) {
      waits.push_back(
          static_cast<double>(started_ms - input_.work[index].arrival_s * kMillisPerSecond) /
          kMillisPerSecond);
    }
    report_.placed = static_cast<int64_t>(first_start_.size());
    report_.failed = report_.work_items - report_.placed;
    report_.wait_s = Percentiles{percentile(waits, 0.5), percentile(waits, 0.99)};
    const double capacity = static_cast<double>(report_.gpu_milli_capacity);
    report_.gpu_allocation_pct =
        capacity > 0 ? 100.0 * static_cast<double>(allocated_milli_) / capacity : 0;
    report_.gpu_allocation_pct_time_averaged =
        capacity > 0 && end_ms > 0
            ? 100.0 * allocated_area_ / (capacity * static_cast<double>(end_ms))
            : 0;
    const auto stats = controller_.fleet().placements().cluster().stats();
    report_.fragmented_gpu_pct = capacity > 0 ? 100.0 * stats.gpu_milli_fragmented / capacity : 0;
    report_.decisions_per_sec = seconds > 0 ? static_cast<double>(report_.decisions) / seconds : 0;
    return report_;
  }

  const SimInput& input_;
  ManualClock clock_;
  Controller controller_;
  SimReport report_;
  model::Principal admin_;
  std::map<std::string, model::Principal> principals_;
  std::map<std::string, size_t> item_of_;    // instance id -> work item
  std::map<size_t, std::string> leader_of_;  // work item -> its first (rank-0) instance
  std::map<size_t, int64_t> first_start_;    // work item -> when it was first placed (ms)
  std::set<std::pair<std::string, int64_t>> counted_preemptions_;
  std::map<std::string, agent::SimWorkloads> agents_;  // by node id
  std::set<Exit> exits_;
  std::set<std::string> woken_;
  std::map<std::string, int64_t> milli_of_;
  int64_t allocated_milli_ = 0;
  double allocated_area_ = 0;  // milli × ms
  uint64_t steps_ = 0;
  uint64_t check_every_ = 1;  // set_up
};

}  // namespace

Result<SimReport> run_replay(const SimInput& input, const ReplayOptions& options) {
  Replay replay(input, options);
  return replay.run();
}

}  // namespace gpurent::sim
