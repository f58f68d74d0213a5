#include "controller/controller.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "controller/internal.h"
#include "model/codec.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

using model::Instance;
using model::InstanceState;
using model::Node;
using model::NodeState;
using model::Principal;
using namespace detail;

namespace {

Error invalid_state(const Instance& instance, std::string_view action) {
  return Error::conflict("invalid_state",
                         fmt::format("cannot {} instance {} while it is {}", action, instance.id,
                                     model::to_string(instance.state)));
}

// The tenant's environment, with the GPU share's variables on top (a job member's come from its
// placement, on the node). gpu_memory_mb: of the node's GPUs (0: unknown).
std::map<std::string, std::string> workload_env(const Instance& instance, int64_t gpu_memory_mb) {
  auto env = instance.spec.env;
  // A share of a GPU (the shared tier) runs as a CUDA MPS client: at most its share of the GPU's
  // SMs, and of its memory the GPU memory it asked for (else its share of the GPU's), on device
  // 0 of the one GPU it sees.
  if (instance.gpu_milli < model::kMilliPerGpu) {
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string((instance.gpu_milli + 9) / 10);
    const int64_t memory_mb = instance.spec.gpu_memory_gb > 0
                                  ? int64_t{instance.spec.gpu_memory_gb} * 1024
                                  : gpu_memory_mb * instance.gpu_milli / model::kMilliPerGpu;
    if (memory_mb > 0) env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = fmt::format("0={}M", memory_mb);
  }
  return env;
}

std::string usage_id(const Instance& instance) {
  return fmt::format("{}/{}", instance.id, instance.run);
}

}  // namespace

Controller::Controller(const Clock& clock, ControllerOptions options)
    : clock_(clock),
      options_(std::move(options)),
      rng_(options_.seed),
      prices_(options_.currency),
      cluster_(options_.placement_policy),
      last_billing_(clock.now()) {
  for (auto& t : model::builtin_templates()) templates_.emplace(t.name, std::move(t));
}

// --- Persistence ------------------------------------------------------------------------------

Status Controller::restore(Snapshot snapshot) {
  const Timestamp start = now();
  GPURENT_CHECK(restore_monitoring(snapshot.monitoring));
  for (auto& tenant : snapshot.tenants) tenants_.emplace(tenant.id, std::move(tenant));
  for (auto& key : snapshot.api_keys) {
    key_by_hash_.emplace(key.secret_hash, key.id);
    api_keys_.emplace(key.id, std::move(key));
  }
  for (auto& token : snapshot.join_tokens) {
    join_token_by_hash_.emplace(token.secret_hash, token.id);
    join_tokens_.emplace(token.id, std::move(token));
  }
  // Before the nodes: syncing a node into the scheduler applies its quarantined GPUs.
  restore_quarantines(snapshot.gpu_quarantines);
  for (auto& node : snapshot.nodes) {
    // Heartbeats are not persisted; every node gets a full timeout to report after a restart.
    node.last_heartbeat = start;
    // An agent may have seen generations that were served but never committed before a crash.
    // Jumping past them keeps "generation G" meaning one desired set, so the agent converges to
    // the restored state and its applied generation never vouches for a set it did not see.
    node.generation += kGenerationJumpOnRestore;
    touched_nodes_.push_back(node.id);
    touched_node_ids_.insert(node.id);
    node_by_credential_.emplace(node.credential_hash, node.id);
    for (const auto& gpu : node.gpus) {
      node_by_gpu_.emplace(gpu.uuid, node.id);
      monitoring_.series.set_owner(gpu.uuid, node.id);
    }
    const auto& restored = nodes_.emplace(node.id, std::move(node)).first->second;
    sync_cluster_node(restored);
  }
  // Before the instances: a run's start is read from its usage record (restore_run_start).
  for (auto& usage : snapshot.usage) {
    if (usage.kind == model::UsageKind::kStoppedDisk && !usage.ended_at) {
      stopped_disks_.emplace(usage.instance_id, usage.id);
    }
    usage_by_tenant_[usage.tenant_id].push_back(usage.id);
    usage_.emplace(usage.id, std::move(usage));
  }
  std::sort(snapshot.instances.begin(), snapshot.instances.end(),
            [](const Instance& a, const Instance& b) {
              return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
            });
  for (auto& instance : snapshot.instances) {
    auto& restored = instances_.emplace(instance.id, std::move(instance)).first->second;
    append_to_creation_order(restored);
    restore_run_start(restored);
    if (restored.state == InstanceState::kPending || model::holds_gpus(restored.state)) {
      observe_request(restored.spec, 1);
    }
    last_queue_sequence_ = std::max(last_queue_sequence_, restored.queue_sequence);
    // A job task queues as one entry, its rank-0 member.
    if (restored.state == InstanceState::kPending && restored.job_rank == 0) enqueue(restored);
    if (model::holds_gpus(restored.state)) {
      GPURENT_TRY(assignment, assignment_of(restored));
      if (auto allocated = cluster_.allocate(assignment); !allocated) {
        return fail(Error::internal(
            fmt::format("restoring instance {}: {}", restored.id, allocated.error().message)));
      }
      assignments_.emplace(restored.id, std::move(assignment));
      hold(restored, 1);
      if (restored.state == InstanceState::kRunning && restored.spec.max_runtime_s &&
          restored.started_at) {
        deadlines_.emplace(*restored.started_at + Millis(*restored.spec.max_runtime_s * 1000),
                           restored.id);
      }
      for (const auto& gpu : restored.gpus) gpu_holders_[gpu].insert(restored.id);
      instances_on_node_[restored.node_id].insert(restored.id);
    }
  }
  for (auto& job : snapshot.jobs) {
    restore_started_tasks(job);
    job_order_.push_back(job.id);
    jobs_.emplace(job.id, std::move(job));
  }
  std::sort(job_order_.begin(), job_order_.end(), [this](const auto& a, const auto& b) {
    return std::tie(jobs_.at(a).created_at, a) < std::tie(jobs_.at(b).created_at, b);
  });
  for (size_t i = 0; i < job_order_.size(); ++i) job_position_[job_order_[i]] = i;
  for (auto& reservation : snapshot.reservations) {
    reservations_.emplace(reservation.id, std::move(reservation));
  }
  for (auto& quota : snapshot.quotas) quotas_.emplace(quota.tenant_id, std::move(quota));
  // An operator's template saved before a release added a built-in of the same name gives way.
  for (auto& t : snapshot.templates) templates_.emplace(t.name, std::move(t));
  GPURENT_CHECK(prices_.restore(std::move(snapshot.price_versions)));
  spot_.restore(std::move(snapshot.spot_prices));
  reindex_runs();
  std::sort(snapshot.volumes.begin(), snapshot.volumes.end(),
            [](const model::Volume& a, const model::Volume& b) {
              return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
            });
  for (auto& volume : snapshot.volumes) {
    if (volume.state == model::VolumeState::kAvailable && !volume.node_id.empty()) {
      volumes_on_node_[volume.node_id].insert(volume.id);
    }
    volume_order_.push_back(volume.id);
    volumes_.emplace(volume.id, std::move(volume));
  }
  for (auto& record : snapshot.idempotency) {
    idempotency_.emplace(std::make_pair(record.tenant_id, record.key), std::move(record));
  }
  for (const auto& transfer : snapshot.transfers) {
    if (transfer.kind == model::TransferKind::kTopup) topups_.emplace(transfer.id, transfer);
    if (auto posted = ledger_.post(transfer); !posted) return posted;
  }
  if (ledger_.total() != 0) return fail(Error::internal("restored ledger does not sum to zero"));
  for (auto& product : snapshot.package_products) {
    package_products_.insert_or_assign(product.name, std::move(product));
  }
  std::sort(snapshot.packages.begin(), snapshot.packages.end(), [](const auto& a, const auto& b) {
    return std::tie(a.bought_at, a.id) < std::tie(b.bought_at, b.id);
  });
  for (auto& package : snapshot.packages) {
    packages_by_tenant_[package.tenant_id].push_back(package.id);
    packages_.emplace(package.id, std::move(package));
  }
  for (auto& settings : snapshot.balance_settings) {
    balance_settings_.insert_or_assign(settings.tenant_id, std::move(settings));
  }
  for (auto& record : snapshot.downtime) {
    downtime_of_[record.instance_id].push_back(record.id);
    if (!record.end) open_downtime_[record.instance_id] = record.id;
    downtime_.emplace(record.id, std::move(record));
  }
  for (auto& event : snapshot.events) {
    if (event.seq != last_event_seq_ + 1 && !events_.empty()) {
      return fail(Error::internal(fmt::format("event log has a gap before seq {}", event.seq)));
    }
    last_event_seq_ = event.seq;
    events_.push_back(std::move(event));
  }
  return {};
}

ChangeSet Controller::take_changes() {
  // Each changed object is copied once per batch, however often it changed: copying per change
  // made an array job's cost grow with the square of its size, and wrote each member twice
  // (created, then placed) and each node once per task placed on it.
  for (const auto& id : touched_instances_) changes_.instances.push_back(instances_.at(id));
  touched_instances_.clear();
  for (const auto& id : touched_nodes_) {
    changes_.nodes.push_back(nodes_.at(id));
    stored_generation_[id] = changes_.nodes.back().generation;
  }
  touched_nodes_.clear();
  touched_node_ids_.clear();
  for (const model::UsageRecord* usage : touched_usage_) changes_.usage.push_back(*usage);
  changes_.metered_usage.reserve(changes_.metered_usage.size() + metered_usage_.size());
  for (const model::UsageRecord* usage : metered_usage_) {
    if (usage->queued_batch != change_batch_) changes_.add_metered_usage(*usage);
  }
  touched_usage_.clear();
  metered_usage_.clear();
  ++change_batch_;
  for (const auto& id : touched_volumes_) changes_.volumes.push_back(volumes_.at(id));
  touched_volumes_.clear();
  touched_volume_ids_.clear();
  // A job's row holds its own fields; its tasks are rows of their own, and only the changed ones
  // are written (a job's task list is as long as its array).
  for (const auto& id : touched_jobs_) {
    model::Job& job = jobs_.at(id);
    auto tasks = std::move(job.tasks);  // the copy goes without them; then they are put back
    job.tasks.clear();
    changes_.jobs.push_back(job);
    job.tasks = std::move(tasks);
  }
  touched_jobs_.clear();
  for (const auto& [job_id, index] : touched_tasks_) {
    model::JobTask& task = jobs_.at(job_id).tasks.at(static_cast<size_t>(index));
    if (std::exchange(task.streamed, false)) continue;  // handed over as it is
    changes_.job_tasks.push_back({job_id, task});
  }
  touched_tasks_.clear();
  return std::exchange(changes_, ChangeSet{});
}

namespace {

ObjectRow row_of(const Instance& instance) {
  return {instance.id, instance.tenant_id, model::instance_row_json(instance)};
}

}  // namespace

ChangeSet Controller::take_changes_for_store() {
  for (const auto& id : touched_instances_) {
    const Instance& instance = instances_.at(id);
    if (instance.streamed_revision == instance.revision) continue;  // handed over as it is
    changes_.instance_rows.push_back(row_of(instance));
  }
  touched_instances_.clear();
  placed_unstreamed_.clear();
  return take_changes();
}

void Controller::stream_placed_rows(std::function<void(ChangeSet)> sink, size_t every) {
  row_sink_ = std::move(sink);
  rows_per_piece_ = every;
  placed_unstreamed_.clear();
}

void Controller::stream_placed_rows_if_due() {
  if (!row_sink_ || placed_unstreamed_.size() < rows_per_piece_) return;
  ChangeSet piece;
  piece.instance_rows.reserve(placed_unstreamed_.size());
  for (const auto& id : placed_unstreamed_) {
    Instance& instance = instances_.at(id);
    if (instance.streamed_revision == instance.revision) continue;  // placed twice in one piece
    piece.instance_rows.push_back(row_of(instance));
    instance.streamed_revision = instance.revision;
    if (instance.job_id.empty() || instance.job_rank != 0) continue;
    // A job member's task changed with its placement (its attempts): its row goes along.
    model::JobTask& task =
        jobs_.at(instance.job_id).tasks.at(static_cast<size_t>(instance.job_task));
    if (task.streamed) continue;  // a gang's task goes with its rank 0
    piece.job_tasks.push_back({instance.job_id, task});
    task.streamed = true;
  }
  placed_unstreamed_.clear();
  row_sink_(std::move(piece));
}

void Controller::touch(Instance& instance) {
  note_change(instance);
  if (instance.queued_batch == change_batch_) return;
  instance.queued_batch = change_batch_;
  touched_instances_.push_back(instance.id);
}

void Controller::note_change(Instance& instance) {
  ++instance.revision;
  if (instance.changed_batch == change_batch_) return;
  instance.changed_batch = change_batch_;
  changes_.changed_instances.push_back(instance.id);
}

void Controller::touch_node(Node& node, bool desired_set_changed) {
  if (desired_set_changed) {
    ++node.generation;
    changes_.woken_nodes.insert(node.id);
    if (node.generation - stored_generation_[node.id] < kGenerationsBetweenNodeWrites) return;
  }
  if (touched_node_ids_.insert(node.id).second) touched_nodes_.push_back(node.id);
}

void Controller::touch_usage(model::UsageRecord& usage) {
  if (usage.queued_batch == change_batch_) return;
  usage.queued_batch = change_batch_;
  touched_usage_.push_back(&usage);
}

void Controller::touch_metering(model::UsageRecord& usage) {
  if (usage.metered_batch == change_batch_) return;
  usage.metered_batch = change_batch_;
  metered_usage_.push_back(&usage);
}

Status Controller::post(model::Transfer transfer) {
  if (auto posted = ledger_.post(transfer); !posted) return posted;
  changes_.transfers.push_back(std::move(transfer));
  return {};
}

// --- Bootstrap and authentication ---------------------------------------------------------------

bool Controller::has_admin_key() const {
  return std::any_of(api_keys_.begin(), api_keys_.end(),
                     [](const auto& entry) { return entry.second.role == model::Role::kAdmin; });
}

Result<model::ApiKey> Controller::bootstrap_admin(std::string_view secret_hash,
                                                  std::string_view prefix, Micros credit) {
  if (const auto it = key_by_hash_.find(std::string(secret_hash)); it != key_by_hash_.end()) {
    return api_keys_.at(it->second);
  }
  auto tenant_it = std::find_if(tenants_.begin(), tenants_.end(),
                                [](const auto& entry) { return entry.second.name == "admin"; });
  if (tenant_it == tenants_.end()) {
    model::Tenant tenant{rng_.id("t-"), "admin", now()};
    changes_.tenants.push_back(tenant);
    tenant_it = tenants_.emplace(tenant.id, tenant).first;
    if (credit > 0) {
      GPURENT_CHECK(post({.id = "promotion:bootstrap:" + tenant.id,
                          .at = now(),
                          .from_account = std::string(model::kPromotionsAccount),
                          .to_account = model::tenant_cash_account(tenant.id),
                          .amount = credit,
                          .kind = model::TransferKind::kCredit,
                          .tenant_id = tenant.id,
                          .reference = "bootstrap credit"}));
    }
  }
  model::ApiKey key{rng_.id("k-"), tenant_it->first,         model::Role::kAdmin,
                    "bootstrap",   std::string(secret_hash), std::string(prefix),
                    now()};
  key_by_hash_.emplace(key.secret_hash, key.id);
  api_keys_.emplace(key.id, key);
  changes_.api_keys.push_back(key);
  return key;
}

std::optional<Principal> Controller::authenticate(std::string_view key_hash) const {
  const auto it = key_by_hash_.find(std::string(key_hash));
  if (it == key_by_hash_.end()) return std::nullopt;
  const auto& key = api_keys_.at(it->second);
  return Principal{key.tenant_id, key.id, key.role};
}

std::optional<std::string> Controller::authenticate_node(std::string_view credential_hash) const {
  const auto it = node_by_credential_.find(std::string(credential_hash));
  if (it == node_by_credential_.end()) return std::nullopt;
  return it->second;
}

bool Controller::node_uses_workdir(std::string_view node_id, std::string_view upload_id) const {
  const auto placed = instances_on_node_.find(std::string(node_id));
  if (upload_id.empty() || placed == instances_on_node_.end()) return false;
  return std::any_of(placed->second.begin(), placed->second.end(), [&](const std::string& id) {
    return instances_.at(id).spec.workdir == upload_id;
  });
}

std::string Controller::tenant_id_for(std::string_view ref) const {
  if (ref.empty() || tenants_.contains(std::string(ref))) return std::string(ref);
  for (const auto& [id, tenant] : tenants_) {
    if (tenant.name == ref) return id;
  }
  return std::string(ref);
}

std::string_view Controller::node_registered_from(std::string_view node_id) const {
  const auto node = nodes_.find(node_id);
  return node == nodes_.end() ? std::string_view() : std::string_view(node->second.registered_from);
}

// --- Tenants, keys, money -----------------------------------------------------------------------

Result<model::Tenant> Controller::create_tenant(const Principal& caller, std::string name) {
  if (!caller.is_operator()) return fail(forbidden("create tenants"));
  for (const auto& [id, tenant] : tenants_) {
    if (tenant.name == name) {
      return fail(Error::conflict("tenant_name_taken", fmt::format("tenant '{}' exists", name)));
    }
  }
  model::Tenant tenant{rng_.id("t-"), std::move(name), now()};
  tenants_.emplace(tenant.id, tenant);
  changes_.tenants.push_back(tenant);
  return tenant;
}

std::vector<const model::Tenant*> Controller::tenants(const Principal& caller) const {
  std::vector<const model::Tenant*> out;
  for (const auto& [id, tenant] : tenants_) {
    if (visible_to(caller, id)) out.push_back(&tenant);
  }
  return out;
}

Result<model::ApiKey> Controller::create_api_key(const Principal& caller, NewApiKey request) {
  if (request.tenant_id.empty()) request.tenant_id = caller.tenant_id;
  if (!visible_to(caller, request.tenant_id) || !tenants_.contains(request.tenant_id)) {
    return fail(Error::not_found("tenant", request.tenant_id));
  }
  const bool allowed =
      caller.role == model::Role::kAdmin ||
      (caller.role == model::Role::kOperator && request.role != model::Role::kAdmin) ||
      request.role == model::Role::kTenant;
  if (!allowed) {
    return fail(Error{ErrorKind::kPermissionDenied, "forbidden",
                      fmt::format("a {} key may not create {} keys", model::to_string(caller.role),
                                  model::to_string(request.role))});
  }
  model::ApiKey key{rng_.id("k-"),
                    request.tenant_id,
                    request.role,
                    std::move(request.name),
                    std::move(request.secret_hash),
                    std::move(request.prefix),
                    now()};
  key_by_hash_.emplace(key.secret_hash, key.id);
  api_keys_.emplace(key.id, key);
  changes_.api_keys.push_back(key);
  return key;
}

Result<model::JoinToken> Controller::create_join_token(const Principal& caller,
                                                       std::string description, Millis ttl,
                                                       std::string secret_hash) {
  if (!caller.is_operator()) return fail(forbidden("create join tokens"));
  model::JoinToken token{rng_.id("jt-"), std::move(secret_hash), std::move(description), now(),
                         now() + ttl};
  join_token_by_hash_.emplace(token.secret_hash, token.id);
  join_tokens_.emplace(token.id, token);
  changes_.join_tokens.push_back(token);
  return token;
}

Result<TopupResult> Controller::topup(const Principal& caller, std::string_view tenant_id,
                                      Micros amount, std::string reference,
                                      std::optional<std::string> idempotency_key) {
  if (!caller.is_operator()) return fail(forbidden("top up balances"));
  if (!tenants_.contains(tenant_id)) return fail(Error::not_found("tenant", tenant_id));
  if (amount <= 0)
    return fail(Error::invalid("invalid_field", "field 'amount_micros' must be > 0"));
  const std::string id = idempotency_key ? fmt::format("topup:{}:{}", tenant_id, *idempotency_key)
                                         : fmt::format("topup:{}:{}", tenant_id, rng_.id(""));
  if (const auto it = topups_.find(id); it != topups_.end()) {
    if (it->second.amount != amount || it->second.reference != reference) {
      return fail(Error::conflict("idempotency_key_reused",
                                  "this Idempotency-Key was used for a different top-up"));
    }
    return TopupResult{it->second, ledger_.balance(model::tenant_cash_account(tenant_id))};
  }
  model::Transfer transfer{.id = id,
                           .at = now(),
                           .from_account = std::string(model::kTopupsAccount),
                           .to_account = model::tenant_cash_account(tenant_id),
                           .amount = amount,
                           .kind = model::TransferKind::kTopup,
                           .tenant_id = std::string(tenant_id),
                           .reference = std::move(reference)};
  GPURENT_CHECK(post(transfer));
  topups_.emplace(id, transfer);
  // Funded above the threshold now (a new tenant's first top-up): the next fall below it warns,
  // without waiting for a billing tick to notice the top-up.
  guard_balance(tenant_id);
  return TopupResult{std::move(transfer), ledger_.balance(model::tenant_cash_account(tenant_id))};
}

Result<Micros> Controller::balance(const Principal& caller, std::string_view tenant_id) const {
  if (!visible_to(caller, tenant_id) || !tenants_.contains(tenant_id)) {
    return fail(Error::not_found("tenant", tenant_id));
  }
  return ledger_.balance(model::tenant_cash_account(tenant_id));
}

std::vector<const model::UsageRecord*> Controller::usage(std::string_view tenant_id) const {
  std::vector<const model::UsageRecord*> out;
  const auto it = usage_by_tenant_.find(std::string(tenant_id));
  if (it == usage_by_tenant_.end()) return out;
  for (const auto& id : it->second) out.push_back(&usage_.at(id));
  return out;
}

std::vector<model::Transfer> Controller::transfers(std::string_view tenant_id) const {
  return ledger_.transfers_of(tenant_id);
}

// --- Instances ----------------------------------------------------------------------------------

std::optional<Micros> Controller::highest_price(const model::InstanceSpec& spec) const {
  // Until it is placed, an instance that accepts several types is judged at the dearest one.
  std::optional<Micros> highest;
  const auto consider = [&](std::string_view type) {
    const auto price = billing::gpu_price(rates(), type, spec.pricing, now());
    if (price && (!highest || *price > *highest)) highest = price;
  };
  if (!spec.gpu_types.empty()) {
    for (const auto& type : spec.gpu_types) consider(type);
  } else {
    for (const auto& type : model::gpu_catalog()) {
      if (type.memory_mb >= int64_t{spec.min_gpu_memory_gb} * kMibPerGib) consider(type.slug);
    }
  }
  return highest;
}

Status Controller::check_funds(std::string_view tenant_id, const model::InstanceSpec& spec) const {
  const auto price = highest_price(spec);
  const auto type = model::requested_gpu_type(spec);
  if (!price) {
    return fail(Error::unprocessable("gpu_type_not_priced",
                                     fmt::format("GPU type '{}' has no price yet", type)));
  }
  if (over_credit_limit(tenant_id)) {
    return fail(Error{ErrorKind::kPaymentRequired, "insufficient_funds",
                      "the balance is below the credit limit: top up to start work again"});
  }
  const Micros needed =
      charge_for_seconds(*price, int64_t{spec.gpu_count} * spec.gpu_milli, kMinimumPrepaidSeconds);
  // A credit limit lets the balance go that far below zero.
  const Micros balance = ledger_.balance(model::tenant_cash_account(tenant_id)) +
                         balance_settings(tenant_id).credit_limit;
  if (balance <= 0 || balance < needed) {
    return fail(Error{
        ErrorKind::kPaymentRequired, "insufficient_balance",
        fmt::format("the balance, {}, does not cover {} s of {} x {} ({} needed); top up first "
                    "(`gpurent balance`)",
                    format_money(balance, options_.currency), kMinimumPrepaidSeconds,
                    spec.gpu_count, type, format_money(needed, options_.currency))});
  }
  return {};
}

Result<std::optional<std::string>> Controller::replayed_object(
    std::string_view tenant_id, const std::optional<std::string>& idempotency_key,
    std::string_view fingerprint) const {
  if (!idempotency_key) return std::nullopt;
  const auto it = idempotency_.find({std::string(tenant_id), *idempotency_key});
  if (it == idempotency_.end()) return std::nullopt;
  if (it->second.fingerprint != fingerprint) {
    return fail(Error::conflict("idempotency_key_reused",
                                "this Idempotency-Key was used with a different request"));
  }
  return it->second.object_id;
}

void Controller::remember_idempotency(std::string_view tenant_id,
                                      const std::optional<std::string>& idempotency_key,
                                      std::string fingerprint, std::string_view object_id) {
  if (!idempotency_key) return;
  model::IdempotencyRecord record{std::string(tenant_id), *idempotency_key, std::move(fingerprint),
                                  std::string(object_id), now()};
  changes_.idempotency.push_back(record);
  idempotency_.emplace(std::make_pair(record.tenant_id, record.key), std::move(record));
}

Status Controller::validate_spec(const model::InstanceSpec& spec, int nodes) const {
  for (const auto& type : spec.gpu_types) {
    if (!model::find_gpu_type(type)) {
      return fail(Error::unprocessable("unknown_gpu_type", model::unknown_gpu_type_message(type)));
    }
  }
  if (spec.gpu_count < 1 || spec.gpu_count > kMaxGpusPerInstance) {
    return fail(Error::invalid(
        "invalid_field",
        fmt::format("field 'gpu_count' must be between 1 and {}", kMaxGpusPerInstance)));
  }
  GPURENT_CHECK(model::validate_volume_mounts(spec.volumes));
  if (nodes > 1 && !spec.volumes.empty()) {
    return fail(Error::invalid("invalid_field",
                               "volumes live on one node: a job that mounts them needs nodes = 1"));
  }
  auto request = scheduling_request(spec);
  request.nodes = nodes;
  return sched::validate(request);
}

Status Controller::check_placeable(const model::InstanceSpec& spec, int nodes) const {
  auto request = scheduling_request(spec);
  request.nodes = nodes;
  std::string conflict;  // none: check_volume_use passed
  request.node_id = volume_node(spec, &conflict);
  if (!spec.wait_for_capacity) {
    if (const auto never = cluster_.why_never_fits(request)) {
      return fail(Error::unprocessable(
          "never_fits",
          fmt::format("no node of this cluster could ever hold it ({} rule): {}. To queue it "
                      "until such a node joins, pass --wait-for-capacity (API: "
                      "\"wait_for_capacity\": true); `gpurent offers` lists what there is",
                      never->constraint, never->message)));
    }
  }
  if (spec.queue) return {};
  // Fail fast: say which constraint failed rather than queueing.
  auto placed = cluster_.place_or_explain(request);
  if (const auto* refusal = std::get_if<sched::Refusal>(&placed)) {
    return fail(Error::conflict(
        "insufficient_capacity",
        fmt::format("cannot be placed now ({} rule): {}; free GPUs of the requested type(s): "
                    "{}, at most {} on one node. Without --no-queue it would wait in the queue",
                    refusal->constraint, refusal->message, refusal->free_gpus,
                    refusal->largest_free_on_one_node)));
  }
  return {};
}

Instance& Controller::add_instance(std::string_view tenant_id, model::InstanceSpec spec) {
  Instance instance;
  instance.id = rng_.id("i-");
  instance.tenant_id = tenant_id;
  if (spec.name.empty()) spec.name = instance.id;
  instance.spec = std::move(spec);
  instance.state = InstanceState::kPending;
  instance.created_at = now();
  instance.queued_at = now();
  instance.reason = "waiting for capacity";
  const std::string id = instance.id;
  Instance& added = instances_.emplace(id, std::move(instance)).first->second;
  append_to_creation_order(added);
  return added;
}

void Controller::append_to_creation_order(Instance& instance) {
  instance.creation_position = instance_order_.size();
  instance_order_.push_back(&instance);
}

Result<CreatedInstance> Controller::create_instance(const Principal& caller,
                                                    model::InstanceSpec spec,
                                                    std::optional<std::string> idempotency_key,
                                                    std::string fingerprint) {
  GPURENT_TRY(replayed, replayed_object(caller.tenant_id, idempotency_key, fingerprint));
  GPURENT_TRY(first, replay_from<CreatedInstance>(instances_, replayed));
  if (first) return std::move(*first);
  GPURENT_CHECK(validate_spec(spec, 1));
  GPURENT_CHECK(resolve_volume_names(caller, spec));
  GPURENT_CHECK(check_volume_use(caller.tenant_id, spec));
  GPURENT_CHECK(check_reservation_use(caller, spec));
  GPURENT_CHECK(check_funds(caller.tenant_id, spec));
  GPURENT_CHECK(check_placeable(spec, 1));
  observe_request(spec, 1);
  Instance& created = add_instance(caller.tenant_id, std::move(spec));
  enqueue(created);
  touch(created);
  remember_idempotency(caller.tenant_id, idempotency_key, std::move(fingerprint), created.id);
  const std::string id = created.id;
  schedule();
  return CreatedInstance{instances_.at(id), false};
}

Result<Instance*> Controller::owned_instance(const Principal& caller, std::string_view id) {
  GPURENT_TRY(found, instance(caller, id));
  if (!found->job_id.empty()) {
    return fail(Error::conflict(
        "owned_by_job", fmt::format("instance {} runs a task of job {}; use the job's commands",
                                    found->id, found->job_id)));
  }
  return const_cast<Instance*>(found);
}

Result<const Instance*> Controller::instance(const Principal& caller, std::string_view id) const {
  const auto it = instances_.find(id);
  if (it != instances_.end() && visible_to(caller, it->second.tenant_id)) return &it->second;
  std::vector<std::pair<const Instance*, NamedObject>> candidates;
  for (const Instance* candidate : instance_order_) {
    if (candidate->tenant_id == caller.tenant_id &&
        candidate->state != InstanceState::kTerminated) {
      candidates.push_back({candidate, {candidate->id, candidate->spec.name}});
    }
  }
  return find_by_name<Instance>("instance", id, candidates);
}

Result<InstancePage> Controller::list_instances(const Principal& caller,
                                                const InstanceFilter& filter,
                                                std::string_view cursor, size_t limit) const {
  size_t position = 0;
  if (!cursor.empty()) {
    const auto it = instances_.find(cursor);
    // A cursor names an instance; one the caller may not see is as unknown as a made-up one.
    if (it == instances_.end() || !instance(caller, cursor)) {
      return fail(Error::invalid("invalid_query", "unknown cursor"));
    }
    position = it->second.creation_position + 1;
  }
  std::optional<std::string> tenant = caller.is_operator() ? filter.tenant_id : caller.tenant_id;
  InstancePage page;
  for (; position < instance_order_.size(); ++position) {
    const Instance& instance = *instance_order_[position];
    if (tenant && instance.tenant_id != *tenant) continue;
    if (instance.job_id != filter.job_id.value_or("")) continue;
    if (filter.state && instance.state != *filter.state) continue;
    if (page.items.size() == limit) {
      page.next_cursor = page.items.back()->id;
      break;
    }
    page.items.push_back(&instance);
  }
  return page;
}

std::optional<Micros> Controller::instance_price(const Instance& instance) const {
  if (instance.run > 0) {
    const auto it = usage_.find(usage_id(instance));
    if (it != usage_.end() && !it->second.ended_at) return it->second.price_per_gpu_hour;
  }
  if (!instance.gpu_type.empty()) {
    return billing::gpu_price(rates(), instance.gpu_type, instance.spec.pricing, now());
  }
  return highest_price(instance.spec);
}

Result<Instance> Controller::stop_instance(const Principal& caller, std::string_view id) {
  GPURENT_TRY(instance, owned_instance(caller, id));
  switch (instance->state) {
    case InstanceState::kPending:
      withdraw(*instance, "stopped before it was placed");
      break;
    case InstanceState::kStarting:
    case InstanceState::kRunning:
      request_stop(*instance, "stopped by the tenant");
      break;
    case InstanceState::kStopping:
      // A stop by the tenant wins over a move or a preemption in progress.
      instance->requeue_requested = instance->preempt_requested = false;
      touch(*instance);
      break;
    case InstanceState::kStopped:
    case InstanceState::kFailed:
    case InstanceState::kPreempted:
      break;  // already on its way or there: stopping twice is not an error
    case InstanceState::kTerminated:
      return fail(invalid_state(*instance, "stop"));
  }
  return *instance;
}

Result<Instance> Controller::start_instance(const Principal& caller, std::string_view id) {
  GPURENT_TRY(instance, owned_instance(caller, id));
  switch (instance->state) {
    case InstanceState::kStopped:
    case InstanceState::kFailed:
    case InstanceState::kPreempted:
      GPURENT_CHECK(check_funds(instance->tenant_id, instance->spec));
      queue_again(*instance);
      schedule();
      break;
    case InstanceState::kPending:
    case InstanceState::kStarting:
    case InstanceState::kRunning:
      break;  // already started
    case InstanceState::kStopping:
      // Started once its process is gone (end_run), unless it is going for good.
      if (instance->terminate_requested || !instance->job_id.empty()) {
        return fail(invalid_state(*instance, "start"));
      }
      GPURENT_CHECK(check_funds(instance->tenant_id, instance->spec));
      instance->start_requested = true;
      touch(*instance);
      break;
    case InstanceState::kTerminated:
      return fail(invalid_state(*instance, "start"));
  }
  return *instance;
}

void Controller::queue_again(Instance& instance) {
  close_stopped_disk(instance);
  instance.state = InstanceState::kPending;
  instance.reason = "waiting for capacity";
  instance.exit_code.reset();
  instance.queued_at = now();
  instance.queue_sequence = 0;  // a new arrival
  enqueue(instance);
  touch(instance);
}

Result<Instance> Controller::delete_instance(const Principal& caller, std::string_view id) {
  GPURENT_TRY(instance, owned_instance(caller, id));
  switch (instance->state) {
    case InstanceState::kPending:
      dequeue(*instance);
      [[fallthrough]];
    case InstanceState::kStopped:
    case InstanceState::kFailed:
    case InstanceState::kPreempted:
      close_stopped_disk(*instance);
      instance->state = InstanceState::kTerminated;
      instance->reason = "removed by the tenant";
      touch(*instance);
      break;
    case InstanceState::kStarting:
    case InstanceState::kRunning:
      instance->terminate_requested = true;
      request_stop(*instance, "removed by the tenant");
      break;
    case InstanceState::kStopping:
      instance->terminate_requested = true;
      touch(*instance);
      if (nodes_.at(instance->node_id).state == NodeState::kDown)
        end_run(*instance, std::nullopt, "");
      break;
    case InstanceState::kTerminated:
      break;
  }
  return *instance;
}

void Controller::withdraw(Instance& instance, std::string reason) {
  dequeue(instance);
  instance.state = InstanceState::kStopped;
  instance.reason = std::move(reason);
  touch(instance);
}

void Controller::request_stop(Instance& instance, std::string reason) {
  instance.state = InstanceState::kStopping;
  instance.reason = std::move(reason);
  touch(instance);
  Node& node = nodes_.at(instance.node_id);
  touch_node(node, /*desired_set_changed=*/true);
  // A down node cannot confirm the stop; its billing already ended at its last report, and if it
  // comes back its agent stops the workload because the desired set no longer holds it. Work on
  // a quarantined GPU ends at once too: billing ends at the report that carried the fault.
  if (node.state == NodeState::kDown || on_quarantined_gpu(instance)) {
    end_run(instance, std::nullopt, "");
  }
}

// --- Placement and runs -------------------------------------------------------------------------

model::UsageRecord* Controller::current_usage(const Instance& instance) {
  const auto it = usage_.find(usage_id(instance));
  return it == usage_.end() ? nullptr : &it->second;
}

void Controller::restore_run_start(Instance& instance) {
  if (instance.started_at) return;
  const model::UsageRecord* usage = current_usage(instance);
  if (!usage) return;
  instance.started_at = usage->started_at;
  if (instance.state == InstanceState::kStarting) instance.state = InstanceState::kRunning;
}

void Controller::begin_run(Instance& instance) {
  // The first report of the process opens its metering, also when a stop was asked for before
  // the process came up: it runs (and is billed) until the agent confirms it is gone.
  if (instance.started_at) return;
  // One instant for the instance and its usage record: a restore reads the one from the other.
  const Timestamp started = now();
  if (instance.state == InstanceState::kStarting) instance.state = InstanceState::kRunning;
  instance.started_at = started;
  record_downtime_end(instance, started);
  if (instance.spec.max_runtime_s) {
    deadlines_.emplace(started + Millis(*instance.spec.max_runtime_s * 1000), instance.id);
    settled_.reset();  // its end is known now: the backfill estimates move
  }
  // Not written: the run's usage record, written below, says when it started, and restore
  // derives the start from it (restore_run_start); an array's start would otherwise write every
  // member a second time.
  note_change(instance);
  if (!instance.job_id.empty()) member_running(instance);
  model::UsageRecord usage = billing::usage_shape(instance.spec, instance.gpu_type);
  usage.id = usage_id(instance);
  usage.tenant_id = instance.tenant_id;
  usage.instance_id = instance.id;
  usage.run = instance.run;
  usage.gpu_milli = instance.gpu_milli;
  usage.price_per_gpu_hour =
      billing::gpu_price(rates(), instance.gpu_type, instance.spec.pricing, started).value_or(0);
  usage.started_at = started;
  usage.metered_until = started;
  usage_by_tenant_[usage.tenant_id].push_back(usage.id);
  model::UsageRecord& record = usage_.emplace(usage.id, std::move(usage)).first->second;
  touch_usage(record);
  index_run(instance, record);
  spdlog::debug("running instance={} run={}", instance.id, instance.run);
}

void Controller::meter(Instance& instance, Timestamp until) {
  model::UsageRecord* usage = current_usage(instance);
  if (usage && !usage->ended_at) meter_run(*usage, until, ledger_.tenant_names(usage->tenant_id));
}

void Controller::end_run(Instance& instance, std::optional<int> exit_code, std::string reason,
                         RunEnd how) {
  Node& node = nodes_.at(instance.node_id);
  if (instance.state == InstanceState::kRunning || instance.state == InstanceState::kStopping) {
    // Billing ends at the last moment the node is known to have been up.
    meter(instance, node.state == NodeState::kReady ? now() : node.last_heartbeat);
    if (auto* usage = current_usage(instance); usage && !usage->ended_at) {
      // A run the platform cut short (its node or GPU failed, its agent lost it, it was
      // preempted or moved off a drained node) pays no minimum, nor one that never ran.
      const bool platform_ended = node.state != NodeState::kReady || how != RunEnd::kReported ||
                                  instance.preempt_requested || instance.requeue_requested ||
                                  on_quarantined_gpu(instance);
      if (!platform_ended) charge_minimum_duration(*usage);
      usage->ended_at = usage->metered_until;
      touch_usage(*usage);
    }
  }
  const bool asked_to_stop = instance.state == InstanceState::kStopping;
  if (instance.terminate_requested) {
    instance.state = InstanceState::kTerminated;
  } else if (asked_to_stop && instance.preempt_requested) {
    instance.state = InstanceState::kPreempted;
  } else if (asked_to_stop && instance.requeue_requested) {
    instance.state = InstanceState::kPending;
  } else if (asked_to_stop || exit_code == 0) {
    instance.state = InstanceState::kStopped;
  } else {
    instance.state = InstanceState::kFailed;
  }
  if (!asked_to_stop) instance.reason = std::move(reason);
  // Downtime lasts until the instance runs again, or is stopped for good.
  if (instance.state != InstanceState::kPending) record_downtime_end(instance, now());
  instance.exit_code = exit_code;
  instance.ended_at = now();
  for (const auto& gpu : instance.gpus) {
    if (const auto holders = gpu_holders_.find(gpu); holders != gpu_holders_.end()) {
      holders->second.erase(instance.id);
      if (holders->second.empty()) gpu_holders_.erase(holders);
    }
  }
  if (const auto held = assignments_.find(instance.id); held != assignments_.end()) {
    // The scheduler's view must match the instances: what an instance holds is allocated.
    const auto released = cluster_.release(held->second);
    GPURENT_ASSERT(released, "releasing {}: {}", instance.id, released.error().message);
    hold(instance, -1);
    assignments_.erase(held);
    queue_changed_ = true;
  }
  for (auto& [waiting, victims] : preemptions_) victims.erase(instance.id);
  if (instance.spec.max_runtime_s && instance.started_at) {
    deadlines_.erase(
        {*instance.started_at + Millis(*instance.spec.max_runtime_s * 1000), instance.id});
  }
  instance.preempt_requested = false;
  instances_on_node_[node.id].erase(instance.id);
  instance.gpus.clear();
  if (instance.state == InstanceState::kPending) {
    // Moved off a drained node: back in the queue, ahead of later arrivals of its class (a job
    // member waits for its task to settle: the task moves as a whole).
    instance.requeue_requested = false;
    // Said plainly: on a cluster with no other node, this waits until the node is uncordoned.
    instance.reason = fmt::format(
        "moving off drained node {}: waiting for capacity on another node (or for `gpurent "
        "nodes uncordon {}`)",
        node.id, node.id);
    if (instance.job_id.empty()) enqueue(instance);
  }
  open_stopped_disk(instance);
  touch(instance);
  touch_node(node, /*desired_set_changed=*/true);
  if (std::exchange(instance.start_requested, false) && instance.state == InstanceState::kStopped) {
    queue_again(instance);  // a start asked for while it was stopping
  }
  spdlog::debug("ended instance={} run={} state={} exit_code={}", instance.id, instance.run,
                model::to_string(instance.state), exit_code ? std::to_string(*exit_code) : "none");
  if (!instance.job_id.empty()) member_ended(instance);
}

// --- Nodes and agents ---------------------------------------------------------------------------

Result<model::RegistrationResult> Controller::register_node(std::string_view join_token_hash,
                                                            model::NodeRegistration registration,
                                                            std::string credential,
                                                            std::string credential_hash) {
  const auto token = join_token_by_hash_.find(std::string(join_token_hash));
  if (token == join_token_by_hash_.end() || join_tokens_.at(token->second).expires_at <= now()) {
    return fail(Error{ErrorKind::kUnauthenticated, "invalid_join_token",
                      "the join token is unknown or expired"});
  }
  if (registration.name.empty() || registration.name.size() > 253) {
    return fail(Error::invalid("invalid_field", "field 'name' must be 1..253 characters"));
  }
  if (registration.gpus.size() > static_cast<size_t>(sched::kMaxGpusPerNode)) {
    return fail(Error::invalid(
        "invalid_field", fmt::format("a node may have at most {} GPUs", sched::kMaxGpusPerNode)));
  }
  if (std::any_of(registration.gpus.begin(), registration.gpus.end(), [&](const model::Gpu& gpu) {
        return gpu.type != registration.gpus.front().type;
      })) {
    return fail(Error::invalid("mixed_gpu_types",
                               "all GPUs of a node must be of one type; run one agent per type"));
  }
  if (registration.isolation != "" && registration.isolation != "sandbox" &&
      registration.isolation != "none") {
    return fail(Error::invalid("invalid_field", "field 'isolation' must be 'sandbox' or 'none'"));
  }
  if (registration.labels.size() > 64 || registration.fabric_group.size() > 253 ||
      registration.disk_gb < 0 || registration.isolation_note.size() > 1024) {
    return fail(Error::invalid("invalid_field", "labels, fabric_group or disk_gb out of range"));
  }
  for (const auto& [key, value] : registration.labels) {
    if (key.starts_with(detail::kPlatformLabelPrefix)) {
      return fail(Error::invalid("invalid_field",
                                 fmt::format("label '{}': labels under {} are the platform's", key,
                                             detail::kPlatformLabelPrefix)));
    }
  }
  // The address becomes MASTER_ADDR in other tenants' jobs: a host name or IP address only.
  if (registration.address.size() > 253 ||
      !std::all_of(registration.address.begin(), registration.address.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':';
      })) {
    return fail(Error::invalid("invalid_field", "address must be a host name or IP address"));
  }
  std::set<std::string> uuids;
  for (const auto& gpu : registration.gpus) {
    if (gpu.uuid.empty() || gpu.uuid.size() > 128 || gpu.type.empty() ||
        !uuids.insert(gpu.uuid).second) {
      return fail(Error::invalid("invalid_field", "every GPU needs a unique uuid and a type"));
    }
  }
  // The nodes already holding any of these GPUs (an index: registering N nodes stays O(N)).
  std::set<std::string> owners;
  for (const auto& uuid : uuids) {
    if (const auto owner = node_by_gpu_.find(uuid); owner != node_by_gpu_.end()) {
      owners.insert(owner->second);
    }
  }
  for (const auto& id : owners) {
    Node& known = nodes_.at(id);
    // The same host registering again (its answer was lost, or its identity file with it) gets
    // its node back under a new credential, as long as no work is placed there; anything else
    // claiming known GPUs is refused.
    const bool same_host =
        known.name == registration.name && known.gpus.size() == uuids.size() &&
        std::all_of(known.gpus.begin(), known.gpus.end(),
                    [&](const model::Gpu& gpu) { return uuids.contains(gpu.uuid); });
    if (!same_host || !instances_on_node_[id].empty()) {
      return fail(Error::conflict("gpu_already_registered",
                                  fmt::format("these GPUs already belong to node {}", id)));
    }
    node_by_credential_.erase(known.credential_hash);
    known.credential_hash = std::move(credential_hash);
    node_by_credential_.emplace(known.credential_hash, id);
    known.last_heartbeat = now();
    // Labels, fabric and disk may have changed with the agent's flags.
    known.disk_gb = registration.disk_gb;
    known.fabric_group = std::move(registration.fabric_group);
    known.labels = std::move(registration.labels);
    known.address = std::move(registration.address);
    known.container_runtime = registration.container_runtime;
    known.isolation = std::move(registration.isolation);
    known.isolation_note = std::move(registration.isolation_note);
    known.registered_from = std::move(registration.registered_from);
    known.cpu_count = registration.cpu_count;
    known.memory_mb = registration.memory_mb;
    known.gpus = std::move(registration.gpus);
    gpu_telemetry_.erase(id);
    touch_node(known, /*desired_set_changed=*/false);
    sync_cluster_node(known);
    spdlog::info("re-registered node={}", id);
    return model::RegistrationResult{id, std::move(credential)};
  }
  Node node;
  node.id = rng_.id("n-");
  node.name = std::move(registration.name);
  node.gpus = std::move(registration.gpus);
  node.cpu_count = registration.cpu_count;
  node.memory_mb = registration.memory_mb;
  node.disk_gb = registration.disk_gb;
  node.fabric_group = std::move(registration.fabric_group);
  node.labels = std::move(registration.labels);
  node.address = std::move(registration.address);
  node.simulated = registration.simulated;
  node.container_runtime = registration.container_runtime;
  node.isolation = std::move(registration.isolation);
  node.isolation_note = std::move(registration.isolation_note);
  node.registered_from = std::move(registration.registered_from);
  node.agent_version = std::move(registration.agent_version);
  node.state = NodeState::kReady;
  node.registered_at = now();
  node.last_heartbeat = now();
  node.credential_hash = std::move(credential_hash);
  node_by_credential_.emplace(node.credential_hash, node.id);
  for (const auto& gpu : node.gpus) {
    node_by_gpu_.emplace(gpu.uuid, node.id);
    monitoring_.series.set_owner(gpu.uuid, node.id);
  }
  const std::string id = node.id;
  auto& registered = nodes_.emplace(id, std::move(node)).first->second;
  touch_node(registered, /*desired_set_changed=*/false);
  sync_cluster_node(registered);
  spdlog::info("registered node={} gpus={}", id, nodes_.at(id).gpus.size());
  schedule();
  return model::RegistrationResult{id, std::move(credential)};
}

Result<model::DesiredState> Controller::desired_state(std::string_view node_id) const {
  const auto node = nodes_.find(node_id);
  if (node == nodes_.end()) return fail(Error::not_found("node", node_id));
  model::DesiredState desired{node->second.id, node->second.generation, {}, {}};
  if (const auto it = volumes_on_node_.find(node->second.id); it != volumes_on_node_.end()) {
    desired.volumes.assign(it->second.begin(), it->second.end());  // a std::set: in id order
  }
  const int64_t gpu_memory_mb = node->second.gpus.empty() ? 0 : node->second.gpus[0].memory_mb;
  if (const auto it = instances_on_node_.find(node->second.id); it != instances_on_node_.end()) {
    for (const auto& id : it->second) {
      const Instance& instance = instances_.at(id);
      // Work with both forms (a template's image and process command) runs the one this node
      // can: the image where there is an engine, else the process.
      const bool as_process = !node->second.container_runtime && !instance.spec.image.empty() &&
                              !instance.spec.process_command.empty();
      desired.workloads.push_back(
          {.instance_id = instance.id,
           .tenant_id = instance.tenant_id,
           .run = instance.run,
           .should_run = instance.state != InstanceState::kStopping,
           .image = as_process ? std::string() : instance.spec.image,
           .command = as_process ? instance.spec.process_command : instance.spec.command,
           .env = workload_env(instance, gpu_memory_mb),
           .gpus = instance.gpus,
           .cpu = instance.spec.cpu,
           .memory_gb = instance.spec.memory_gb,
           .volumes = instance.spec.volumes,
           .services = instance.spec.services,
           .workdir = instance.spec.workdir});
      if (const model::Job* job = job_of(instance)) {
        desired.workloads.back().job = model::job_member_placement(*job, instance);
      }
    }
  }
  return desired;
}

Result<int64_t> Controller::desired_generation(std::string_view node_id) const {
  const auto node = nodes_.find(node_id);
  if (node == nodes_.end()) return fail(Error::not_found("node", node_id));
  return node->second.generation;
}

Result<int64_t> Controller::apply_report(std::string_view node_id,
                                         const model::NodeReport& report) {
  const auto node_it = nodes_.find(node_id);
  if (node_it == nodes_.end()) return fail(Error::not_found("node", node_id));
  Node& node = node_it->second;
  node.last_heartbeat = now();
  quarantine_failed_gpus(node, report.telemetry);
  if (report.sent_at_ms) record_clock_skew(node, *report.sent_at_ms);
  record_telemetry(node, report.telemetry);
  if (report.container_runtime && *report.container_runtime != node.container_runtime) {
    // The agent restarted with (or without) a container engine: image work may go there (or not)
    // from now on; what runs there keeps running.
    node.container_runtime = *report.container_runtime;
    touch_node(node, /*desired_set_changed=*/false);
    sync_cluster_node(node);
    spdlog::info("node={} container_runtime={}", node.id, node.container_runtime);
  }
  if (node.state == NodeState::kDown) {
    node.state = NodeState::kReady;
    touch_node(node, /*desired_set_changed=*/false);
    update_schedulable(node);
    record_event("", node.id, model::event_kind::kNodeUp, "the node reports again");
    // The time it was unreachable is not billed.
    for (const auto& id : instances_on_node_[node.id]) {
      record_downtime_end(instances_.at(id), now());
      if (auto* usage = current_usage(instances_.at(id)); usage && !usage->ended_at) {
        usage->metered_until = std::max(usage->metered_until, now());
        touch_usage(*usage);
      }
    }
  }
  std::map<std::pair<std::string_view, int64_t>, const model::WorkloadStatus*> reported;
  for (const auto& status : report.workloads) reported[{status.instance_id, status.run}] = &status;

  // Copy: end_run edits the set.
  const std::set<std::string> assigned = instances_on_node_[node.id];
  for (const auto& id : assigned) {
    Instance& instance = instances_.at(id);
    const auto it = reported.find({instance.id, instance.run});
    if (it == reported.end()) {
      if (report.applied_generation >= instance.placed_generation) {
        // Gone as asked, or lost.
        if (instance.state == InstanceState::kStopping) {
          end_run(instance, std::nullopt, "");
        } else {
          end_run(instance, std::nullopt, "the agent lost the workload", RunEnd::kLostByAgent);
        }
      }
      continue;
    }
    const model::WorkloadStatus& status = *it->second;
    switch (status.phase) {
      case model::WorkloadPhase::kStarting:
        break;
      case model::WorkloadPhase::kRunning:
        begin_run(instance);
        break;
      case model::WorkloadPhase::kExited:
        begin_run(instance);
        if (status.never_started) {
          end_run(instance, status.exit_code,
                  fmt::format("the command could not be started: {}", status.message),
                  RunEnd::kNeverStarted);
          break;
        }
        end_run(instance, status.exit_code,
                status.exit_code == 0
                    ? "the command exited"
                    : fmt::format("the command exited with code {}{}",
                                  status.exit_code ? std::to_string(*status.exit_code) : "?",
                                  status.message.empty() ? "" : ": " + status.message));
        break;
    }
  }
  schedule();
  return node.generation;
}

NodePage Controller::list_nodes(const Principal& caller, std::string_view cursor,
                                size_t limit) const {
  NodePage page;
  if (!caller.is_operator()) return page;
  // By position in id order, not by the cursor's presence: a node removed between two pages
  // does not break the walk.
  for (auto it = cursor.empty() ? nodes_.begin() : nodes_.upper_bound(cursor); it != nodes_.end();
       ++it) {
    if (page.items.size() == limit) {
      page.next_cursor = page.items.back()->id;
      break;
    }
    page.items.push_back(&it->second);
  }
  return page;
}

Result<const Node*> Controller::node(const Principal& caller, std::string_view id) const {
  const auto it = nodes_.find(id);
  if (!caller.is_operator() || it == nodes_.end()) return fail(Error::not_found("node", id));
  return &it->second;
}

std::vector<std::string> Controller::gpu_holders(std::string_view uuid) const {
  const auto it = gpu_holders_.find(std::string(uuid));
  if (it == gpu_holders_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

Result<const Node*> Controller::set_cordoned(const Principal& caller, std::string_view id,
                                             bool cordoned) {
  if (!caller.is_operator()) return fail(forbidden("cordon nodes"));
  const auto it = nodes_.find(id);
  if (it == nodes_.end()) return fail(Error::not_found("node", id));
  Node& node = it->second;
  if (node.cordoned != cordoned) {
    node.cordoned = cordoned;
    touch_node(node, /*desired_set_changed=*/false);
    update_schedulable(node);
    spdlog::info("node={} {}", node.id, cordoned ? "cordoned" : "uncordoned");
    if (!cordoned) schedule();
  }
  return &node;
}

std::string_view Controller::node_status(const Node& node) const {
  if (node.state == NodeState::kDown) return "down";
  if (!node.cordoned) {
    const bool degraded = std::any_of(node.gpus.begin(), node.gpus.end(),
                                      [&](const model::Gpu& gpu) { return quarantined(gpu.uuid); });
    return degraded ? "degraded" : "ready";
  }
  const auto on_node = instances_on_node_.find(node.id);
  if (on_node != instances_on_node_.end()) {
    for (const auto& id : on_node->second) {
      if (instances_.at(id).requeue_requested) return "draining";
    }
  }
  return "cordoned";
}

Result<int> Controller::drain_node(const Principal& caller, std::string_view id) {
  GPURENT_TRY(node, set_cordoned(caller, id, true));
  int moving = 0;
  const std::set<std::string> on_node = instances_on_node_[node->id];  // request_stop may edit it
  for (const auto& instance_id : on_node) {
    Instance& instance = instances_.at(instance_id);
    if (instance.state != InstanceState::kStarting && instance.state != InstanceState::kRunning) {
      continue;
    }
    instance.requeue_requested = true;
    request_stop(instance, "moving: its node is being drained");
    record_event(instance.tenant_id, instance.id, model::event_kind::kInstanceMoved,
                 fmt::format("moving off node {}: the node is being drained", node->id));
    ++moving;
  }
  schedule();
  return moving;
}

std::vector<Offer> Controller::offers() const {
  std::map<std::string, Offer> by_type;
  for (const auto& [id, node] : nodes_) {
    if (node.state != NodeState::kReady) continue;
    std::map<std::string, int> free_here;
    if (node.cordoned) continue;
    for (const auto& gpu : node.gpus) {
      if (quarantined(gpu.uuid)) continue;  // out of service: not on offer
      Offer& offer = by_type[gpu.type];
      offer.gpu_type = gpu.type;
      offer.total += 1;
      if (!gpu_holders_.contains(gpu.uuid)) {
        offer.free += 1;
        free_here[gpu.type] += 1;
      }
    }
    for (const auto& [type, count] : free_here) {
      by_type[type].max_free_per_node = std::max(by_type[type].max_free_per_node, count);
    }
  }
  std::vector<Offer> out;
  for (auto& [type, offer] : by_type) {
    offer.price_per_gpu_hour = prices_.on_demand_price(type, now());
    out.push_back(std::move(offer));
  }
  return out;
}

// --- Time ---------------------------------------------------------------------------------------

void Controller::mark_node_down(Node& node) {
  node.state = NodeState::kDown;
  touch_node(node, /*desired_set_changed=*/false);
  update_schedulable(node);
  record_event("", node.id, model::event_kind::kNodeDown,
               fmt::format("no report since {}", format_rfc3339(node.last_heartbeat)));
  const std::set<std::string> on_node = instances_on_node_[node.id];  // end_run edits it
  for (const auto& id : on_node) {
    Instance& instance = instances_.at(id);
    if (instance.state == InstanceState::kRunning || instance.state == InstanceState::kStopping) {
      meter(instance, node.last_heartbeat);
    }
    if (instance.state == InstanceState::kRunning) {
      record_downtime_start(instance, node.last_heartbeat, "node_down");
    }
  }
  move_off_failure({node, "", fmt::format("node {} stopped reporting", node.name)}, on_node);
}

void Controller::move_off_failure(const Failure& failure, const std::set<std::string>& affected) {
  const Node& node = failure.node;
  const auto hit = [&](const Instance& instance) {
    return instance.node_id == node.id &&
           (failure.gpu_uuid.empty() || std::find(instance.gpus.begin(), instance.gpus.end(),
                                                  failure.gpu_uuid) != instance.gpus.end());
  };
  const std::string why = fmt::format("moving: {}", failure.what);
  for (const auto& id : affected) {
    Instance& instance = instances_.at(id);
    if (!hit(instance)) continue;  // a sibling's move below already took it
    if (instance.state == InstanceState::kStopping) {
      // It was asked to stop and cannot confirm: it ends now (billing ended at the last report),
      // and if the node comes back its agent stops what is no longer desired.
      end_run(instance, std::nullopt, "");
      continue;
    }
    if (instance.state != InstanceState::kStarting && instance.state != InstanceState::kRunning) {
      continue;
    }
    if (instance.spec.restart_policy == model::RestartPolicy::kNever) {
      // A down node may come back with the work still running: it waits. A quarantined GPU stays
      // out of service until an operator checks it: the work on it is stopped, not restarted.
      if (!failure.gpu_uuid.empty())
        request_stop(instance, fmt::format("stopped: {}", failure.what));
      continue;
    }
    // A gang without one of its ranks cannot go on: the whole task moves.
    std::vector<Instance*> moving{&instance};
    if (model::Job* job = job_of(instance)) {
      moving.clear();
      for (const auto& member_id : job->tasks.at(static_cast<size_t>(instance.job_task)).members) {
        Instance& member = instances_.at(member_id);
        if (member.state == InstanceState::kStarting || member.state == InstanceState::kRunning) {
          moving.push_back(&member);
        }
      }
    }
    for (Instance* member : moving) {
      record_event(member->tenant_id, member->id, model::event_kind::kInstanceMoved,
                   hit(*member)
                       ? fmt::format("{}; placing it again elsewhere", failure.what)
                       : fmt::format("its task's gang lost a member ({}); the task moves as a "
                                     "whole",
                                     failure.what));
      member->requeue_requested = true;
      // On the failed node or GPU this ends the run at once; elsewhere, once its agent confirms.
      request_stop(*member, why);
    }
  }
}

void Controller::enforce_balances() {
  std::set<std::string> overdrawn;
  for (const auto& [id, tenant] : tenants_) {
    if (guard_balance(id)) overdrawn.insert(id);
  }
  if (overdrawn.empty()) return;
  for (auto& [id, instance] : instances_) {
    if (!overdrawn.contains(instance.tenant_id)) continue;
    if (instance.state == InstanceState::kStarting || instance.state == InstanceState::kRunning) {
      request_stop(instance, "stopped: the balance is exhausted");
      record_event(instance.tenant_id, instance.id, model::event_kind::kInstanceStoppedForBalance,
                   "stopped: the balance is exhausted (the disk is kept)");
    } else if (instance.state == InstanceState::kPending) {
      withdraw(instance, "stopped: the balance is exhausted");
    }
  }
}

void Controller::forgive_silence_until_now() { silence_counted_from_ = now(); }

void Controller::tick() {
  const Timestamp t = now();
  for (Node* node : node_order()) {
    const Timestamp silent_since = std::max(node->last_heartbeat, silence_counted_from_);
    if (node->state == NodeState::kReady && t - silent_since > options_.heartbeat_timeout) {
      mark_node_down(*node);
    }
  }
  if (update_spot_market()) interrupt_spot_over_max_price();
  if (t - last_billing_ >= options_.billing_interval) {
    last_billing_ = t;
    meter_runs(t);
    // Storage is billed for the volume's whole life, used or not, node up or not.
    for (auto& [id, volume] : volumes_) {
      if (volume.state == model::VolumeState::kAvailable) meter_volume(volume, t);
    }
    meter_stopped_disks(t);
    expire_packages();
    for (auto& [id, reservation] : reservations_) settle_reservation(reservation);
    settle_sla_credits();
    enforce_balances();
  }
  advance_reservations();
  // Time alone changes what a pass may do (reservation windows, backfill estimates).
  queue_changed_ = true;
  while (!deadlines_.empty() && deadlines_.begin()->first <= t) {
    const auto [deadline, id] = *deadlines_.begin();
    deadlines_.erase(deadlines_.begin());
    Instance& instance = instances_.at(id);
    if (instance.state == InstanceState::kRunning) {
      request_stop(instance,
                   fmt::format("reached its max_runtime_s of {} s", *instance.spec.max_runtime_s));
    }
  }
  schedule();
  monitor_tick();
}

}  // namespace gpurent::controller
