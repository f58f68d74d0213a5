// Scheduler: the queue of pending work, and the scheduling pass that decides, request by request
// in placement order, what becomes of each: placed (with the capacity it takes), left waiting
// (and why), or making room by preempting spot work. The controller applies each Decision before
// the next request is decided, so that the next one sees its effect: the capacity taken, the
// tenant's holdings (quotas, fair share), the queue.
//
// - Order: scheduling class (reserved, on-demand, spot), then the tenant's priority, then first
//   come first served. Within a band of equal class and priority the tenants take turns: the one
//   holding the least (weighted by its quota weight) goes next, each in arrival order.
// - Admission before capacity: the tenant's quota, max_price against the spot price, the
//   reservation's window and size, volumes that live on different nodes.
// - Backfill (EASY): a request that finds no room holds back, for the rest of the pass, the
//   work of the types it accepts that would not be done by the time it could start (estimated
//   from declared runtimes); up to kMaxBackfillBlockers such requests per pass.
// - Preemption: on-demand and reserved work that finds no room asks the fewest, cheapest, most
//   recently started spot instances that make it fit to leave; it waits for them (and asks no
//   more) until they are gone.
// - A pass is skipped when nothing it depends on changed (queue_changed()) and nothing arrived;
//   arrivals that a full pass would try after every request the last pass tried are tried alone,
//   from where it ended, so a command into a long queue of work that does not fit costs no pass
//   over that queue.
//
// Invariants: the queue holds exactly the pending instances that are not job members of rank
// above 0 (a job task queues as its rank-0 member), each at its queue position; a Decision to
// place is allocated in the cluster view when the pass hands it over.
//
// Part of the Controller (controller.h), which applies the decisions (scheduling.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/string_hash.h"
#include "controller/job_registry.h"
#include "controller/metering.h"
#include "controller/node_registry.h"
#include "controller/placements.h"
#include "controller/pricing.h"
#include "controller/quotas.h"
#include "controller/reservations.h"
#include "controller/volumes.h"
#include "model/instance.h"
#include "sched/cluster.h"

namespace gpurent::controller {

// Blocked requests per scheduling pass that hold back later work (backfill reservations).
inline constexpr size_t kMaxBackfillBlockers = 8;
// The placement profile holds the most common request shapes, and is refreshed as the number
// of requests seen grows by a quarter (re-indexing the cluster costs O(nodes)).
inline constexpr size_t kProfileShapes = 32;
inline constexpr int64_t kMinRequestsBetweenProfileRefreshes = 64;

class Scheduler {
 public:
  // What the pass decided for one request.
  struct Decision {
    enum class Kind {
      kPlace,     // `assignment`, allocated in the cluster view: one part per gang member
      kWait,      // it waits; `reason` (if not empty) says why, for its tenant
      kMakeRoom,  // `victims` are asked to leave; it waits for them
      kNone,      // nothing to do now (no room, held back by backfill, room being made)
    };
    Kind kind = Kind::kNone;
    sched::Assignment assignment;
    std::string reason;
    std::vector<model::Instance*> victims;
  };
  // Called once per request the pass tries, in order, with what was decided for it.
  using Apply = std::function<void(model::Instance& request, Decision decision)>;

  struct Context {
    const Clock& clock;
    IndexedMap<model::Instance>& instances;
    const JobRegistry& jobs;  // a job task's gang is as many members as its job's nodes
    Placements& placements;   // the cluster view the pass allocates in
    const NodeRegistry& nodes;
    const Quotas& quotas;
    const Pricing& pricing;
    const Reservations& reservations;
    const Volumes& volumes;    // where a request's volumes pin it
    const Metering& metering;  // what spot work pays, to pick the cheapest to preempt
  };
  explicit Scheduler(Context context) : c_(context) {}
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // --- The queue ---
  // Queues a pending instance. A new arrival (queue_sequence 0) gets the next sequence and comes
  // last in its band; work that comes back (moved, retried) keeps its place.
  void enqueue(model::Instance& instance);
  // Takes it out (placed, withdrawn, removed); the preemptions it asked for are forgotten.
  void dequeue(const model::Instance& instance);
  // At restore, for every instance in creation order: its sequence is taken (new arrivals come
  // after it), and it is queued if pending (a job task as its rank-0 member).
  void restore(model::Instance& instance);
  size_t queue_length() const { return queue_length_; }
  // The tenant's pending instances in the queue (a job's tasks each count once).
  int queued(std::string_view tenant_id) const;

  // --- What a pass depends on ---
  // Something it reads changed (capacity, a price, a quota, a booking, time): the next pass takes
  // the whole queue.
  void queue_changed() { queue_changed_ = true; }
  // A node joined, changed, or came into or out of service: as queue_changed(), and what was
  // remembered about where request shapes could not go (fit_known_, room_known_) is forgotten.
  void nodes_changed() {
    queue_changed_ = true;
    fit_known_.clear();
    room_known_.clear();
    node_rooms_.clear();
  }
  // Time passed (the tick; `spot_moved`: a spot price moved, `metered`: runs were metered, which
  // reprices them). The next pass takes the whole queue where the passes since the last whole one
  // read something that time changed: the clock (a declared runtime against a backfill estimate
  // or a reservation's window), a live rate (max_price admission, starting spot work priced for
  // preemption) once a spot price moved or a price version came into force, a metered run's
  // price (running spot work priced for preemption) once runs were metered.
  void time_passed(bool spot_moved, bool metered);
  // What the last pass estimated moved (a declared end became known, a booking was cancelled):
  // arrivals are not tried from where it ended. Asks for no pass by itself.
  void forget_settled_pass() { settled_.reset(); }
  // Spot work asked to leave is gone: whoever asked waits for it no more.
  void victim_ended(const std::string& instance_id);
  // Learns the shapes of requests for fragmentation-aware placement (see sched::Cluster).
  void observe_request(const model::InstanceSpec& spec, int count);

  // --- The pass ---
  // Decides what it can for the queue, in order, handing each decision to `apply` before the next
  // is made; nothing when nothing changed since the last pass.
  void pass(const Apply& apply);
  // Requests the passes have tried, in all: their work, which a command that queues must not make
  // grow with the queue.
  uint64_t requests_tried() const { return requests_tried_; }

 private:
  Timestamp now() const { return c_.clock.now(); }
  // A request that could not be placed and holds back lower-ordered work that would delay it
  // (EASY backfill): `start` is the earliest it could start, from declared runtimes.
  struct Blocker {
    std::vector<std::string> gpu_types;  // empty: any
    Timestamp start{};
  };
  // Request shapes (detail::request_shape, where the request's volumes pin it, its gang's size),
  // interned: a pass compares them for every request it tries.
  using ShapeId = uint32_t;
  ShapeId shape_of(const model::Instance& instance, const std::string& pinned, int members);
  struct PassState {
    std::vector<bool> no_room;  // by ShapeId: request shapes that found no room in this pass
    std::vector<Blocker> blockers;
    bool found_no_room(ShapeId shape) const { return shape < no_room.size() && no_room[shape]; }
    void add_no_room(ShapeId shape) {
      if (shape >= no_room.size()) no_room.resize(shape + 1);
      no_room[shape] = true;
    }
  };
  // A queued request, with what a pass reads of it for every request it tries.
  struct Queued {
    model::Instance* instance = nullptr;
    int members = 0;  // its gang's size (gang_size); 0 until first tried
    // Its shape where its volumes pin it nowhere (spec and gang do not change while it waits);
    // set with `members`.
    ShapeId shape = 0;
    // Nothing but the tenant's quota can hold it before capacity is looked at (no max_price, no
    // reservation, no volume): a pass that found no room for its shape passes over it.
    bool plain = false;
  };
  Decision decide(Queued& entry, PassState& pass);
  // Why a start that waits for the node keeping its files (Instance::start_on_node) waits.
  std::string waiting_for_its_node(const model::Instance& instance) const;
  // Members of the request's gang: its job's nodes, 1 for an instance of its own.
  int gang_size(const model::Instance& request) const;
  // Why the instance may not be placed now regardless of capacity (quota, max_price,
  // reservation), or "".
  std::string admission_hold(const model::Instance& instance, int members);
  // GPUs of a type that reservations hold back from this instance over its declared run.
  int64_t reserved_hold(const model::Instance& instance, std::string_view gpu_type);
  std::optional<Timestamp> earliest_start(const model::Instance& instance) const;
  // The spot work to ask to leave so that a higher-class request that found no room fits: none
  // when it is spot itself, when nothing would make it fit, or (kNone) when it asked already and
  // they are leaving. `shape` is the request's (decide's no-room key).
  Decision make_room(const model::Instance& instance, const sched::Request& request, ShapeId shape);
  // sched::Cluster::place, which for a single request asks only the nodes released on since it
  // last found no node for the shape (fit_known_), and finds none if none of them fits it.
  std::optional<sched::Assignment> place(const sched::Request& request, ShapeId shape);
  // Whether the node's GPUs are of a type (and memory) one member of the request accepts.
  bool has_gpus_for(sched::NodeHandle node, const sched::Request& member) const;
  // Spot work that could be given up, priced.
  struct Priced {
    Micros price = 0;
    model::Instance* instance = nullptr;
    const sched::Assignment* held = nullptr;  // what it was allocated (Placements::assignment)
    // Its run's record when it was running (the locked price), and how far it was metered then.
    const model::UsageRecord* usage = nullptr;
    Timestamp metered_until{};
  };
  // The rates prices were read at: the same while the book and the spot market have not changed
  // and the price version then in force still is.
  struct RatesRead {
    uint64_t book = 0;
    uint64_t spot = 0;
    Timestamp until{};
  };
  // What could be given up on a node: its spot work that is starting or running, and what would
  // be free with all of it gone. Worked out again when the node's Placements::node_version moves
  // (work placed, removed, or asked to stop there); nodes_changed() forgets it.
  struct NodeRoom {
    uint64_t version = 0;                // the node_version it was worked out at, + 1; 0: not yet
    std::vector<model::Instance*> spot;  // in id order
    std::vector<const sched::Assignment*> held;  // what each of `spot` was allocated
    std::vector<int> gpu_milli;  // per GPU: free with all of `spot` gone; -1 out of service
    int64_t cpu_milli = 0;
    int64_t memory_mib = 0;
    // `spot` in the order it is given up (cheapest first, then the most recently started), with
    // each one's price (Metering::price_per_gpu_hour) while the prices read hold: a running
    // run's until it is metered again, a starting one's while the rates are those it was read at.
    std::vector<Priced> priced;
    bool priced_valid = false;
    RatesRead rates_read;
  };
  NodeRoom& node_room(sched::NodeHandle node);
  // The room's `priced`, worked out again where a price it read may have moved.
  const std::vector<Priced>& priced(NodeRoom& room);
  // Whether giving up all of the node's spot work could let one member of the request in (on a
  // node has_gpus_for it). A necessary condition only, tested before make_room asks which of it
  // is enough (Cluster::fits_after_releasing), which it spares on most nodes.
  static bool could_make_room(const NodeRoom& room, const sched::Request& member);

  // Pending instances in placement order: scheduling class (reserved, on-demand, spot), then the
  // tenant's priority, then first come first served.
  struct QueuePosition {
    int negated_class = 0;  // negated, so that ascending order is placement order
    int negated_priority = 0;
    int64_t sequence = 0;
    std::string id;
    auto operator<=>(const QueuePosition&) const = default;
  };
  static QueuePosition queue_position(const model::Instance& instance);
  // Whether a full pass would try the arrival after every request the settled pass tried, with
  // that pass's state.
  bool follows_settled_pass(const QueuePosition& arrival) const;

  // The queue: bands of equal scheduling class and priority, in placement order; in a band each
  // tenant's requests in arrival order (sequence, id). A tenant's or a band's emptied queue stays
  // until a pass walks the band.
  using BandKey = std::pair<int, int>;  // negated class, negated priority
  using TenantQueue = std::map<std::pair<int64_t, std::string>, Queued>;
  using Band = std::map<std::string, TenantQueue, std::less<>>;  // by tenant id
  // Tries a band's requests, the tenants taking turns (scheduler.cc); `from` (arrivals only): the
  // settled pass's last request, whose tenant's requests after it are the only ones tried.
  void walk(Band& band, const QueuePosition* from, PassState& pass, const Apply& apply,
            const model::Instance*& last);

  Context c_;
  std::map<BandKey, Band> bands_;
  size_t queue_length_ = 0;
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> queued_by_tenant_;
  bool queue_changed_ = false;  // something a pass depends on changed: the next pass is full
  // What the passes since the last whole one (which began at `since`) read that time changes
  // (time_passed).
  struct TimeReads {
    Timestamp since{};
    bool clock = false;
    bool live_rates = false;
    bool metered_prices = false;
  };
  TimeReads time_reads_;
  std::vector<QueuePosition> arrivals_;  // queued new (with a new queue_sequence) since a pass
  // The last pass, while what it did still holds: it placed nothing, and nothing it read has
  // changed since (queue_changed_ is false, nothing left the queue). `state` is its state at the
  // end, after trying `last`.
  struct SettledPass {
    PassState state;
    QueuePosition last;
  };
  std::optional<SettledPass> settled_;
  uint64_t requests_tried_ = 0;
  int64_t last_queue_sequence_ = 0;
  // What make_room found, by request shape, with the release log's end when it looked
  // (Placements::released_end): the nodes that could take one member of it (`could`), with room
  // made or, for a gang, already free. A node's free capacity with all its spot work given up does
  // not grow unless capacity is released there (spot work placed since took capacity that was
  // free), so no other node can take a member until it is released on, and make_room looks again
  // only at `could` and the nodes released on since; a node that joins, changes or comes into
  // service forgets it all (nodes_changed).
  // A node that could take a member: the spot work found just enough there (none where a member
  // fits already), at its Placements::node_version.
  struct RoomOnNode {
    sched::NodeHandle node = 0;
    uint64_t version = 0;
    std::vector<model::Instance*> victims;
  };
  struct RoomKnown {
    uint64_t released_end = 0;
    std::vector<RoomOnNode> could;  // by node handle
  };
  std::unordered_map<ShapeId, RoomKnown> room_known_;
  // By ShapeId, for single requests: 1 + the release log's end when place() last found no node
  // for the shape (0: not known). No node gains room for it until capacity is released there, so
  // until then only the nodes released on since can take it.
  std::vector<uint64_t> fit_known_;
  std::vector<NodeRoom> node_rooms_;  // by node handle
  std::unordered_map<std::string, ShapeId> shape_ids_;
  // Pending instances that already asked spot work to leave, and the victims still leaving.
  std::unordered_map<std::string, std::set<std::string>> preemptions_;
  // Request shapes seen, with how often, and when the scheduler's profile was last refreshed.
  std::map<std::string, sched::ProfileEntry> request_shapes_;
  int64_t requests_seen_ = 0;
  int64_t profile_refreshed_at_ = 0;
};

}  // namespace gpurent::controller
