// The controller's change tracking: what changed since the controller last handed its changes
// over, and the ChangeSet that hands them to the store ("durable before acknowledged":
// controller.h).
//
// Touching an object says that it changed in a way the store must see: the batch carries its
// row. Commands touch what they change as often as they change it (placing an array touches each
// member, its task and its node several times), and a batch lists each touched object once,
// copied (or serialized) when the batch is taken, at its state then: the store writes every
// object once per batch at its latest state, and the cost of a batch grows with the objects it
// changed, not with the changes. A batch is what was touched between two take_changes() or
// take_changes_for_store() calls; an object touched again after a take is listed again.
//
// The parts of the ChangeSet the tracker fills, in order (the rest is what the controller's
// components append to `pending` themselves, in the order they do it):
// - instances (take_changes) or instance_rows (take_changes_for_store): the touched instances,
//   in the order first touched; changed_instances: the touched or noted ones, in the order first
//   touched or noted.
// - nodes: the touched nodes, in the order first touched; woken_nodes: those whose desired set
//   changed.
// - usage: the records touched whole, in the order first touched; metered_usage: the records
//   only metering touched, packed (MeteredUsage, positioned after every whole one), in the order
//   first metered. A record touched both ways travels whole only.
// - jobs: the touched jobs without their tasks, in id order; job_tasks: the touched tasks, in
//   (job id, index) order (a job of a large array changes one task at a time).
// - volumes: in the order first touched.
//
// Objects are held by address: the controller never erases an instance, node, usage record, job
// or volume and keeps them in node-based maps, and a job's tasks are fixed when it is created, so
// an address names one object for the controller's lifetime. A caller touches the object where
// the controller keeps it, never a copy about to be moved there.
//
// Not thread-safe: the controller's thread owns it, as it owns the controller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "controller/change_set.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/ledger.h"
#include "model/node.h"
#include "model/volume.h"

namespace gpurent::controller {

// Far more than the commands that can be in flight between a state change and its commit: a
// restore moves every node's generation this far (controller.h, restore()).
inline constexpr int64_t kGenerationJumpOnRestore = 1 << 20;
// A node's row goes to the store when it changes, but a new desired set only moves its generation:
// that alone is stored once it is this far past the stored one, so the generation a restore
// starts from (stored + the jump) stays ahead of every one served. An array's placement so
// writes no node row per node it lands on (bench/RESULTS.md has what such rows cost).
inline constexpr int64_t kGenerationsBetweenNodeWrites = kGenerationJumpOnRestore / 2;

class ChangeTracker {
 public:
  // `pending`: the controller's ChangeSet, which its components append to as they change state;
  // a take adds the touched objects to it and hands it over.
  explicit ChangeTracker(ChangeSet& pending) : pending_(pending) {}
  ChangeTracker(const ChangeTracker&) = delete;
  ChangeTracker& operator=(const ChangeTracker&) = delete;

  // --- Instances ---
  // The instance changed: its revision grows (caches of its view are keyed by it), its row goes
  // to the store, and it is listed in changed_instances (its log followers are woken once the
  // batch is durable).
  void touch(model::Instance& instance);
  // A change that needs no row of its own (its waiters are woken, its views refreshed): its
  // revision grows and it is listed in changed_instances only. The running phase of a run is
  // one: the run's usage record records it.
  void note_change(model::Instance& instance);

  // --- Nodes ---
  // The node changed. A new desired set (desired_set_changed) moves its generation and wakes its
  // long-polls after the batch; its row is written only when something else changed, or when
  // the generation has moved kGenerationsBetweenNodeWrites past the one last taken.
  void touch_node(model::Node& node, bool desired_set_changed);

  // --- Usage records ---
  // The record changed in a way only its whole row holds (opened, closed).
  void touch_usage(const model::UsageRecord& usage);
  // Only metering changed it (billing/billing.h): it travels packed, unless also touched whole.
  void touch_metering(const model::UsageRecord& usage);
  // About `records` more will be metered in this batch (the billing tick's runs): room is made
  // once, not by doubling as they come.
  void expect_metering(size_t records);

  // --- Jobs ---
  // The job's own fields changed (state, times, reason): its revision grows and its row, without
  // the tasks, is written.
  void touch_job(model::Job& job);
  // One task of the job changed: only that task's row is written.
  void touch_task(model::Job& job, int index);

  // --- Volumes ---
  void touch_volume(const model::Volume& volume);

  // --- A long command's rows, streamed (Controller::stream_placed_rows has the contract) ---
  // Hands `sink` the rows of the placed instances, and of the tasks of those of rank 0, once
  // `every` have been placed; an empty sink stops it.
  void stream_placed_rows(std::function<void(ChangeSet)> sink, size_t every);
  // The instance was placed (and touched); `job` is its job, for a job member (else null).
  void placed(const model::Instance& instance, const model::Job* job);
  // Hands the sink a piece if `every` placements are waiting. The controller calls it only
  // between two requests of a scheduling pass, where no placement is half done.
  void stream_placed_rows_if_due();

  // --- Taking a batch ---
  // The batch, its objects copied; a new batch starts.
  ChangeSet take_changes();
  // The same with the touched instances serialized (ChangeSet::instance_rows, their store bodies)
  // instead of copied, which is what a store needs at a fraction of a copy's cost; rows a piece
  // handed over are left out unless their instance or task changed since. A caller uses one of
  // the two.
  ChangeSet take_changes_for_store();

 private:
  // Listings below keep repeats (a touch costs one comparison and one append) but not back to
  // back ones; a take keeps each object's first.
  template <class Pointer, class Object>
  static void list(std::vector<Pointer>& listing, Object& object) {
    if (listing.empty() || listing.back() != &object) listing.push_back(&object);
  }

  ChangeSet& pending_;
  std::vector<const model::Instance*> touched_instances_;
  std::vector<const model::Instance*> changed_instances_;  // touched or noted
  std::vector<const model::Node*> touched_nodes_;
  // The generation each node's row had when last taken; persists across batches (nodes are few
  // and never erased). A node not in it was never taken.
  std::unordered_map<const model::Node*, int64_t> stored_generations_;
  std::vector<const model::UsageRecord*> touched_usage_;
  std::vector<const model::UsageRecord*> metered_usage_;
  std::vector<model::Job*> touched_jobs_;
  struct TaskRef {
    model::Job* job;
    int index;
  };
  std::vector<TaskRef> touched_tasks_;
  std::vector<const model::Volume*> touched_volumes_;

  // Streaming: the sink, how many placements make a piece, and those since the last piece.
  std::function<void(ChangeSet)> row_sink_;
  size_t rows_per_piece_ = 0;
  struct Placed {
    const model::Instance* instance;
    const model::Job* job;
  };
  std::vector<Placed> placed_unstreamed_;
  // What pieces of this batch handed over: each instance at the revision it had then, and the
  // tasks not touched since.
  std::unordered_map<const model::Instance*, int64_t> streamed_revisions_;
  std::unordered_set<const model::JobTask*> streamed_tasks_;
};

}  // namespace gpurent::controller
