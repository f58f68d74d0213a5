// The controller: the deterministic core of gpurent.
//
// A state machine over tenants, keys, nodes, instances and the ledger. Its inputs are commands
// (API calls, already parsed and validated for shape by the server), agent reports, and tick();
// its outputs are the new state, each node's desired workload set, and ledger transfers. It reads
// time only from the injected Clock and draws ids only from a seeded Rng; it does no I/O.
//
// Durability: every mutation marks the touched objects (change_tracker.h); take_changes() returns
// them as a ChangeSet for the caller to commit to the store before it acknowledges the command
// ("durable before acknowledged"). restore() rebuilds the state from a store Snapshot after a
// restart.
//
// Visibility: every object belongs to a tenant. Commands and reads take the calling Principal; an
// object of another tenant is reported as not found. Operators and admins see everything.
//
// Thread-safety: none. One owner (the server's controller host, or a simulation) serialises calls.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "billing/billing.h"
#include "billing/invoice.h"
#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/random.h"
#include "common/result.h"
#include "common/string_hash.h"
#include "controller/accounts.h"
#include "controller/audit_log.h"
#include "controller/change_set.h"
#include "controller/change_tracker.h"
#include "controller/commands.h"
#include "controller/downtime_log.h"
#include "controller/event_log.h"
#include "controller/fleet.h"
#include "controller/fleet_monitor.h"
#include "controller/gpu_benchmarks.h"
#include "controller/gpu_quarantines.h"
#include "controller/gpu_telemetry.h"
#include "controller/idempotency.h"
#include "controller/instance_registry.h"
#include "controller/job_registry.h"
#include "controller/metering.h"
#include "controller/node_registry.h"
#include "controller/placements.h"
#include "controller/pricing.h"
#include "controller/quotas.h"
#include "controller/reservations.h"
#include "controller/scheduler.h"
#include "controller/template_catalog.h"
#include "controller/volumes.h"
#include "model/accounts.h"
#include "model/agent_protocol.h"
#include "model/event.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/ledger.h"
#include "model/node.h"
#include "model/tenant.h"
#include "model/volume.h"
#include "sched/cluster.h"

namespace gpurent::controller {

struct ControllerOptions {
  std::string currency = "CNY";
  Millis heartbeat_timeout{10'000};  // a node silent for longer is down
  Millis billing_interval{60'000};   // how often running work is metered (a stop meters at once)
  uint64_t seed = 1;                 // ids are drawn from an Rng with this seed
  sched::Policy placement_policy = sched::Policy::kBinpack;
  Millis clock_skew_limit{2'000};  // the agent_clock_skew alert: |skew| above it for 1 min
  // The host feeds reports' samples into monitor().series() itself, on a thread of its own, and
  // persists the rollup rows it completes (server/telemetry_ingest.h): apply_report then only keeps
  // what it acts on (gpu_telemetry.h), and ChangeSets carry no rollup rows (but still the prune).
  bool series_fed_by_host = false;
  // False: tick() leaves monitoring alone (no rollups, no alert rules evaluated). For gpurent
  // simulate's replay, whose agents report no telemetry and whose heartbeats never lapse: nothing
  // could fire, and evaluating the rules over every GPU every 5 s of virtual time was most of a
  // large replay.
  bool monitoring = true;
  // The node benchmark (benchmarks.cc, docs/node-benchmark.md). Operators' requests are served
  // whatever these say.
  struct Benchmarks {
    // Measure GPUs never measured when their node registers, and a GPU released from quarantine.
    bool on_join_and_release = false;
    // Measure an idle node whose newest figures are older than this; 0: never.
    Millis idle_interval{0};
    // A request not answered by then is dropped (its GPUs take work again).
    Millis timeout{30 * 60'000};
    // Quarantine a GPU found slow (kSlowShortfallPercent below its type's median), rather than
    // only flag it (an event, and the gpu_benchmark_slow alert).
    bool quarantine_slow = false;
  };
  Benchmarks benchmarks;
};

// A launch needs a balance that covers this long at the instance's price.
inline constexpr int64_t kMinimumPrepaidSeconds = 60;
inline constexpr int kMaxGpusPerInstance = 8;

class Controller {
 public:
  Controller(const Clock& clock, ControllerOptions options);
  // Not copied: its indexes point into its own maps.
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Rebuilds the state from the store. Call once, before anything else.
  Status restore(Snapshot snapshot);
  // How take_changes hands over the changed instances: copied (ChangeSet::instances), for callers
  // that read them, or serialized (ChangeSet::instance_rows), what a store needs, at a fraction
  // of the cost of a copy. A caller uses one of the two.
  enum class Form { kCopies, kStoreRows };
  // The changes since the last call, for the caller to make durable.
  ChangeSet take_changes(Form form = Form::kCopies);
  // Lets a long command's rows go to the store while the command runs: a scheduling pass hands
  // `sink` the rows of the instances it has placed, and of their job tasks, `every` placements at
  // a time (an array of 8,000 members makes eight pieces of 1,000), so that the store writes them
  // while the pass goes on. A piece holds those rows only and belongs to the command that made
  // it: the caller writes it into the transaction that commits that command's
  // take_changes(Form::kStoreRows), never alone. That ChangeSet leaves out the rows handed over
  // whose instance or task did not change again. An empty sink (the default) hands nothing over;
  // with Form::kCopies, use none.
  void stream_placed_rows(std::function<void(ChangeSet)> sink, size_t every);

  const ControllerOptions& options() const { return options_; }

  // --- Prices (prices.cc) ----------------------------------------------------------------------
  // Operators: a new price-book version (Pricing::set); work queued for a type that just got a
  // price may then be placed.
  Result<model::PriceVersion> set_prices(const model::Principal& caller,
                                         const billing::PriceChange& change);

  // --- Components -------------------------------------------------------------------------
  // The price book, the spot market and the price lookups on them, launch estimates (pricing.h).
  const Pricing& pricing() const { return pricing_; }
  // Tenants, keys, join tokens, the ledger, balance settings, packages and quotas (accounts.h).
  Accounts& accounts() { return accounts_; }
  const Accounts& accounts() const { return accounts_; }
  TemplateCatalog& templates() { return templates_; }
  const EventLog& events() const { return events_; }
  // Who called what (audit_log.h); the server records, the controller keeps.
  AuditLog& audit() { return audit_; }
  const AuditLog& audit() const { return audit_; }
  // Tenants' persistent volumes (volumes.h).
  Volumes& volumes() { return volumes_; }

  // Usage records, what they were charged, prices instances pay, statements, SLA downtime
  // (metering.h).
  const Metering& metering() const { return metering_; }

  // --- Instances ---------------------------------------------------------------------------
  Result<CreatedInstance> create_instance(const model::Principal& caller, model::InstanceSpec spec,
                                          const std::optional<std::string>& idempotency_key,
                                          std::string fingerprint);
  Result<model::Instance> stop_instance(const model::Principal& caller, std::string_view id);
  // Where a start may place an instance. A stopped instance's files (its home, a VM's root disk)
  // stay on the node it ran on, so by default its start waits for that node; kAnyNode takes the
  // first node that fits and the old node deletes the files (docs/runtime.md, "Starting again").
  enum class StartOn { kItsNode, kAnyNode };
  // From stopped, failed or preempted: queued again (pinned to its node unless kAnyNode). While
  // stopping: started once it has stopped. Pending and waiting for its node, kAnyNode frees it.
  Result<model::Instance> start_instance(const model::Principal& caller, std::string_view id,
                                         StartOn where = StartOn::kItsNode);
  Result<model::Instance> delete_instance(const model::Principal& caller, std::string_view id);
  // The instances by id or name, listings, the instances that mount a volume
  // (instance_registry.h).
  const InstanceRegistry& instances() const { return instances_; }
  // The tenant's instances and job tasks waiting in the queue (what max_queued caps).
  int queued_work(std::string_view tenant_id) const { return scheduler_.queued(tenant_id); }

  // --- Jobs ------------------------------------------------------------------------------
  // Creates the job and one queued instance per member of every task.
  Result<CreatedJob> create_job(const model::Principal& caller, model::JobSpec spec,
                                const std::optional<std::string>& idempotency_key,
                                std::string fingerprint);
  // The jobs by id or name, listings, the job of a member (job_registry.h).
  const JobRegistry& jobs() const { return jobs_; }
  // Withdraws queued members and stops running ones; the unfinished tasks end cancelled.
  Result<model::Job> cancel_job(const model::Principal& caller, std::string_view id);

  // --- Reservations (reservations.h: quotes, listings, what bookings hold back) ---------------
  const Reservations& reservations() const { return reservations_; }
  // Books GPUs of a type for [start, end) (Reservations::book); work queued behind what bookings
  // held back may then be placed.
  Result<CreatedReservation> create_reservation(
      const model::Principal& caller, NewReservation request,
      const std::optional<std::string>& idempotency_key = std::nullopt,
      std::string fingerprint = {});
  // Reservations::cancel; what it held back is free, and its work waits for nothing.
  Result<model::Reservation> cancel_reservation(const model::Principal& caller,
                                                std::string_view id);

  // --- Quotas (accounts().quotas(), quotas.h) ---------------------------------------------------
  // Operators set a tenant's limits and fair-share weight (Quotas::set); queued work is tried
  // again under them.
  Result<model::Quota> set_quota(const model::Principal& caller, model::Quota quota);

  // --- Nodes and agents ------------------------------------------------------------------
  Result<model::RegistrationResult> register_node(std::string_view join_token_hash,
                                                  model::NodeRegistration registration,
                                                  std::string credential,
                                                  std::string credential_hash);
  // Applies a node's report (also its heartbeat); returns the node's current generation.
  Result<int64_t> apply_report(std::string_view node_id, const model::NodeReport& report);
  // Operators: cordon, uncordon or drain the node (NodeAction). Returns how many instances were
  // asked to move (only a drain moves any).
  Result<int> manage_node(const model::Principal& caller, std::string_view id, NodeAction action);

  // --- GPU quarantine (quarantine.cc, gpu_quarantines.h) ------------------------------------
  // A GPU whose report carries a fatal XID or a rise of its double-bit ECC count is quarantined:
  // no new work, the work on it ends at that report and moves by its restart policy. The
  // records, and each node's quarantined GPUs: fleet().quarantines().
  // Operators put a quarantined GPU back in service. 404 node_not_found / gpu_not_found, 409
  // gpu_not_quarantined.
  Result<model::GpuQuarantine> release_gpu(const model::Principal& caller, std::string_view node_id,
                                           int gpu_index);

  // --- The node benchmark (benchmarks.cc, gpu_benchmarks.h) ----------------------------------
  // Operators: asks the node to measure its GPUs that hold no work (their figures:
  // fleet().benchmarks()); they take no work until it answers. Merged into a request the node has
  // not answered yet. A cordoned node is measured too (an operator checking it before putting it
  // back). 404 node_not_found, 409 node_down, 409 benchmark_unsupported (an agent from before the
  // benchmark), 409 no_idle_gpus when every GPU of the node holds work or is quarantined.
  Result<model::BenchmarkRequest> benchmark_node(const model::Principal& caller,
                                                 std::string_view node_id);
  // Operators: records what a finished resnet50-bench instance measured (`log`: the end of its
  // last run's log, read by model::resnet50_report) against the GPU it ran on; its type's figures
  // then show in offers and estimates. Recording an instance again answers the run kept. 404
  // instance_not_found; 409 not_a_benchmark (not made from the template, or its command was
  // replaced), 409 benchmark_unfinished (it has not stopped with exit code 0); 422
  // invalid_benchmark_log (no result for a precision, or the GPU it names is none of its type's).
  Result<RecordedTraining> record_training_benchmark(const model::Principal& caller,
                                                     std::string_view instance_id,
                                                     std::string_view log);

  // --- The fleet as people, agents and the alert rules see it (fleet.h) ------------------------
  // The nodes, what is placed where, quarantined GPUs, the GPU series and alerts; each node's
  // desired set; offers, node statuses, GPU metrics and readings, platform statistics, the alert
  // rules' observations; samples pushed outside a report, tenants' idle rules; when silence
  // counts from.
  Fleet& fleet() { return fleet_; }
  const Fleet& fleet() const { return fleet_; }

  // --- Checks ------------------------------------------------------------------------------
  // Verifies the scheduling invariants: the scheduler's allocations are exactly the placed
  // instances', no GPU is held above 1000 milli, the tenants' holdings are tracked exactly, job
  // gangs are placed all or none, reservations are not exceeded. Fails loudly with what broke;
  // O(instances + nodes). Run after every command and tick where expensive checks are on
  // (common/assert.h).
  Status check_invariants() const;

  // --- Time --------------------------------------------------------------------------------
  // Marks silent nodes down, places pending instances, reprices spot, meters running work and
  // stopped disks, interrupts spot work priced above its max_price, enforces balances.
  void tick();

 private:
  Timestamp now() const { return clock_.now(); }
  Result<model::Instance*> owned_instance(const model::Principal& caller, std::string_view id);
  Status check_funds(std::string_view tenant_id, const model::InstanceSpec& spec) const;
  // The tenant's caps (model::Quota): `queuing` more pending instances or job tasks within
  // max_queued (409 quota_exceeded: it may pass once some of its work has started), and an array
  // of `array` tasks within max_array (422 quota_exceeded).
  Status check_caps(std::string_view tenant_id, int queuing, int array = 1) const;
  // Admission of work on `nodes` nodes: refused (422 never_fits) when no node of the cluster
  // could hold it even empty, unless it waits for capacity; with queue false, refused (409
  // insufficient_capacity) when it cannot be placed now. Both name the rule broken.
  Status check_placeable(const model::InstanceSpec& spec, int nodes) const;
  // Sets the instance's reason (why it waits), recording a change only if it differs.
  void set_reason(model::Instance& instance, std::string reason);
  // Places what it can from the queue, if anything changed since the last pass.
  void schedule();
  // Applies what the pass decided for a request (Scheduler::Decision).
  void apply(model::Instance& request, Scheduler::Decision decision);
  // Places a single instance, or a job task's gang of members (one per assignment part).
  void place_members(model::Instance& first, sched::Assignment assignment);
  // A job member's gang rendezvous (master_address, master_port) is set before; `job` is its job
  // (null for an instance of its own).
  void place(model::Instance& instance, sched::NodeAssignment part, const model::Job* job);
  // The lowest rendezvous port (from model::kGangMasterPort) no gang led from this node uses.
  int free_master_port(std::string_view node_id) const;
  // --- Jobs (jobs.cc) ---
  // At restore (members first): a task stored queued whose member has started in its current
  // run is running.
  void restore_started_tasks(model::Job& job) const;
  // A member's run ended: settles its task once every member has stopped.
  void member_ended(const model::Instance& member);
  void settle_task(model::Job& job, model::JobTask& task);
  // Moves reservations with time, and stops the work of those whose window is over.
  void advance_reservations();
  // Mirrors a node's capacity and readiness into the scheduler's cluster view.
  void sync_cluster_node(const model::Node& node);
  void update_schedulable(const model::Node& node);
  Result<sched::Assignment> assignment_of(const model::Instance& instance) const;
  // The first report of the run's process: it runs, and its metering opens (a usage record).
  void begin_run(model::Instance& instance);
  // At restore: a run whose usage record exists has started (begin_run writes only the record).
  void restore_run_start(model::Instance& instance);
  // How a run ended, where the instance and its node do not already say: a workload its agent
  // no longer lists, though it was never asked to stop, was lost (the agent or its host
  // restarted). The platform cut it short, as when its node fails: it pays no minimum duration.
  // kNeverStarted: its command never ran (WorkloadStatus::never_started).
  enum class RunEnd { kReported, kLostByAgent, kNeverStarted };
  // Meters the run up to its end, charges its minimum duration unless the platform cut it short,
  // and settles the instance's state (stopped, failed, preempted, pending again, terminated).
  void end_run(model::Instance& instance, std::optional<int> exit_code, std::string reason,
               RunEnd how = RunEnd::kReported);
  // Takes a pending instance out of the queue: it becomes stopped without ever running.
  void withdraw(model::Instance& instance, std::string reason);
  // Asks the agent to stop a placed instance: it becomes stopping until the process is gone.
  void request_stop(model::Instance& instance, std::string reason);
  // Back in the queue as a new arrival, from stopped, failed or preempted.
  void queue_again(model::Instance& instance);
  // --- Prices (prices.cc) ---
  // Observes every type's utilisation (GPUs held / GPUs on ready nodes); true if a price moved.
  bool update_spot_market();
  // GPUs of each type on ready nodes, quarantined ones left out: the spot market's capacity.
  // Kept between ticks (every tick reads it, and walking a fleet of 10,000 nodes for it took most
  // of a tick): update_schedulable and sync_gpu_availability, which every change of a node's
  // readiness or GPUs goes through, drop it; check_invariants compares it with a fresh count.
  const MilliGpusByType& ready_gpu_capacity();
  MilliGpusByType count_ready_gpus() const;
  // Stops (as preempted) running spot work whose max_price is below its type's spot price.
  void interrupt_spot_over_max_price();
  // Cordons or uncordons the node.
  Result<model::Node*> set_cordoned(const model::Principal& caller, std::string_view id,
                                    bool cordoned);
  // Asks the node's starting and running instances to move; returns how many.
  int move_work_off(const model::Node& node);
  void mark_node_down(model::Node& node);
  using PlacedInstances = Placements::PlacedInstances;
  // What failed under running work: a whole node, or one GPU of it (quarantine.cc).
  struct Failure {
    const model::Node& node;
    std::string gpu_uuid;  // empty: the whole node
    std::string what;      // for people: "node gpu-2 stopped reporting"
  };
  // Moves the work of `affected` that was on the failure (by its restart policy) to be placed
  // again; a gang's task moves whole.
  void move_off_failure(const Failure& failure, const PlacedInstances& affected);
  void enforce_balances();
  // --- GPU quarantine (quarantine.cc) ---
  // Quarantines the node's GPUs that the report shows failing; call before record_telemetry (a
  // double-bit ECC rise is measured against the sample kept from the previous report).
  void quarantine_failed_gpus(model::Node& node, const model::TelemetryBatch& batch);
  void quarantine_gpu(model::Node& node, const model::Gpu& gpu, model::GpuQuarantine record);
  // Mirrors the node's quarantined GPUs, and those being measured, into the scheduler's
  // availability mask.
  void sync_gpu_availability(const model::Node& node);
  // --- The node benchmark (benchmarks.cc) ---
  // Asks the node to measure `gpus` (UUIDs), with those of a request it has not answered.
  void ask_benchmark(model::Node& node, std::vector<std::string> gpus,
                     model::BenchmarkReason reason);
  // Asks the node to measure its GPUs never measured, with options_.benchmarks.on_join_and_release.
  void benchmark_new_gpus(model::Node& node);
  // A report's answer to the node's request: its figures recorded, the slow GPUs flagged.
  void take_benchmark(model::Node& node, const model::BenchmarkOutcome& outcome);
  void drop_benchmark(model::Node& node);
  // Requests past their timeout dropped; idle nodes with old figures asked again.
  void benchmark_tick();
  Timestamp next_benchmark_check_{};
  bool benchmark_asked_ = false;  // since the start (a restored request counts)
  // The monitor's tick; stops the instances whose idle alert fired with auto_stop.
  void monitor_tick();

  const Clock& clock_;
  ControllerOptions options_;
  Rng rng_;
  // What changed since take_changes(); the components below record into it.
  ChangeSet changes_;
  // Which objects changed since take_changes(), for it to copy into changes_.
  ChangeTracker tracker_{changes_};
  EventLog events_{clock_, changes_};
  AuditLog audit_{clock_, changes_};
  IdempotencyKeys idempotency_{clock_, changes_};
  Accounts accounts_{{clock_, rng_, changes_, events_, idempotency_, options_.currency}};
  TemplateCatalog templates_{changes_};
  FleetMonitor monitor_{{clock_, changes_, events_, options_.heartbeat_timeout,
                         options_.clock_skew_limit, options_.series_fed_by_host}};
  Pricing pricing_{{clock_, changes_, options_.currency}};
  DowntimeLog downtime_{changes_};

  NodeRegistry nodes_;
  InstanceRegistry instances_{{clock_, rng_}};
  Metering metering_{{clock_, changes_, tracker_, events_, accounts_, pricing_, nodes_, downtime_,
                      options_.currency, instances_.all()}};
  GpuQuarantines quarantines_{{clock_, changes_, nodes_}};
  GpuBenchmarks benchmarks_{{clock_, changes_}};
  Reservations reservations_{{clock_, rng_, changes_, idempotency_, accounts_, pricing_, nodes_}};
  Placements placements_{options_.placement_policy, {reservations_}};
  Fleet fleet_{{clock_, nodes_, placements_, quarantines_, benchmarks_, pricing_, monitor_,
                instances_.all(), jobs_, volumes_, scheduler_, options_.heartbeat_timeout,
                [this](std::string_view node_id) { return instances_.with_files_on(node_id); }}};
  Volumes volumes_{
      {clock_, rng_, tracker_, idempotency_, accounts_, pricing_, nodes_,
       [this](std::string_view volume_id) { return instances_.mounted_by(volume_id); }}};
  Scheduler scheduler_{{clock_, instances_.all(), jobs_, placements_, nodes_, accounts_.quotas(),
                        pricing_, reservations_, volumes_, metering_}};
  JobRegistry jobs_{{clock_, tracker_}};
  // Running instances with a declared max_runtime_s, by the time it runs out.
  std::set<std::pair<Timestamp, std::string>> deadlines_;  // of instances holding GPUs
  // Keeps the reported telemetry of the node's GPUs (telemetry.cc); in memory only.
  void record_telemetry(const model::Node& node, const model::TelemetryBatch& batch);
  // Hands a report's samples to the series (unless the host does: series_fed_by_host).
  void feed_series(const model::Node& node, const model::TelemetryBatch& batch);
  // Measures the agent's clock skew from a report's send time (clock_skew.cc); in memory only.
  void record_clock_skew(const model::Node& node, int64_t sent_at_ms);
  Timestamp last_billing_{};
  std::optional<MilliGpusByType> ready_gpu_capacity_;
  // No ready node can have been silent past the heartbeat timeout before this time: the earliest
  // of their deadlines when tick last walked them (heartbeats only move deadlines later), lowered
  // when a node becomes ready. Ticks before it skip the walk over every node.
  Timestamp silence_deadline_ = Timestamp::min();
  void watch_silence(const model::Node& node);
};

}  // namespace gpurent::controller
