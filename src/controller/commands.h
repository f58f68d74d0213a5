// What the controller's commands take and give besides the model's types: the requests that
// create (NewReservation, NewVolume, NewApiKey), what a creation answers (Created*, with whether
// it was an Idempotency-Key replay), listings' filters and pages, offers, a recorded training
// run. Plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "model/accounts.h"
#include "model/benchmark.h"
#include "model/event.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/ledger.h"
#include "model/node.h"
#include "model/tenant.h"
#include "model/volume.h"

namespace gpurent::controller {

struct Offer {
  std::string gpu_type;
  int total = 0;              // GPUs of the type on ready nodes
  int free = 0;               // of which not held by an instance
  int max_free_per_node = 0;  // the largest request that can be placed now
  std::optional<Micros> price_per_gpu_hour;
};

// What operators do to a node, as kubectl's verbs: a cordoned node gets no new work (its running
// work stays); uncordon undoes it; drain cordons the node and moves its work (each instance is
// stopped there and queued again to be placed elsewhere).
enum class NodeAction { kCordon, kUncordon, kDrain };

// A training benchmark run recorded (Controller::record_training_benchmark), and its GPU.
struct RecordedTraining {
  std::string node_id;
  std::string gpu;  // UUID
  int gpu_index = 0;
  std::string gpu_type;
  model::TrainingRun run;
};

struct CreatedInstance {
  model::Instance instance;
  bool replayed = false;  // an Idempotency-Key retry: nothing new was created
};

struct InstanceFilter {
  std::optional<std::string> tenant_id;  // operators only
  std::optional<model::InstanceState> state;
  // The members of one job; without it, job members are not listed.
  std::optional<std::string> job_id;
};

struct InstancePage {
  std::vector<const model::Instance*> items;
  std::optional<std::string> next_cursor;
};

struct JobFilter {
  std::optional<std::string> tenant_id;  // operators only
  std::optional<model::JobState> state;
};

struct NodePage {
  std::vector<const model::Node*> items;
  std::optional<std::string> next_cursor;  // the last item's id, when more follow
};

struct JobPage {
  std::vector<const model::Job*> items;
  std::optional<std::string> next_cursor;
};

struct NewApiKey {
  std::string tenant_id;  // empty: the caller's tenant
  // None: the caller's own role when it is a tenant's, tenant-admin when an operator makes it.
  std::optional<model::Role> role;
  std::string name;
  std::string secret_hash;
  std::string prefix;
  std::vector<std::string> scopes;      // none: everything the role allows (model/scopes.h)
  std::optional<Timestamp> expires_at;  // none: never, unless the caller's own key expires
};

struct CreatedReservation {
  model::Reservation reservation;
  bool replayed = false;  // an Idempotency-Key retry: nothing new was booked
};

struct CreatedJob {
  model::Job job;
  bool replayed = false;  // an Idempotency-Key retry: nothing new was created
};

struct NewReservation {
  std::string tenant_id;  // empty: the caller's tenant
  std::string gpu_type;
  int gpu_count = 0;
  Timestamp start{};
  Timestamp end{};
  // Instead of end: a term of this many days from start (a start in the past is now).
  std::optional<int> term_days;
  model::ReservationPayment payment = model::ReservationPayment::kUpfront;
};

struct NewVolume {
  std::string name;
  int size_gb = 0;
  std::string node_id;  // operators only: the node it lives on; empty: where first used
};

struct CreatedVolume {
  model::Volume volume;
  bool replayed = false;  // an Idempotency-Key retry: nothing new was created
};

struct EventFilter {
  std::optional<std::string> tenant_id;  // operators only
  std::optional<std::string> object_id;
  std::optional<std::string> kind;
  int64_t after_seq = 0;  // only events recorded after this one (a cursor)
};

struct AuditFilter {
  std::optional<std::string> tenant_id;  // operators only
  std::optional<std::string> key_id;
  int64_t after_seq = 0;  // only entries recorded after this one (a cursor)
};

struct CreatedPackage {
  model::Package package;
  bool replayed = false;  // an Idempotency-Key retry: nothing was charged again
};

struct TopupResult {
  model::Transfer transfer;
  Micros balance = 0;
};

}  // namespace gpurent::controller
