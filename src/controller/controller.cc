#include "controller/controller.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "model/gpu_catalog.h"
#include "sched/placement.h"

namespace gpurent::controller {

using model::Instance;
using model::InstanceState;
using model::Node;
using model::NodeState;
using model::Principal;

namespace {

Error forbidden(std::string_view what) {
  return {ErrorKind::kPermissionDenied, "forbidden", fmt::format("only operators may {}", what)};
}

Error invalid_state(const Instance& instance, std::string_view action) {
  return Error::conflict("invalid_state",
                         fmt::format("cannot {} instance {} while it is {}", action, instance.id,
                                     model::to_string(instance.state)));
}

std::string usage_id(const Instance& instance) {
  return fmt::format("{}/{}", instance.id, instance.run);
}

bool visible_to(const Principal& caller, std::string_view tenant_id) {
  return caller.is_operator() || caller.tenant_id == tenant_id;
}

}  // namespace

Controller::Controller(const Clock& clock, ControllerOptions options)
    : clock_(clock),
      options_(std::move(options)),
      rng_(options_.seed),
      prices_(options_.currency),
      last_billing_(clock.now()) {}

// --- Persistence ------------------------------------------------------------------------------

Status Controller::restore(Snapshot snapshot) {
  const Timestamp start = now();
  for (auto& tenant : snapshot.tenants) tenants_.emplace(tenant.id, std::move(tenant));
  for (auto& key : snapshot.api_keys) {
    key_by_hash_.emplace(key.secret_hash, key.id);
    api_keys_.emplace(key.id, std::move(key));
  }
  for (auto& token : snapshot.join_tokens) {
    join_token_by_hash_.emplace(token.secret_hash, token.id);
    join_tokens_.emplace(token.id, std::move(token));
  }
  for (auto& node : snapshot.nodes) {
    // Heartbeats are not persisted; every node gets a full timeout to report after a restart.
    node.last_heartbeat = start;
    // An agent may have seen generations that were served but never committed before a crash.
    // Jumping past them keeps "generation G" meaning one desired set, so the agent converges to
    // the restored state and its applied generation never vouches for a set it did not see.
    node.generation += kGenerationJumpOnRestore;
    changes_.nodes.push_back(node);
    node_by_credential_.emplace(node.credential_hash, node.id);
    nodes_.emplace(node.id, std::move(node));
  }
  std::sort(snapshot.instances.begin(), snapshot.instances.end(),
            [](const Instance& a, const Instance& b) {
              return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
            });
  for (auto& instance : snapshot.instances) {
    instance_position_[instance.id] = instance_order_.size();
    instance_order_.push_back(instance.id);
    if (instance.state == InstanceState::kPending) enqueue(instance);
    if (model::holds_gpus(instance.state)) {
      for (const auto& gpu : instance.gpus) gpu_holder_[gpu] = instance.id;
      instances_on_node_[instance.node_id].insert(instance.id);
    }
    instances_.emplace(instance.id, std::move(instance));
  }
  for (auto& usage : snapshot.usage) {
    usage_by_tenant_[usage.tenant_id].push_back(usage.id);
    usage_.emplace(usage.id, std::move(usage));
  }
  for (auto& record : snapshot.idempotency) {
    idempotency_.emplace(std::make_pair(record.tenant_id, record.key), std::move(record));
  }
  for (const auto& transfer : snapshot.transfers) {
    if (transfer.kind == model::TransferKind::kTopup) topups_.emplace(transfer.id, transfer);
    if (auto posted = ledger_.post(transfer); !posted) return posted;
  }
  if (ledger_.total() != 0) return fail(Error::internal("restored ledger does not sum to zero"));
  return {};
}

ChangeSet Controller::take_changes() { return std::exchange(changes_, ChangeSet{}); }

void Controller::touch(Instance& instance) {
  ++instance.revision;
  changes_.instances.push_back(instance);
  changes_.changed_instances.insert(instance.id);
}

void Controller::touch_node(Node& node, bool desired_set_changed) {
  if (desired_set_changed) {
    ++node.generation;
    changes_.woken_nodes.insert(node.id);
  }
  changes_.nodes.push_back(node);
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

const std::vector<model::Transfer>& Controller::transfers(std::string_view tenant_id) const {
  return ledger_.transfers_of(tenant_id);
}

// --- Instances ----------------------------------------------------------------------------------

Status Controller::check_funds(std::string_view tenant_id, const model::InstanceSpec& spec) const {
  const auto price = prices_.on_demand_price(spec.gpu_type);
  if (!price) {
    return fail(Error::unprocessable("gpu_type_not_priced",
                                     fmt::format("GPU type '{}' has no price yet", spec.gpu_type)));
  }
  const Micros needed =
      charge_for_seconds(*price, int64_t{spec.gpu_count} * 1000, kMinimumPrepaidSeconds);
  const Micros balance = ledger_.balance(model::tenant_cash_account(tenant_id));
  if (balance <= 0 || balance < needed) {
    return fail(Error{
        ErrorKind::kPaymentRequired, "insufficient_balance",
        fmt::format("balance {} does not cover {} s of {} x {} ({} needed)", format_micros(balance),
                    kMinimumPrepaidSeconds, spec.gpu_count, spec.gpu_type, format_micros(needed))});
  }
  return {};
}

Result<CreatedInstance> Controller::create_instance(const Principal& caller,
                                                    model::InstanceSpec spec,
                                                    std::optional<std::string> idempotency_key,
                                                    std::string fingerprint) {
  if (idempotency_key) {
    const auto it = idempotency_.find({caller.tenant_id, *idempotency_key});
    if (it != idempotency_.end()) {
      if (it->second.fingerprint != fingerprint) {
        return fail(Error::conflict("idempotency_key_reused",
                                    "this Idempotency-Key was used with a different request"));
      }
      return CreatedInstance{instances_.at(it->second.object_id), true};
    }
  }
  if (!model::find_gpu_type(spec.gpu_type)) {
    return fail(Error::unprocessable(
        "unknown_gpu_type",
        fmt::format("unknown GPU type '{}'; see GET /v1/gpu-types", spec.gpu_type)));
  }
  if (spec.gpu_count < 1 || spec.gpu_count > kMaxGpusPerInstance) {
    return fail(Error::invalid(
        "invalid_field",
        fmt::format("field 'gpu_count' must be between 1 and {}", kMaxGpusPerInstance)));
  }
  GPURENT_CHECK(check_funds(caller.tenant_id, spec));

  Instance instance;
  instance.id = rng_.id("i-");
  instance.tenant_id = caller.tenant_id;
  if (spec.name.empty()) spec.name = instance.id;
  instance.spec = std::move(spec);
  instance.state = InstanceState::kPending;
  instance.created_at = now();
  instance.reason = "waiting for capacity";

  instance_position_[instance.id] = instance_order_.size();
  instance_order_.push_back(instance.id);
  enqueue(instance);
  const std::string id = instance.id;
  touch(instances_.emplace(id, std::move(instance)).first->second);
  if (idempotency_key) {
    model::IdempotencyRecord record{caller.tenant_id, *idempotency_key, std::move(fingerprint), id,
                                    now()};
    changes_.idempotency.push_back(record);
    idempotency_.emplace(std::make_pair(caller.tenant_id, *idempotency_key), std::move(record));
  }
  schedule();
  return CreatedInstance{instances_.at(id), false};
}

Result<Instance*> Controller::owned_instance(const Principal& caller, std::string_view id) {
  const auto it = instances_.find(id);
  if (it == instances_.end() || !visible_to(caller, it->second.tenant_id)) {
    return fail(Error::not_found("instance", id));
  }
  return &it->second;
}

Result<const Instance*> Controller::instance(const Principal& caller, std::string_view id) const {
  const auto it = instances_.find(id);
  if (it == instances_.end() || !visible_to(caller, it->second.tenant_id)) {
    return fail(Error::not_found("instance", id));
  }
  return &it->second;
}

Result<InstancePage> Controller::list_instances(const Principal& caller,
                                                const InstanceFilter& filter,
                                                std::string_view cursor, size_t limit) const {
  size_t position = 0;
  if (!cursor.empty()) {
    const auto it = instance_position_.find(std::string(cursor));
    // A cursor names an instance; one the caller may not see is as unknown as a made-up one.
    if (it == instance_position_.end() || !instance(caller, cursor)) {
      return fail(Error::invalid("invalid_query", "unknown cursor"));
    }
    position = it->second + 1;
  }
  std::optional<std::string> tenant = caller.is_operator() ? filter.tenant_id : caller.tenant_id;
  InstancePage page;
  for (; position < instance_order_.size(); ++position) {
    const Instance& instance = instances_.at(instance_order_[position]);
    if (tenant && instance.tenant_id != *tenant) continue;
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
  return prices_.on_demand_price(instance.spec.gpu_type);
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
    case InstanceState::kStopped:
    case InstanceState::kFailed:
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
    case InstanceState::kFailed: {
      GPURENT_CHECK(check_funds(instance->tenant_id, instance->spec));
      instance->state = InstanceState::kPending;
      instance->reason = "waiting for capacity";
      instance->exit_code.reset();
      enqueue(*instance);
      touch(*instance);
      schedule();
      break;
    }
    case InstanceState::kPending:
    case InstanceState::kStarting:
    case InstanceState::kRunning:
      break;  // already started
    case InstanceState::kStopping:
    case InstanceState::kTerminated:
      return fail(invalid_state(*instance, "start"));
  }
  return *instance;
}

Result<Instance> Controller::delete_instance(const Principal& caller, std::string_view id) {
  GPURENT_TRY(instance, owned_instance(caller, id));
  switch (instance->state) {
    case InstanceState::kPending:
      dequeue(*instance);
      [[fallthrough]];
    case InstanceState::kStopped:
    case InstanceState::kFailed:
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
  // comes back its agent stops the workload because the desired set no longer holds it.
  if (node.state == NodeState::kDown) end_run(instance, std::nullopt, "");
}

// --- Placement and runs -------------------------------------------------------------------------

void Controller::enqueue(const Instance& instance) {
  PendingQueue& queue = pending_[instance.spec.gpu_type];
  queue.order.emplace(instance.created_at, instance.id);
  queue.gpu_counts.insert(instance.spec.gpu_count);
}

void Controller::dequeue(const Instance& instance) {
  const auto it = pending_.find(instance.spec.gpu_type);
  if (it == pending_.end() || !it->second.order.erase({instance.created_at, instance.id})) return;
  it->second.gpu_counts.erase(it->second.gpu_counts.find(instance.spec.gpu_count));
  if (it->second.order.empty()) pending_.erase(it);
}

void Controller::schedule() {
  if (pending_.empty()) return;
  // The capacity view is rebuilt per call; the scheduler issue replaces this with indexes that
  // avoid scanning every node.
  std::map<std::string_view, std::vector<sched::NodeCapacity>> capacity;  // by GPU type
  for (const auto& [node_id, node] : nodes_) {
    if (node.state != NodeState::kReady) continue;
    for (const auto& gpu : node.gpus) {
      if (gpu_holder_.contains(gpu.uuid) || !pending_.contains(gpu.type)) continue;
      auto& of_type = capacity[gpu.type];
      if (of_type.empty() || of_type.back().node_id != node_id)
        of_type.push_back({node_id, gpu.type, {}});
      of_type.back().free.push_back({gpu.uuid, gpu.index});
    }
  }
  for (auto& [type, view] : capacity) {
    // The largest request that fits anywhere now: larger ones are skipped without a search, and
    // a queue whose smallest request is larger is not walked at all.
    const auto largest_fit = [&view] {
      size_t largest = 0;
      for (const auto& node_capacity : view) largest = std::max(largest, node_capacity.free.size());
      return static_cast<int>(largest);
    };
    int fit = largest_fit();
    std::vector<Instance*> placed_now;
    const PendingQueue& queue = pending_.find(type)->second;
    if (fit < *queue.gpu_counts.begin()) continue;
    for (const auto& [created, id] : queue.order) {
      if (fit == 0) break;
      Instance& instance = instances_.at(id);
      if (instance.spec.gpu_count > fit) continue;
      auto placement = sched::best_fit(view, {type, instance.spec.gpu_count});
      if (!placement) continue;
      // Take the chosen GPUs out of the view before placing the next request.
      for (auto& node_capacity : view) {
        if (node_capacity.node_id != placement->node_id) continue;
        std::erase_if(node_capacity.free, [&](const sched::FreeGpu& gpu) {
          return std::find(placement->gpus.begin(), placement->gpus.end(), gpu.uuid) !=
                 placement->gpus.end();
        });
      }
      fit = largest_fit();
      instance.node_id = placement->node_id;
      instance.gpus = std::move(placement->gpus);
      placed_now.push_back(&instance);
    }
    for (Instance* instance : placed_now) {
      dequeue(*instance);
      place(*instance, nodes_.at(instance->node_id), std::move(instance->gpus));
    }
  }
}

void Controller::place(Instance& instance, Node& node, std::vector<std::string> gpus) {
  instance.node_id = node.id;
  instance.gpus = std::move(gpus);
  for (const auto& gpu : instance.gpus) gpu_holder_[gpu] = instance.id;
  instances_on_node_[node.id].insert(instance.id);
  instance.run += 1;
  instance.state = InstanceState::kStarting;
  instance.reason = "";
  instance.started_at.reset();
  instance.ended_at.reset();
  touch_node(node, /*desired_set_changed=*/true);
  instance.placed_generation = node.generation;
  touch(instance);
  spdlog::info("placed instance={} run={} node={} gpus={}", instance.id, instance.run, node.id,
               fmt::join(instance.gpus, ","));
}

model::UsageRecord* Controller::current_usage(const Instance& instance) {
  const auto it = usage_.find(usage_id(instance));
  return it == usage_.end() ? nullptr : &it->second;
}

void Controller::begin_run(Instance& instance) {
  // The first report of the process opens its metering, also when a stop was asked for before
  // the process came up: it runs (and is billed) until the agent confirms it is gone.
  if (instance.started_at) return;
  if (instance.state == InstanceState::kStarting) instance.state = InstanceState::kRunning;
  instance.started_at = now();
  touch(instance);
  model::UsageRecord usage{
      .id = usage_id(instance),
      .tenant_id = instance.tenant_id,
      .instance_id = instance.id,
      .run = instance.run,
      .gpu_type = instance.spec.gpu_type,
      .gpu_count = instance.spec.gpu_count,
      .price_per_gpu_hour = prices_.on_demand_price(instance.spec.gpu_type).value_or(0),
      .started_at = now(),
      .ended_at = std::nullopt,
      .metered_until = now(),
  };
  usage_by_tenant_[usage.tenant_id].push_back(usage.id);
  changes_.usage.push_back(usage);
  usage_.emplace(usage.id, std::move(usage));
  spdlog::info("running instance={} run={}", instance.id, instance.run);
}

void Controller::meter(Instance& instance, Timestamp until) {
  model::UsageRecord* usage = current_usage(instance);
  if (!usage || usage->ended_at) return;
  const auto transfer = billing::meter_run(*usage, until);
  changes_.usage.push_back(*usage);
  if (!transfer) return;
  if (auto posted = post(*transfer); !posted) {
    spdlog::error("metering instance={} failed: {}", instance.id, posted.error().message);
  }
}

void Controller::end_run(Instance& instance, std::optional<int> exit_code, std::string reason) {
  Node& node = nodes_.at(instance.node_id);
  if (instance.state == InstanceState::kRunning || instance.state == InstanceState::kStopping) {
    // Billing ends at the last moment the node is known to have been up.
    meter(instance, node.state == NodeState::kReady ? now() : node.last_heartbeat);
    if (auto* usage = current_usage(instance); usage && !usage->ended_at) {
      usage->ended_at = usage->metered_until;
      changes_.usage.push_back(*usage);
    }
  }
  const bool asked_to_stop = instance.state == InstanceState::kStopping;
  if (instance.terminate_requested) {
    instance.state = InstanceState::kTerminated;
  } else if (asked_to_stop || exit_code == 0) {
    instance.state = InstanceState::kStopped;
  } else {
    instance.state = InstanceState::kFailed;
  }
  if (!asked_to_stop) instance.reason = std::move(reason);
  instance.exit_code = exit_code;
  instance.ended_at = now();
  for (const auto& gpu : instance.gpus) {
    if (const auto holder = gpu_holder_.find(gpu);
        holder != gpu_holder_.end() && holder->second == instance.id) {
      gpu_holder_.erase(holder);
    }
  }
  instances_on_node_[node.id].erase(instance.id);
  instance.gpus.clear();
  touch(instance);
  touch_node(node, /*desired_set_changed=*/true);
  spdlog::info("ended instance={} run={} state={} exit_code={}", instance.id, instance.run,
               model::to_string(instance.state), exit_code ? std::to_string(*exit_code) : "none");
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
  if (registration.gpus.size() > 64) {
    return fail(Error::invalid("invalid_field", "a node may have at most 64 GPUs"));
  }
  std::set<std::string> uuids;
  for (const auto& gpu : registration.gpus) {
    if (gpu.uuid.empty() || gpu.uuid.size() > 128 || gpu.type.empty() ||
        !uuids.insert(gpu.uuid).second) {
      return fail(Error::invalid("invalid_field", "every GPU needs a unique uuid and a type"));
    }
  }
  for (auto& [id, known] : nodes_) {
    const bool overlaps =
        std::any_of(known.gpus.begin(), known.gpus.end(),
                    [&](const model::Gpu& gpu) { return uuids.contains(gpu.uuid); });
    if (!overlaps) continue;
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
    touch_node(known, /*desired_set_changed=*/false);
    spdlog::info("re-registered node={}", id);
    return model::RegistrationResult{id, std::move(credential)};
  }
  Node node;
  node.id = rng_.id("n-");
  node.name = std::move(registration.name);
  node.gpus = std::move(registration.gpus);
  node.cpu_count = registration.cpu_count;
  node.memory_mb = registration.memory_mb;
  node.simulated = registration.simulated;
  node.agent_version = std::move(registration.agent_version);
  node.state = NodeState::kReady;
  node.registered_at = now();
  node.last_heartbeat = now();
  node.credential_hash = std::move(credential_hash);
  node_by_credential_.emplace(node.credential_hash, node.id);
  const std::string id = node.id;
  touch_node(nodes_.emplace(id, std::move(node)).first->second, /*desired_set_changed=*/false);
  spdlog::info("registered node={} gpus={}", id, nodes_.at(id).gpus.size());
  schedule();
  return model::RegistrationResult{id, std::move(credential)};
}

Result<model::DesiredState> Controller::desired_state(std::string_view node_id) const {
  const auto node = nodes_.find(node_id);
  if (node == nodes_.end()) return fail(Error::not_found("node", node_id));
  model::DesiredState desired{node->second.id, node->second.generation, {}};
  if (const auto it = instances_on_node_.find(node->second.id); it != instances_on_node_.end()) {
    for (const auto& id : it->second) {
      const Instance& instance = instances_.at(id);
      desired.workloads.push_back({.instance_id = instance.id,
                                   .run = instance.run,
                                   .should_run = instance.state != InstanceState::kStopping,
                                   .command = instance.spec.command,
                                   .env = instance.spec.env,
                                   .gpus = instance.gpus,
                                   .cpu = instance.spec.cpu,
                                   .memory_gb = instance.spec.memory_gb});
    }
  }
  return desired;
}

Result<int64_t> Controller::apply_report(std::string_view node_id,
                                         const model::NodeReport& report) {
  const auto node_it = nodes_.find(node_id);
  if (node_it == nodes_.end()) return fail(Error::not_found("node", node_id));
  Node& node = node_it->second;
  node.last_heartbeat = now();
  if (node.state == NodeState::kDown) {
    node.state = NodeState::kReady;
    touch_node(node, /*desired_set_changed=*/false);
    spdlog::info("node={} is back", node.id);
    // The time it was unreachable is not billed.
    for (const auto& id : instances_on_node_[node.id]) {
      if (auto* usage = current_usage(instances_.at(id)); usage && !usage->ended_at) {
        usage->metered_until = std::max(usage->metered_until, now());
        changes_.usage.push_back(*usage);
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
        end_run(instance, std::nullopt,
                instance.state == InstanceState::kStopping ? "" : "the agent lost the workload");
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

std::vector<const Node*> Controller::nodes(const Principal& caller) const {
  std::vector<const Node*> out;
  if (!caller.is_operator()) return out;
  for (const auto& [id, node] : nodes_) out.push_back(&node);
  return out;
}

Result<const Node*> Controller::node(const Principal& caller, std::string_view id) const {
  const auto it = nodes_.find(id);
  if (!caller.is_operator() || it == nodes_.end()) return fail(Error::not_found("node", id));
  return &it->second;
}

std::optional<std::string> Controller::gpu_holder(std::string_view uuid) const {
  const auto it = gpu_holder_.find(std::string(uuid));
  if (it == gpu_holder_.end()) return std::nullopt;
  return it->second;
}

std::vector<Offer> Controller::offers() const {
  std::map<std::string, Offer> by_type;
  for (const auto& [id, node] : nodes_) {
    if (node.state != NodeState::kReady) continue;
    std::map<std::string, int> free_here;
    for (const auto& gpu : node.gpus) {
      Offer& offer = by_type[gpu.type];
      offer.gpu_type = gpu.type;
      offer.total += 1;
      if (!gpu_holder_.contains(gpu.uuid)) {
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
    offer.price_per_gpu_hour = prices_.on_demand_price(type);
    out.push_back(std::move(offer));
  }
  return out;
}

// --- Time ---------------------------------------------------------------------------------------

void Controller::mark_node_down(Node& node) {
  node.state = NodeState::kDown;
  touch_node(node, /*desired_set_changed=*/false);
  spdlog::warn("node={} missed heartbeats since {}; marked down", node.id,
               format_rfc3339(node.last_heartbeat));
  for (const auto& id : instances_on_node_[node.id]) {
    Instance& instance = instances_.at(id);
    if (instance.state == InstanceState::kRunning || instance.state == InstanceState::kStopping) {
      meter(instance, node.last_heartbeat);
    }
  }
}

void Controller::enforce_balances() {
  std::set<std::string> overdrawn;
  for (const auto& [id, tenant] : tenants_) {
    if (ledger_.balance(model::tenant_cash_account(id)) < 0) overdrawn.insert(id);
  }
  if (overdrawn.empty()) return;
  for (auto& [id, instance] : instances_) {
    if (!overdrawn.contains(instance.tenant_id)) continue;
    if (instance.state == InstanceState::kStarting || instance.state == InstanceState::kRunning) {
      request_stop(instance, "stopped: the balance is exhausted");
    } else if (instance.state == InstanceState::kPending) {
      withdraw(instance, "stopped: the balance is exhausted");
    }
  }
}

void Controller::tick() {
  const Timestamp t = now();
  for (auto& [id, node] : nodes_) {
    if (node.state == NodeState::kReady && t - node.last_heartbeat > options_.heartbeat_timeout) {
      mark_node_down(node);
    }
  }
  if (t - last_billing_ >= options_.billing_interval) {
    last_billing_ = t;
    for (auto& [id, instance] : instances_) {
      if (instance.state != InstanceState::kRunning && instance.state != InstanceState::kStopping) {
        continue;
      }
      // Up to the node's last good report, never past it: a node that then goes silent is not
      // billed for the silence.
      const Node& node = nodes_.at(instance.node_id);
      if (node.state == NodeState::kReady) meter(instance, std::min(t, node.last_heartbeat));
    }
    enforce_balances();
  }
  schedule();
}

}  // namespace gpurent::controller
