#include "controller/scheduler.h"

#include <algorithm>
#include <deque>
#include <queue>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/assert.h"
#include "controller/internal.h"

namespace gpurent::controller {

using model::Instance;
using model::InstanceState;
using Kind = Scheduler::Decision::Kind;

Scheduler::QueuePosition Scheduler::queue_position(const Instance& instance) {
  return {-model::scheduling_class(instance.spec.pricing), -instance.spec.priority,
          instance.queue_sequence, instance.id};
}

void Scheduler::enqueue(Instance& instance) {
  // Work that comes back to the queue (moved, retried) keeps its place, which may be anywhere in
  // the order: the next pass takes the whole queue. A new arrival comes last in its band.
  if (instance.queue_sequence == 0) {
    instance.queue_sequence = ++last_queue_sequence_;
    arrivals_.push_back(queue_position(instance));
  } else {
    queue_changed_ = true;
  }
  const QueuePosition position = queue_position(instance);
  const auto& spec = instance.spec;
  const bool plain = spec.volumes.empty() && spec.pricing != model::PricingModel::kReserved &&
                     !(spec.pricing == model::PricingModel::kSpot && spec.max_price);
  auto& queue = bands_[{position.negated_class, position.negated_priority}][instance.tenant_id];
  if (queue
          .try_emplace({position.sequence, position.id},
                       Queued{.instance = &instance, .plain = plain})
          .second) {
    ++queue_length_;
    ++queued_by_tenant_[instance.tenant_id];
  }
}

void Scheduler::dequeue(const Instance& instance) {
  const QueuePosition position = queue_position(instance);
  const auto band = bands_.find({position.negated_class, position.negated_priority});
  if (band != bands_.end()) {
    const auto queue = band->second.find(instance.tenant_id);
    if (queue != band->second.end() && queue->second.erase({position.sequence, position.id}) > 0) {
      --queue_length_;
      const auto it = queued_by_tenant_.find(instance.tenant_id);
      if (--it->second == 0) queued_by_tenant_.erase(it);
    }
  }
  preemptions_.erase(instance.id);
  settled_.reset();  // what it blocked, or the capacity it takes when placed, changes the rest
}

Scheduler::ShapeId Scheduler::shape_of(const Instance& instance, const std::string& pinned,
                                       int members) {
  const auto intern = [this](std::string text) {
    return shape_ids_.try_emplace(std::move(text), static_cast<ShapeId>(shape_ids_.size()))
        .first->second;
  };
  const auto text = [&] {
    auto shape = detail::request_shape(instance.spec);
    if (!pinned.empty()) shape += "|node=" + pinned;
    if (members > 1) shape += fmt::format("|nodes={}", members);
    return shape;
  };
  return intern(text());
}

int Scheduler::queued(std::string_view tenant_id) const {
  const auto it = queued_by_tenant_.find(tenant_id);
  return it == queued_by_tenant_.end() ? 0 : it->second;
}

void Scheduler::restore(Instance& instance) {
  last_queue_sequence_ = std::max(last_queue_sequence_, instance.queue_sequence);
  if (instance.state == InstanceState::kPending || model::holds_gpus(instance.state)) {
    observe_request(instance.spec, 1);
  }
  // A job task queues as one entry, its rank-0 member.
  if (instance.state == InstanceState::kPending && instance.job_rank == 0) enqueue(instance);
}

void Scheduler::time_passed(bool spot_moved, bool metered) {
  const TimeReads& read = time_reads_;
  const bool rates_moved = spot_moved || c_.pricing.book().next_change(read.since) <= now();
  if (read.clock || (read.live_rates && rates_moved) || (read.metered_prices && metered)) {
    queue_changed_ = true;
  }
}

void Scheduler::victim_ended(const std::string& instance_id) {
  for (auto& [waiting, victims] : preemptions_) victims.erase(instance_id);
}

int Scheduler::gang_size(const Instance& request) const {
  if (request.job_id.empty()) return 1;
  return c_.jobs.at(request.job_id).spec.nodes;
}

void Scheduler::observe_request(const model::InstanceSpec& spec, int count) {
  const auto request = detail::scheduling_request(spec);
  auto& entry = request_shapes_[detail::request_shape(spec)];
  entry.demand = request.per_node;
  entry.gpu_types = request.gpu_types;
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
  c_.placements.cluster().set_profile(
      sched::most_common_shapes(std::move(seen), sched::kDefaultProfileCoverage, kProfileShapes,
                                c_.placements.cluster().policy()));
  queue_changed_ = true;
}

bool Scheduler::follows_settled_pass(const QueuePosition& arrival) const {
  // A full pass takes bands in order and, within a band where nothing is placed, each tenant's
  // requests together (their shares do not change): an arrival after the last request tried is
  // tried after it if it opens a later band or joins the same tenant's requests.
  const QueuePosition& last = settled_->last;
  if (arrival <= last) return false;
  return arrival.negated_class != last.negated_class ||
         arrival.negated_priority != last.negated_priority ||
         c_.instances.at(arrival.id).tenant_id == c_.instances.at(last.id).tenant_id;
}

void Scheduler::pass(const Apply& apply) {
  if (queue_length_ == 0) {
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
  std::optional<QueuePosition> from;
  if (arrivals_only) {
    pass = std::move(settled_->state);
    from = std::move(settled_->last);
  } else {
    time_reads_ = {.since = now()};
  }
  queue_changed_ = false;
  arrivals_.clear();
  // Settled unless this pass places something: placing dequeues, which forgets it, and the next
  // pass retries every request with what changed.
  settled_ = SettledPass{};
  const Instance* last = nullptr;
  auto band =
      from ? bands_.lower_bound({from->negated_class, from->negated_priority}) : bands_.begin();
  while (band != bands_.end()) {
    const bool resumed =
        from && band->first == BandKey{from->negated_class, from->negated_priority};
    walk(band->second, resumed ? &*from : nullptr, pass, apply, last);
    std::erase_if(band->second, [](const auto& tenant) { return tenant.second.empty(); });
    band = band->second.empty() ? bands_.erase(band) : std::next(band);
  }
  if (settled_ && last != nullptr) {
    *settled_ = {std::move(pass), queue_position(*last)};
  } else {
    settled_.reset();
  }
}

void Scheduler::walk(Band& band, const QueuePosition* from, PassState& pass, const Apply& apply,
                     const Instance*& last) {
  // The tenants take turns: the one holding the least (weighted by its quota weight) goes next,
  // each in arrival order. A request that is not placed leaves its tenant's share as it was, so
  // the tenant goes next again: its requests are tried in a row until one is placed.
  struct Turn {
    double share = 0;
    std::string_view tenant;
    TenantQueue* queue = nullptr;
    TenantQueue::iterator next;
    bool operator>(const Turn& other) const {
      return std::tie(share, tenant) > std::tie(other.share, other.tenant);
    }
  };
  const auto share = [this](std::string_view tenant) {
    return static_cast<double>(c_.placements.holding(tenant).milli) / c_.quotas.weight(tenant);
  };
  std::priority_queue<Turn, std::vector<Turn>, std::greater<>> turns;
  if (from != nullptr) {
    // Only the arrivals are tried, and in this band they are the settled pass's last tenant's.
    const auto queue = band.find(c_.instances.at(from->id).tenant_id);
    if (queue != band.end()) {
      turns.push(
          {0, queue->first, &queue->second, queue->second.upper_bound({from->sequence, from->id})});
    }
  } else {
    for (auto& [tenant, queue] : band) turns.push({share(tenant), tenant, &queue, queue.begin()});
  }
  while (!turns.empty()) {
    const Turn turn = turns.top();
    turns.pop();
    const model::Quota* quota = c_.quotas.of(turn.tenant);
    const bool instances_unlimited = quota == nullptr || !quota->max_instances;
    for (auto it = turn.next; it != turn.queue->end();) {
      Queued& entry = it->second;
      // Placing the request takes it out of the queue: the next one is found first.
      const auto next = std::next(it);
      ++requests_tried_;
      last = entry.instance;
      // What decide() would say without looking further: nothing to do.
      if (entry.plain && instances_unlimited && entry.members > 0 &&
          pass.found_no_room(entry.shape)) {
        it = next;
        continue;
      }
      Decision decision = decide(entry, pass);
      const bool placed = decision.kind == Kind::kPlace;
      apply(*entry.instance, std::move(decision));
      it = next;
      if (placed) {
        if (it != turn.queue->end()) turns.push({share(turn.tenant), turn.tenant, turn.queue, it});
        break;
      }
    }
  }
}

std::string Scheduler::waiting_for_its_node(const Instance& instance) const {
  const model::Node& node = c_.nodes.at(instance.start_on_node);
  std::string why = "for capacity";
  if (node.state != model::NodeState::kReady) {
    why = fmt::format("until it is back (it is {})", model::to_string(node.state));
  } else if (node.cordoned) {
    why = "until it is uncordoned";
  }
  return fmt::format(
      "waiting {} on node {}, which keeps its files; `gpurent start {} --anywhere` starts it on "
      "another node without them",
      why, node.id, instance.id);
}

Scheduler::Decision Scheduler::decide(Queued& entry, PassState& pass) {
  const Instance& instance = *entry.instance;
  const auto wait = [](std::string reason) {
    return Decision{.kind = Kind::kWait, .reason = std::move(reason)};
  };
  if (entry.members == 0) {
    entry.members = gang_size(instance);
    entry.shape = shape_of(instance, "", entry.members);
  }
  const int members = entry.members;
  if (auto hold = admission_hold(instance, members); !hold.empty()) return wait(std::move(hold));
  // Volumes that were placed apart (each first used by other work) leave it nowhere to go.
  std::string conflict;
  std::string pinned = c_.volumes.pinned_node(instance.spec, &conflict);
  if (!conflict.empty()) return wait("waiting: its volumes live on different nodes: " + conflict);
  // A tenant's start waits for the node that keeps its files (its volumes live there too: they
  // were pinned by its placement there, or placed it there).
  const bool waits_for_files = pinned.empty() && !instance.start_on_node.empty() &&
                               c_.nodes.contains(instance.start_on_node);
  if (waits_for_files) pinned = instance.start_on_node;
  // Where its volumes pin it may change while it waits; its spec and gang do not.
  const ShapeId shape = pinned.empty() ? entry.shape : shape_of(instance, pinned, members);
  if (pass.found_no_room(shape)) return {};
  const bool spot = instance.spec.pricing == model::PricingModel::kSpot;
  const auto competes = [&](const Blocker& blocker) {
    const auto& a = blocker.gpu_types;
    const auto& b = instance.spec.gpu_types;
    return a.empty() || b.empty() ||
           std::find_first_of(a.begin(), a.end(), b.begin(), b.end()) != a.end();
  };
  if (instance.spec.max_runtime_s && !pass.blockers.empty()) time_reads_.clock = true;
  for (const auto& blocker : pass.blockers) {
    // Backfill: only work that is done before the blocked request could start goes ahead of it.
    const bool ends_in_time = instance.spec.max_runtime_s &&
                              now() + Millis(*instance.spec.max_runtime_s * 1000) <= blocker.start;
    if (!spot && competes(blocker) && !ends_in_time) return {};
  }
  auto request = detail::scheduling_request(instance.spec);
  request.nodes = members;
  request.node_id = pinned;
  auto assignment = place(request, shape);
  if (!assignment) {
    if (!spot) {
      if (Decision room = make_room(instance, request, shape); room.kind != Kind::kWait) {
        return room;
      }
    }
    Decision waits{.kind = Kind::kWait};
    if (waits_for_files) {
      waits.reason = waiting_for_its_node(instance);
    } else if (!pinned.empty()) {
      waits.reason = fmt::format("waiting for capacity on node {}, where its volumes live", pinned);
    } else if (instance.spec.wait_for_capacity) {
      // Admitted although no node could hold it: say so, rather than "waiting for capacity".
      if (const auto never = c_.placements.cluster().why_never_fits(request)) {
        waits.reason =
            fmt::format("waiting for a node that can hold it to join: {}", never->message);
      }
    }
    pass.add_no_room(shape);
    // Work pinned to one node blocks only that node, which the estimate does not know.
    if (!spot && members == 1 && pinned.empty() && pass.blockers.size() < kMaxBackfillBlockers) {
      if (const auto start = earliest_start(instance)) {
        pass.blockers.push_back({instance.spec.gpu_types, *start});
      }
    }
    return waits;
  }
  const auto& first = assignment->nodes.front();
  const std::string gpu_type = c_.placements.cluster().spec(first.node).gpu_type;
  const int64_t milli =
      int64_t{first.gpu_milli} * static_cast<int64_t>(first.gpus.size()) * members;
  if (const model::Quota* quota = c_.quotas.of(instance.tenant_id)) {
    const auto limit = quota->max_gpus_per_type.find(gpu_type);
    const int64_t held = c_.placements.holding(instance.tenant_id).milli_of_type(gpu_type);
    if (limit != quota->max_gpus_per_type.end() &&
        held + milli > int64_t{limit->second} * sched::kMilliPerGpu) {
      return wait(fmt::format("waiting: the tenant's quota allows {} {} GPU(s) at once",
                              limit->second, gpu_type));
    }
  }
  if (const int64_t held_back = reserved_hold(instance, gpu_type); held_back > 0) {
    int64_t whole_taken = 0;
    for (const auto& part : assignment->nodes) {
      const auto free = c_.placements.cluster().free_gpu_milli(part.node);
      for (int position : part.gpus) whole_taken += free[position] == sched::kMilliPerGpu;
    }
    if (c_.placements.cluster().free_whole_gpus(gpu_type) - whole_taken < held_back) {
      return wait("waiting: the free capacity is held for reservations");
    }
  }
  if (auto allocated = c_.placements.cluster().allocate(*assignment); !allocated) {
    spdlog::error("scheduler chose taken capacity for {}: {}", instance.id,
                  allocated.error().message);
    pass.add_no_room(shape);
    return {};
  }
  return {.kind = Kind::kPlace, .assignment = std::move(*assignment)};
}

std::optional<sched::Assignment> Scheduler::place(const sched::Request& request, ShapeId shape) {
  sched::Cluster& cluster = c_.placements.cluster();
  const auto placed = [&]() -> std::optional<sched::Assignment> {
    if (auto assignment = cluster.place(request)) return std::move(*assignment);
    return std::nullopt;
  };
  if (request.nodes > 1) return placed();
  if (shape >= fit_known_.size()) fit_known_.resize(shape + 1);
  uint64_t& known = fit_known_[shape];
  const uint64_t end = c_.placements.released_end();
  if (known > 0 && known - 1 >= c_.placements.released_begin()) {
    const auto released = c_.placements.released_since(known - 1);
    if (std::none_of(released.begin(), released.end(), [&](sched::NodeHandle node) {
          return cluster.place_on(node, request).has_value();
        })) {
      known = end + 1;
      return std::nullopt;
    }
  }
  auto assignment = placed();
  known = assignment ? 0 : end + 1;
  return assignment;
}

std::string Scheduler::admission_hold(const Instance& instance, int members) {
  const model::Quota* quota = c_.quotas.of(instance.tenant_id);
  const int instances = c_.placements.holding(instance.tenant_id).instances;
  if (quota != nullptr && quota->max_instances && instances + members > *quota->max_instances) {
    return fmt::format("waiting: the tenant's quota allows {} instance(s) at once",
                       *quota->max_instances);
  }
  if (instance.spec.pricing == model::PricingModel::kSpot && instance.spec.max_price) {
    time_reads_.live_rates = true;
  }
  if (!c_.pricing.within_max_price(instance.spec)) {
    return fmt::format("waiting: the spot price is above its max_price ({} per GPU-hour)",
                       format_micros(*instance.spec.max_price));
  }
  return c_.reservations.hold_reason(instance, members);
}

int64_t Scheduler::reserved_hold(const Instance& instance, std::string_view gpu_type) {
  // Spot work may use held capacity (it is preempted when the holder needs it); reserved work
  // uses its own reservation's share.
  if (instance.spec.pricing != model::PricingModel::kOnDemand) return 0;
  // Bookings that begin before its declared end hold capacity back: fewer as time passes.
  if (instance.spec.max_runtime_s) time_reads_.clock = true;
  const std::optional<Timestamp> until =
      instance.spec.max_runtime_s
          ? std::optional<Timestamp>(now() + Millis(*instance.spec.max_runtime_s * 1000))
          : std::nullopt;
  return c_.reservations.held_back(gpu_type, until);
}

std::optional<Timestamp> Scheduler::earliest_start(const Instance& instance) const {
  // Per node of an acceptable type: free whole GPUs now, then the GPUs of work with a declared
  // end as it ends. Work without one never ends as far as this estimate knows.
  const int wanted = instance.spec.gpu_count;
  if (c_.placements.with_declared_runtime() == 0) {
    // Nothing placed ends at a known time: now where enough whole GPUs are free (the cluster's
    // index answers without a walk), or never.
    sched::Request whole_gpus;
    whole_gpus.gpu_types = instance.spec.gpu_types;
    whole_gpus.per_node = {.gpu_count = wanted, .cpu_milli = 0, .memory_mib = 0};
    if (c_.placements.cluster().place(whole_gpus)) return now();
    return std::nullopt;
  }
  std::optional<Timestamp> earliest;
  const sched::Cluster& cluster = c_.placements.cluster();
  for (const auto& [node_id, placed] : c_.placements.by_node()) {
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

bool Scheduler::has_gpus_for(sched::NodeHandle node, const sched::Request& member) const {
  if (member.per_node.gpu_count == 0) return true;
  const auto& spec = c_.placements.cluster().spec(node);
  const auto& types = member.gpu_types;
  return (types.empty() || std::find(types.begin(), types.end(), spec.gpu_type) != types.end()) &&
         spec.gpu_memory_mib >= member.min_gpu_memory_mib;
}

Scheduler::NodeRoom& Scheduler::node_room(sched::NodeHandle node) {
  if (node >= node_rooms_.size()) node_rooms_.resize(node + 1);
  NodeRoom& room = node_rooms_[node];
  const uint64_t version = c_.placements.node_version(node) + 1;
  if (room.version == version) return room;
  const sched::Cluster& cluster = c_.placements.cluster();
  room.version = version;
  room.priced_valid = false;
  room.spot.clear();
  room.held.clear();
  room.gpu_milli = cluster.free_gpu_milli(node);
  const auto host = cluster.free_resources(node);
  room.cpu_milli = host.cpu_milli;
  room.memory_mib = host.memory_mib;
  for (const auto& [id, placed] : c_.placements.on_node(cluster.spec(node).id)) {
    Instance& candidate = *placed;
    if (candidate.spec.pricing != model::PricingModel::kSpot ||
        (candidate.state != InstanceState::kStarting &&
         candidate.state != InstanceState::kRunning)) {
      continue;
    }
    room.spot.push_back(&candidate);
    room.held.push_back(&c_.placements.assignment(candidate.id));
    // A GPU it shares still holds the rest of its share.
    for (const auto& part : room.held.back()->nodes) {
      if (part.node != node) continue;
      for (int position : part.gpus) room.gpu_milli[position] += part.gpu_milli;
      room.cpu_milli += part.cpu_milli;
      room.memory_mib += part.memory_mib;
    }
  }
  for (size_t position = 0; position < room.gpu_milli.size(); ++position) {
    if (!cluster.gpu_available(node, static_cast<int>(position))) room.gpu_milli[position] = -1;
  }
  return room;
}

const std::vector<Scheduler::Priced>& Scheduler::priced(NodeRoom& room) {
  const billing::PriceBook& book = c_.pricing.book();
  const uint64_t spot_revision = c_.pricing.spot_market().revision();
  const auto& read = room.rates_read;
  const bool same_rates =
      read.book == book.revision() && read.spot == spot_revision && now() < read.until;
  // Running work is priced as metered; starting work at the rates now.
  const auto holds = [&](const Priced& entry) {
    if (entry.instance->state == InstanceState::kRunning) {
      time_reads_.metered_prices = true;
      return entry.usage != nullptr && entry.usage->metered_until == entry.metered_until;
    }
    time_reads_.live_rates = true;
    return entry.usage == nullptr && same_rates;
  };
  // Every entry is read (not only until one has moved): each notes what it read.
  if (room.priced_valid &&
      std::ranges::count_if(room.priced, holds) == static_cast<ptrdiff_t>(room.priced.size())) {
    return room.priced;
  }
  room.priced.clear();
  for (size_t i = 0; i < room.spot.size(); ++i) {
    Instance* candidate = room.spot[i];
    const model::UsageRecord* usage =
        candidate->state == InstanceState::kRunning ? c_.metering.current(*candidate) : nullptr;
    room.priced.push_back({.price = c_.metering.price_per_gpu_hour(*candidate).value_or(0),
                           .instance = candidate,
                           .held = room.held[i],
                           .usage = usage,
                           .metered_until = usage ? usage->metered_until : Timestamp{}});
  }
  std::sort(room.priced.begin(), room.priced.end(), [](const Priced& a, const Priced& b) {
    if (a.price != b.price) return a.price < b.price;
    return std::tie(b.instance->started_at, b.instance->id) <
           std::tie(a.instance->started_at, a.instance->id);
  });
  room.priced_valid = true;
  room.rates_read = {book.revision(), spot_revision, book.next_change(now())};
  return room.priced;
}

bool Scheduler::could_make_room(const NodeRoom& room, const sched::Request& member) {
  const auto& d = member.per_node;
  const auto usable = std::count_if(room.gpu_milli.begin(), room.gpu_milli.end(),
                                    [&](int milli) { return milli >= 0 && milli >= d.gpu_milli; });
  return !room.spot.empty() && usable >= d.gpu_count && room.cpu_milli >= d.cpu_milli &&
         room.memory_mib >= d.memory_mib;
}

Scheduler::Decision Scheduler::make_room(const Instance& instance, const sched::Request& request,
                                         ShapeId shape) {
  if (const auto in_flight = preemptions_.find(instance.id);
      in_flight != preemptions_.end() && !in_flight->second.empty()) {
    return {};  // room is being made already
  }
  // Per node, the spot work it could give up to hold one member: lowest price first, then the
  // most recently started (it loses the least work). The nodes that need the fewest victims win
  // (a gang takes `nodes` of them, counting nodes where a member fits already as free of
  // victims).
  sched::Request member = request;
  member.nodes = 1;
  const bool gang = request.nodes > 1;
  struct Choice {
    sched::NodeHandle node = 0;
    std::vector<Instance*> victims;
    Micros price = 0;
  };
  std::vector<std::pair<std::string_view, Choice>> choices;  // by node id
  const auto known = room_known_.find(shape);
  // The victims make_room found enough last time on a node, while nothing was placed on or
  // removed from it since: if they are still the first of its spot work in order, they are still
  // just enough, and the cluster is not asked again (fits_after_releasing).
  const auto still_enough = [&](sched::NodeHandle node,
                                const std::vector<Priced>& spot) -> const RoomOnNode* {
    if (known == room_known_.end()) return nullptr;
    const auto& could = known->second.could;
    const auto it = std::lower_bound(
        could.begin(), could.end(), node,
        [](const RoomOnNode& room, sched::NodeHandle handle) { return room.node < handle; });
    if (it == could.end() || it->node != node || it->version != c_.placements.node_version(node) ||
        it->victims.size() > spot.size() ||
        !std::equal(it->victims.begin(), it->victims.end(), spot.begin(),
                    [](const Instance* victim, const Priced& priced) {
                      return victim == priced.instance;
                    })) {
      return nullptr;
    }
    return &*it;
  };
  const sched::Cluster& cluster = c_.placements.cluster();
  const auto consider = [&](sched::NodeHandle node) {
    if (!cluster.schedulable(node) || !has_gpus_for(node, member)) return;
    const std::string_view node_id = cluster.spec(node).id;
    if (gang && cluster.place_on(node, member)) {
      choices.emplace_back(node_id, Choice{.node = node});
      return;
    }
    NodeRoom& room = node_room(node);
    if (!could_make_room(room, member)) return;
    const auto& in_order = priced(room);
    Choice choice{.node = node};
    if (const RoomOnNode* known_room = still_enough(node, in_order)) {
      choice.victims = known_room->victims;
      for (size_t i = 0; i < choice.victims.size(); ++i) choice.price += in_order[i].price;
      choices.emplace_back(node_id, std::move(choice));
      return;
    }
    // The fewest of them, in order, whose leaving lets the member in.
    std::vector<const sched::Assignment*> held;
    for (const Priced& entry : in_order) held.push_back(entry.held);
    const auto enough = cluster.fits_after_releasing(node, member, held);
    if (!enough) return;
    for (size_t i = 0; i < *enough; ++i) {
      choice.victims.push_back(in_order[i].instance);
      choice.price += in_order[i].price;
    }
    choices.emplace_back(node_id, std::move(choice));
  };
  const auto wanted = static_cast<size_t>(request.nodes);
  const uint64_t released_end = c_.placements.released_end();
  if (known != room_known_.end() && known->second.released_end >= c_.placements.released_begin()) {
    // Where it last looked, only the nodes that could take a member then, and the nodes released
    // on since, can take one now: each is looked at once (the choice among them does not depend
    // on the order they are looked at in).
    std::vector<sched::NodeHandle> nodes;
    for (const RoomOnNode& room : known->second.could) nodes.push_back(room.node);
    const auto released = c_.placements.released_since(known->second.released_end);
    nodes.insert(nodes.end(), released.begin(), released.end());
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (sched::NodeHandle node : nodes) consider(node);
  } else {
    // A gang may also use nodes where a member fits already, placed work or not; a single
    // request only nodes with spot work on them.
    const auto consider_id = [&](std::string_view node_id) {
      if (const auto node = cluster.find(node_id)) consider(*node);
    };
    if (gang) {
      for (const auto& [node_id, node] : c_.nodes) consider_id(node_id);
    } else {
      for (const auto& [node_id, placed] : c_.placements.by_node()) consider_id(node_id);
    }
  }
  RoomKnown remembered{.released_end = released_end, .could = {}};
  for (const auto& [node_id, choice] : choices) {
    remembered.could.push_back(
        {choice.node, c_.placements.node_version(choice.node), choice.victims});
  }
  std::sort(remembered.could.begin(), remembered.could.end(),
            [](const RoomOnNode& a, const RoomOnNode& b) { return a.node < b.node; });
  room_known_.insert_or_assign(shape, std::move(remembered));
  if (choices.size() < wanted) return {.kind = Kind::kWait};
  // Among equals the lower node id, so the choice is deterministic.
  std::sort(choices.begin(), choices.end(), [](const auto& a, const auto& b) {
    const Choice& ca = a.second;
    const Choice& cb = b.second;
    if (ca.victims.size() != cb.victims.size()) return ca.victims.size() < cb.victims.size();
    if (ca.price != cb.price) return ca.price < cb.price;
    return a.first < b.first;
  });
  std::vector<Instance*> victims;
  for (size_t i = 0; i < wanted; ++i) {
    const auto& chosen = choices[i].second.victims;
    victims.insert(victims.end(), chosen.begin(), chosen.end());
  }
  // Nothing to give up: the request waits for something else (a selector, a fabric group).
  if (victims.empty()) return {.kind = Kind::kWait};
  auto& in_flight = preemptions_[instance.id];
  for (const Instance* victim : victims) in_flight.insert(victim->id);
  spdlog::info("preempting {} spot instance(s) for {}", victims.size(), instance.id);
  return {.kind = Kind::kMakeRoom, .victims = std::move(victims)};
}

}  // namespace gpurent::controller
