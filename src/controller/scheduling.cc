// The controller's scheduling: the pending queue, placement through the scheduler's Cluster,
// preemption, and the mirror of nodes into the Cluster.
#include <deque>
#include <queue>

#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "controller/internal.h"

namespace gpurent::controller {

using model::Job;
using model::JobTask;

Controller::QueuePosition Controller::queue_position(const Instance& instance) {
  return {-model::scheduling_class(instance.spec.pricing), -instance.spec.priority,
          instance.queue_sequence, instance.id};
}

void Controller::enqueue(Instance& instance) {
  // Work that comes back to the queue (moved, retried) keeps its place, which may be anywhere in
  // the order: the next pass takes the whole queue. A new arrival comes last in its band.
  if (instance.queue_sequence == 0) {
    instance.queue_sequence = ++last_queue_sequence_;
    arrivals_.push_back(queue_position(instance));
  } else {
    queue_changed_ = true;
  }
  pending_.insert(queue_position(instance));
}

void Controller::dequeue(const Instance& instance) {
  pending_.erase(queue_position(instance));
  preemptions_.erase(instance.id);
  settled_.reset();  // what it blocked, or the capacity it takes when placed, changes the rest
}

int Controller::gang_size(const Instance& instance) const {
  if (instance.job_id.empty()) return 1;
  return jobs_.at(instance.job_id).spec.nodes;
}

bool Controller::follows_settled_pass(const QueuePosition& arrival) const {
  // A full pass takes bands in order and, within a band where nothing is placed, each tenant's
  // requests together (their shares do not change): an arrival after the last request tried is
  // tried after it if it opens a later band or joins the same tenant's requests.
  const QueuePosition& last = settled_->last;
  if (arrival <= last) return false;
  return arrival.negated_class != last.negated_class ||
         arrival.negated_priority != last.negated_priority ||
         instances_.at(arrival.id).tenant_id == instances_.at(last.id).tenant_id;
}

void Controller::schedule() {
  if (pending_.empty()) {
    arrivals_.clear();
    return;
  }
  if (!queue_changed_ && arrivals_.empty()) return;
  // What the requests ahead of the arrivals would do again is what the settled pass did: the
  // arrivals alone are tried, from where it ended, and a command into a long queue of work that
  // does not fit costs no pass over that queue.
  const bool arrivals_only = !queue_changed_ && settled_ &&
                             std::ranges::all_of(arrivals_, [this](const QueuePosition& arrival) {
                               return follows_settled_pass(arrival);
                             });
  PassState pass;
  auto band_start = pending_.begin();
  if (arrivals_only) {
    pass = std::move(settled_->state);
    band_start = pending_.find(std::ranges::min(arrivals_));
  }
  queue_changed_ = false;
  arrivals_.clear();
  // Settled unless this pass places something: placing dequeues, which forgets it, and the next
  // pass retries every request with what changed.
  settled_ = SettledPass{};
  // Bands of equal class and priority, in queue order. Within a band the tenants take turns:
  // the one holding the least (weighted by its quota weight) goes next, each in arrival order.
  const Instance* last = nullptr;
  while (band_start != pending_.end()) {
    const QueuePosition first = *band_start;
    std::map<std::string, std::deque<std::string>> by_tenant;
    auto it = band_start;
    for (; it != pending_.end() && it->negated_class == first.negated_class &&
           it->negated_priority == first.negated_priority;
         ++it) {
      by_tenant[instances_.at(it->id).tenant_id].push_back(it->id);
    }
    // Placing erases positions of this band only; resume after the band's last one.
    const std::optional<QueuePosition> next =
        it == pending_.end() ? std::nullopt : std::optional<QueuePosition>(*it);
    const auto share = [this](const std::string& tenant) {
      const int weight = quotas_.weight(tenant);
      const auto milli = static_cast<double>(placements_.holding(tenant).milli);
      return milli / weight;
    };
    using Turn = std::pair<double, std::string>;
    std::priority_queue<Turn, std::vector<Turn>, std::greater<>> turns;
    for (const auto& [tenant, ids] : by_tenant) turns.emplace(share(tenant), tenant);
    while (!turns.empty()) {
      const std::string tenant = turns.top().second;
      turns.pop();
      auto& ids = by_tenant[tenant];
      Instance& instance = instances_.at(ids.front());
      try_place(instance, pass);
      ++requests_tried_;
      last = &instance;
      // Between two requests, where no placement is half done.
      tracker_.stream_placed_rows_if_due();
      ids.pop_front();
      if (!ids.empty()) turns.emplace(share(tenant), tenant);
    }
    band_start = next ? pending_.lower_bound(*next) : pending_.end();
  }
  if (settled_) *settled_ = {std::move(pass), queue_position(*last)};
}

std::string Controller::admission_hold(const Instance& instance, int members) const {
  const model::Quota* quota = quotas_.of(instance.tenant_id);
  const int instances = placements_.holding(instance.tenant_id).instances;
  if (quota != nullptr && quota->max_instances && instances + members > *quota->max_instances) {
    return fmt::format("waiting: the tenant's quota allows {} instance(s) at once",
                       *quota->max_instances);
  }
  if (!pricing_.within_max_price(instance.spec)) {
    return fmt::format("waiting: the spot price is above its max_price ({} per GPU-hour)",
                       format_micros(*instance.spec.max_price));
  }
  return reservations_.hold_reason(instance, members);
}

int64_t Controller::reserved_hold(const Instance& instance, std::string_view gpu_type) const {
  // Spot work may use held capacity (it is preempted when the holder needs it); reserved work
  // uses its own reservation's share.
  if (instance.spec.pricing != model::PricingModel::kOnDemand) return 0;
  const std::optional<Timestamp> until =
      instance.spec.max_runtime_s
          ? std::optional<Timestamp>(now() + Millis(*instance.spec.max_runtime_s * 1000))
          : std::nullopt;
  return reservations_.held_back(gpu_type, until);
}

std::optional<Timestamp> Controller::earliest_start(const Instance& instance) const {
  // Per node of an acceptable type: free whole GPUs now, then the GPUs of work with a declared
  // end as it ends. Work without one never ends as far as this estimate knows.
  const int wanted = instance.spec.gpu_count;
  std::optional<Timestamp> earliest;
  const sched::Cluster& cluster = placements_.cluster();
  for (const auto& [node_id, placed] : placements_.by_node()) {
    const auto handle = cluster.find(node_id);
    if (!handle || !cluster.schedulable(*handle)) continue;
    const auto& types = instance.spec.gpu_types;
    if (!types.empty() &&
        std::find(types.begin(), types.end(), cluster.spec(*handle).gpu_type) == types.end()) {
      continue;
    }
    const auto free = cluster.free_gpu_milli(*handle);
    int whole = static_cast<int>(std::count(free.begin(), free.end(), sched::kMilliPerGpu));
    std::vector<std::pair<Timestamp, int>> endings;
    for (const auto& [id, placed_instance] : placed) {
      const Instance& other = *placed_instance;
      if (other.spec.max_runtime_s && other.started_at && other.gpu_milli == sched::kMilliPerGpu) {
        endings.emplace_back(*other.started_at + Millis(*other.spec.max_runtime_s * 1000),
                             static_cast<int>(other.gpus.size()));
      }
    }
    std::sort(endings.begin(), endings.end());
    std::optional<Timestamp> here =
        whole >= wanted ? std::optional<Timestamp>(now()) : std::nullopt;
    for (const auto& [end, gpus] : endings) {
      if (here) break;
      whole += gpus;
      if (whole >= wanted) here = end;
    }
    if (here && (!earliest || *here < *earliest)) earliest = here;
  }
  return earliest;
}

void Controller::set_reason(Instance& instance, std::string reason) {
  if (instance.reason == reason) return;
  instance.reason = std::move(reason);
  tracker_.touch(instance);
}

void Controller::try_place(Instance& instance, PassState& pass) {
  const int members = gang_size(instance);
  if (auto hold = admission_hold(instance, members); !hold.empty()) {
    set_reason(instance, std::move(hold));
    return;
  }
  // Volumes that were placed apart (each first used by other work) leave it nowhere to go.
  std::string conflict;
  const std::string pinned = volumes_.pinned_node(instance.spec, &conflict);
  if (!conflict.empty()) {
    set_reason(instance, "waiting: its volumes live on different nodes: " + conflict);
    return;
  }
  // The shape is formatted only once the pass has met a request without room (most passes
  // place everything they try).
  const auto shape = [&] {
    auto text = request_shape(instance.spec);
    if (!pinned.empty()) text += "|node=" + pinned;
    return text;
  };
  if (!pass.no_room.empty() && pass.no_room.contains(shape())) return;
  const bool spot = instance.spec.pricing == model::PricingModel::kSpot;
  const auto competes = [&](const Blocker& blocker) {
    const auto& a = blocker.gpu_types;
    const auto& b = instance.spec.gpu_types;
    return a.empty() || b.empty() ||
           std::find_first_of(a.begin(), a.end(), b.begin(), b.end()) != a.end();
  };
  for (const auto& blocker : pass.blockers) {
    // Backfill: only work that is done before the blocked request could start goes ahead of it.
    const bool ends_in_time = instance.spec.max_runtime_s &&
                              now() + Millis(*instance.spec.max_runtime_s * 1000) <= blocker.start;
    if (!spot && competes(blocker) && !ends_in_time) return;
  }
  auto request = scheduling_request(instance.spec);
  request.nodes = members;
  request.node_id = pinned;
  auto assignment = placements_.cluster().place(request);
  if (!assignment) {
    if (preempt_for(instance, request)) return;
    // Admitted although no node could hold it: say so, rather than "waiting for capacity".
    if (instance.spec.wait_for_capacity) {
      if (const auto never = placements_.cluster().why_never_fits(request)) {
        set_reason(instance,
                   fmt::format("waiting for a node that can hold it to join: {}", never->message));
      }
    }
    if (!pinned.empty()) {
      set_reason(instance,
                 fmt::format("waiting for capacity on node {}, where its volumes live", pinned));
    }
    pass.no_room.insert(shape());
    // Work pinned to one node blocks only that node, which the estimate does not know.
    if (!spot && members == 1 && pinned.empty() && pass.blockers.size() < kMaxBackfillBlockers) {
      if (const auto start = earliest_start(instance)) {
        pass.blockers.push_back({instance.spec.gpu_types, *start});
      }
    }
    return;
  }
  const auto& first = assignment->nodes.front();
  const std::string gpu_type = placements_.cluster().spec(first.node).gpu_type;
  const int64_t milli =
      int64_t{first.gpu_milli} * static_cast<int64_t>(first.gpus.size()) * members;
  if (const model::Quota* quota = quotas_.of(instance.tenant_id)) {
    const auto limit = quota->max_gpus_per_type.find(gpu_type);
    const int64_t held = placements_.holding(instance.tenant_id).milli_of_type(gpu_type);
    if (limit != quota->max_gpus_per_type.end() &&
        held + milli > int64_t{limit->second} * sched::kMilliPerGpu) {
      set_reason(instance, fmt::format("waiting: the tenant's quota allows {} {} GPU(s) at once",
                                       limit->second, gpu_type));
      return;
    }
  }
  if (const int64_t held_back = reserved_hold(instance, gpu_type); held_back > 0) {
    int64_t whole_taken = 0;
    for (const auto& part : assignment->nodes) {
      const auto free = placements_.cluster().free_gpu_milli(part.node);
      for (int position : part.gpus) whole_taken += free[position] == sched::kMilliPerGpu;
    }
    if (placements_.cluster().free_whole_gpus(gpu_type) - whole_taken < held_back) {
      set_reason(instance, "waiting: the free capacity is held for reservations");
      return;
    }
  }
  if (auto allocated = placements_.cluster().allocate(*assignment); !allocated) {
    spdlog::error("scheduler chose taken capacity for {}: {}", instance.id,
                  allocated.error().message);
    pass.no_room.insert(shape());
    return;
  }
  place_members(instance, std::move(*assignment));
}

bool Controller::preempt_for(const Instance& instance, const sched::Request& request) {
  if (instance.spec.pricing == model::PricingModel::kSpot) return false;
  if (const auto in_flight = preemptions_.find(instance.id);
      in_flight != preemptions_.end() && !in_flight->second.empty()) {
    return true;  // room is being made already
  }
  // Per node, the spot work it could give up to hold one member: lowest price first, then the
  // most recently started (it loses the least work). The nodes that need the fewest victims win
  // (a gang takes `nodes` of them, counting nodes where a member fits already as free of
  // victims).
  sched::Request member = request;
  member.nodes = 1;
  const bool gang = request.nodes > 1;
  struct Choice {
    std::vector<Instance*> victims;
    Micros price = 0;
  };
  std::vector<Choice> choices;  // in node id order
  for (const auto& [node_id, node] : nodes_) {
    const auto handle = placements_.cluster().find(node_id);
    if (!handle || !placements_.cluster().schedulable(*handle)) continue;
    if (gang && placements_.cluster().place_on(*handle, member)) {
      choices.emplace_back();
      continue;
    }
    std::vector<Instance*> spot;
    for (const auto& [id, placed] : placements_.on_node(node_id)) {
      Instance& candidate = *placed;
      if (candidate.spec.pricing == model::PricingModel::kSpot &&
          (candidate.state == InstanceState::kStarting ||
           candidate.state == InstanceState::kRunning)) {
        spot.push_back(&candidate);
      }
    }
    if (spot.empty()) continue;
    std::sort(spot.begin(), spot.end(), [&](const Instance* a, const Instance* b) {
      const auto pa = metering_.price_per_gpu_hour(*a).value_or(0),
                 pb = metering_.price_per_gpu_hour(*b).value_or(0);
      if (pa != pb) return pa < pb;
      return std::tie(b->started_at, b->id) < std::tie(a->started_at, a->id);
    });
    // Release victims one by one until the member fits this node, then put them all back:
    // this only asks what would be enough.
    Choice choice;
    bool fits = false;
    for (Instance* victim : spot) {
      if (!placements_.cluster().release(placements_.assignment(victim->id))) break;
      choice.victims.push_back(victim);
      choice.price += metering_.price_per_gpu_hour(*victim).value_or(0);
      if (placements_.cluster().place_on(*handle, member)) {
        fits = true;
        break;
      }
    }
    for (Instance* victim : choice.victims) {
      const auto restored = placements_.cluster().allocate(placements_.assignment(victim->id));
      GPURENT_ASSERT(restored, "could not restore the allocation of {}: {}", victim->id,
                     restored.error().message);
    }
    if (fits) choices.push_back(std::move(choice));
  }
  const auto wanted = static_cast<size_t>(request.nodes);
  if (choices.size() < wanted) return false;
  // Stable: among equals the lower node id, so the choice is deterministic.
  std::stable_sort(choices.begin(), choices.end(), [](const Choice& a, const Choice& b) {
    if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
    return a.price < b.price;
  });
  std::vector<Instance*> victims;
  for (size_t i = 0; i < wanted; ++i) {
    victims.insert(victims.end(), choices[i].victims.begin(), choices[i].victims.end());
  }
  // Nothing to give up: the request waits for something else (a selector, a fabric group).
  if (victims.empty()) return false;
  auto& in_flight = preemptions_[instance.id];
  for (Instance* victim : victims) {
    victim->preempt_requested = true;
    in_flight.insert(victim->id);
    std::string why = fmt::format("preempted by {} work", model::to_string(instance.spec.pricing));
    events_.record(victim->tenant_id, victim->id, model::event_kind::kInstancePreempted, why);
    request_stop(*victim, std::move(why));
  }
  spdlog::info("preempting {} spot instance(s) for {}", victims.size(), instance.id);
  return true;
}

void Controller::place_members(Instance& first, sched::Assignment assignment) {
  if (first.job_id.empty()) {
    dequeue(first);
    place(first, std::move(assignment.nodes.front()), nullptr);
    return;
  }
  Job& job = jobs_.at(first.job_id);
  JobTask& task = job.tasks.at(first.job_task);
  dequeue(first);
  task.attempts += 1;
  task.exit_code.reset();
  tracker_.touch_task(job, task.index);
  const Node& master = nodes_.at(placements_.cluster().spec(assignment.nodes.front().node).id);
  const std::string& address = master.address.empty() ? master.name : master.address;
  const int port = free_master_port(master.id);
  for (size_t rank = 0; rank < assignment.nodes.size(); ++rank) {
    Instance& member = instances_.at(task.members.at(rank));
    member.master_address = address;
    member.master_port = port;
    place(member, std::move(assignment.nodes[rank]), &job);
  }
  // What derive_job_state gives with this task unfinished and attempted, without its pass over
  // every task (per placement, that pass made placing an array quadratic).
  job.state = model::JobState::kRunning;
  tracker_.touch_job(job);
}

void Controller::place(Instance& instance, sched::NodeAssignment part, const Job* job) {
  Node& node = nodes_.at(placements_.cluster().spec(part.node).id);
  const auto gpus = gpus_by_index(node);
  instance.node_id = node.id;
  instance.gpus.clear();
  for (int position : part.gpus) {
    instance.gpus.push_back(gpus.at(position)->uuid);
  }
  instance.gpu_type = placements_.cluster().spec(part.node).gpu_type;
  instance.gpu_milli = part.gpu_milli;
  placements_.add(instance, std::move(part));
  instance.run += 1;
  instance.state = InstanceState::kStarting;
  instance.reason = "";
  instance.started_at.reset();
  instance.ended_at.reset();
  volumes_.pin(instance, node);
  tracker_.touch_node(node, /*desired_set_changed=*/true);
  instance.placed_generation = node.generation;
  tracker_.touch(instance);
  tracker_.placed(instance, job);
  spdlog::debug("placed instance={} run={} node={} gpus={}", instance.id, instance.run, node.id,
                fmt::join(instance.gpus, ","));
}

void Controller::observe_request(const model::InstanceSpec& spec, int count) {
  const auto request = scheduling_request(spec);
  auto& entry = request_shapes_[request_shape(spec)];
  entry.demand = request.per_node;
  entry.weight += count;
  requests_seen_ += count;
  if (requests_seen_ - profile_refreshed_at_ <
      std::max(kMinRequestsBetweenProfileRefreshes, profile_refreshed_at_ / 4)) {
    return;
  }
  profile_refreshed_at_ = requests_seen_;
  std::vector<sched::ProfileEntry> seen;
  // In shape order (the map's), which breaks ties in frequency deterministically.
  for (const auto& [shape, entry] : request_shapes_) seen.push_back(entry);
  placements_.cluster().set_profile(
      sched::most_common_shapes(std::move(seen), sched::kDefaultProfileCoverage, kProfileShapes));
  queue_changed_ = true;
}

int Controller::free_master_port(std::string_view node_id) const {
  // Rendezvous ports of the gangs whose rank 0 runs on this node: each gang gets its own.
  std::vector<int> taken;
  for (const auto& [id, placed] : placements_.on_node(node_id)) {
    const Instance& other = *placed;
    if (other.job_id.empty() || other.job_rank != 0) continue;  // only a gang's rank 0 listens
    if (other.master_port != 0) taken.push_back(other.master_port);
  }
  int port = model::kGangMasterPort;
  while (std::find(taken.begin(), taken.end(), port) != taken.end()) ++port;
  return port;
}

Result<sched::Assignment> Controller::assignment_of(const Instance& instance) const {
  const auto node_it = nodes_.find(instance.node_id);
  const auto handle = placements_.cluster().find(instance.node_id);
  if (node_it == nodes_.end() || !handle) {
    return fail(Error::internal(
        fmt::format("instance {} is on unknown node {}", instance.id, instance.node_id)));
  }
  const auto gpus = gpus_by_index(node_it->second);
  sched::NodeAssignment part{.node = *handle,
                             .gpus = {},
                             .gpu_milli = instance.gpu_milli,
                             .cpu_milli = int64_t{instance.spec.cpu} * 1000,
                             .memory_mib = int64_t{instance.spec.memory_gb} * kMibPerGib,
                             .disk_gb = instance.spec.disk_gb};
  for (const auto& uuid : instance.gpus) {
    const auto it = std::find_if(gpus.begin(), gpus.end(),
                                 [&](const model::Gpu* gpu) { return gpu->uuid == uuid; });
    if (it == gpus.end()) {
      return fail(Error::internal(fmt::format("instance {} holds GPU {} that node {} lacks",
                                              instance.id, uuid, instance.node_id)));
    }
    part.gpus.push_back(static_cast<int>(it - gpus.begin()));
  }
  std::sort(part.gpus.begin(), part.gpus.end());
  return sched::Assignment{{std::move(part)}};
}

void Controller::sync_cluster_node(const Node& node) {
  queue_changed_ = true;
  if (auto synced = placements_.cluster().upsert_node(node_spec(node)); !synced) {
    spdlog::error("node={} cannot be scheduled: {}", node.id, synced.error().message);
    return;
  }
  sync_gpu_availability(node);
  update_schedulable(node);
}

void Controller::update_schedulable(const Node& node) {
  queue_changed_ = true;
  if (const auto handle = placements_.cluster().find(node.id)) {
    placements_.cluster().set_schedulable(*handle,
                                          node.state == NodeState::kReady && !node.cordoned);
  }
}

Status Controller::check_invariants() const {
  GPURENT_CHECK(placements_.check_invariants(instances_));
  const auto broken = [](const std::string& what) {
    return fail(Error::internal("controller invariant broken: " + what));
  };
  GPURENT_CHECK(reservations_.check_invariants());
  for (const auto& [id, job] : jobs_) {
    for (const auto& task : job.tasks) {
      int placed = 0, pending = 0;
      for (const auto& member_id : task.members) {
        const auto state = instances_.at(member_id).state;
        placed += state == InstanceState::kStarting;
        pending += state == InstanceState::kPending;
      }
      if (placed != 0 && pending != 0) {
        return broken(fmt::format("job {} task {} is placed in part", id, task.index));
      }
    }
  }
  return {};
}

}  // namespace gpurent::controller
