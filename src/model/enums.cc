// String forms of the model's enums: these spellings are part of the REST API and the store.
#include <algorithm>
#include <array>
#include <charconv>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <sodium.h>

#include "model/instance.h"
#include "model/job.h"
#include "model/ledger.h"
#include "model/node.h"
#include "model/template.h"
#include "model/tenant.h"

namespace gpurent::model {
namespace {

template <class Enum, size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& names,
                         Enum value) {
  for (const auto& [e, name] : names) {
    if (e == value) return name;
  }
  return "unknown";
}

template <class Enum, size_t N>
bool value_of(const std::array<std::pair<Enum, std::string_view>, N>& names, std::string_view text,
              Enum* out) {
  for (const auto& [e, name] : names) {
    if (name == text) {
      *out = e;
      return true;
    }
  }
  return false;
}

constexpr std::array<std::pair<NodeState, std::string_view>, 2> kNodeStates{{
    {NodeState::kReady, "ready"},
    {NodeState::kDown, "down"},
}};

constexpr std::array<std::pair<InstanceState, std::string_view>, 8> kInstanceStates{{
    {InstanceState::kPending, "pending"},
    {InstanceState::kStarting, "starting"},
    {InstanceState::kRunning, "running"},
    {InstanceState::kStopping, "stopping"},
    {InstanceState::kStopped, "stopped"},
    {InstanceState::kFailed, "failed"},
    {InstanceState::kPreempted, "preempted"},
    {InstanceState::kTerminated, "terminated"},
}};

constexpr std::array<std::pair<PricingModel, std::string_view>, 3> kPricingModels{{
    {PricingModel::kOnDemand, "on_demand"},
    {PricingModel::kSpot, "spot"},
    {PricingModel::kReserved, "reserved"},
}};

constexpr std::array<std::pair<RestartPolicy, std::string_view>, 2> kRestartPolicies{{
    {RestartPolicy::kOnNodeFailure, "on_node_failure"},
    {RestartPolicy::kNever, "never"},
}};

constexpr std::array<std::pair<RuntimeChoice, std::string_view>, 4> kRuntimeChoices{{
    {RuntimeChoice::kAuto, "auto"},
    {RuntimeChoice::kProcess, "process"},
    {RuntimeChoice::kContainer, "container"},
    {RuntimeChoice::kVm, "vm"},
}};

constexpr std::array<std::pair<Role, std::string_view>, 5> kRoles{{
    {Role::kAdmin, "admin"},
    {Role::kOperator, "operator"},
    {Role::kTenantAdmin, "tenant-admin"},
    {Role::kTenantMember, "tenant-member"},
    {Role::kReadOnly, "read-only"},
}};

constexpr std::array<std::pair<TransferKind, std::string_view>, 6> kTransferKinds{{
    {TransferKind::kTopup, "topup"},
    {TransferKind::kUsage, "usage"},
    {TransferKind::kCredit, "credit"},
    {TransferKind::kPurchase, "purchase"},
    {TransferKind::kRecognition, "recognition"},
    {TransferKind::kRefund, "refund"},
}};

constexpr std::array<std::pair<UsageKind, std::string_view>, 2> kUsageKinds{{
    {UsageKind::kRun, "run"},
    {UsageKind::kStoppedDisk, "stopped_disk"},
}};

constexpr std::array<std::pair<JobState, std::string_view>, 6> kJobStates{{
    {JobState::kQueued, "queued"},
    {JobState::kRunning, "running"},
    {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kPreempted, "preempted"},
}};

constexpr std::array<std::pair<ReservationState, std::string_view>, 4> kReservationStates{{
    {ReservationState::kBooked, "booked"},
    {ReservationState::kActive, "active"},
    {ReservationState::kEnded, "ended"},
    {ReservationState::kCancelled, "cancelled"},
}};

constexpr std::array<std::pair<ReservationPayment, std::string_view>, 2> kReservationPayments{{
    {ReservationPayment::kUpfront, "upfront"},
    {ReservationPayment::kMonthly, "monthly"},
}};

}  // namespace

std::string_view to_string(JobState s) { return name_of(kJobStates, s); }
bool parse_job_state(std::string_view t, JobState* out) { return value_of(kJobStates, t, out); }
bool is_final(JobState s) { return s != JobState::kQueued && s != JobState::kRunning; }
std::string_view to_string(ReservationState s) { return name_of(kReservationStates, s); }
bool parse_reservation_state(std::string_view t, ReservationState* out) {
  return value_of(kReservationStates, t, out);
}
std::string_view to_string(ReservationPayment p) { return name_of(kReservationPayments, p); }
bool parse_reservation_payment(std::string_view t, ReservationPayment* out) {
  return value_of(kReservationPayments, t, out);
}

JobState derive_job_state(const std::vector<JobTask>& tasks) {
  bool unfinished = false, started = false, cancelled = false, failed = false, preempted = false;
  for (const auto& task : tasks) {
    unfinished |= !is_final(task.state);
    started |= task.state == JobState::kRunning || task.attempts > 0;
    cancelled |= task.state == JobState::kCancelled;
    failed |= task.state == JobState::kFailed;
    preempted |= task.state == JobState::kPreempted;
  }
  if (unfinished) return started ? JobState::kRunning : JobState::kQueued;
  if (cancelled) return JobState::kCancelled;
  if (failed) return JobState::kFailed;
  if (preempted) return JobState::kPreempted;
  return JobState::kSucceeded;
}

std::string_view to_string(NodeState s) { return name_of(kNodeStates, s); }
bool parse_node_state(std::string_view t, NodeState* out) { return value_of(kNodeStates, t, out); }
std::string_view to_string(InstanceState s) { return name_of(kInstanceStates, s); }
bool parse_instance_state(std::string_view t, InstanceState* out) {
  return value_of(kInstanceStates, t, out);
}
std::string_view to_string(PricingModel p) { return name_of(kPricingModels, p); }
bool parse_pricing_model(std::string_view t, PricingModel* out) {
  // "on-demand" as well: simulate's CSV files said it so before the API's spelling was theirs.
  if (t == "on-demand") {
    *out = PricingModel::kOnDemand;
    return true;
  }
  return value_of(kPricingModels, t, out);
}
std::string_view to_string(RestartPolicy p) { return name_of(kRestartPolicies, p); }
bool parse_restart_policy(std::string_view t, RestartPolicy* out) {
  return value_of(kRestartPolicies, t, out);
}
RestartPolicy default_restart_policy(PricingModel pricing) {
  return pricing == PricingModel::kSpot ? RestartPolicy::kNever : RestartPolicy::kOnNodeFailure;
}

int scheduling_class(PricingModel p) {
  switch (p) {
    case PricingModel::kReserved:
      return 2;
    case PricingModel::kOnDemand:
      return 1;
    case PricingModel::kSpot:
      return 0;
  }
  return 0;
}

std::string_view runtime_of(const InstanceSpec& spec) {
  if (spec.vm) return to_string(RuntimeChoice::kVm);
  if (spec.image.empty()) return to_string(RuntimeChoice::kProcess);
  return to_string(spec.process_command.empty() ? RuntimeChoice::kContainer : RuntimeChoice::kAuto);
}

std::string requested_gpu_type(const InstanceSpec& spec) {
  if (spec.gpu_types.size() == 1) return spec.gpu_types.front();
  if (spec.gpu_types.empty()) return "any";
  std::string joined;
  for (const auto& type : spec.gpu_types) joined += (joined.empty() ? "" : "|") + type;
  return joined;
}
std::string_view to_string(Role r) { return name_of(kRoles, r); }
bool valid_service_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxServiceNameLength || name[0] < 'a' || name[0] > 'z') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool valid_ssh_public_key(std::string_view key) {
  if (key.empty() || key.size() > kMaxSshKeyLength) return false;
  if (!std::all_of(key.begin(), key.end(), [](char c) { return c >= ' ' && c <= '~'; })) {
    return false;
  }
  static constexpr std::array<std::string_view, 7> kTypes = {"ssh-ed25519",
                                                             "ssh-rsa",
                                                             "ecdsa-sha2-nistp256",
                                                             "ecdsa-sha2-nistp384",
                                                             "ecdsa-sha2-nistp521",
                                                             "sk-ssh-ed25519@openssh.com",
                                                             "sk-ecdsa-sha2-nistp256@openssh.com"};
  const size_t space = key.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view type = key.substr(0, space);
  if (std::ranges::find(kTypes, type) == kTypes.end()) return false;
  const std::string_view rest = key.substr(space + 1);
  const std::string_view blob = rest.substr(0, rest.find(' '));
  // The blob is base64 of the key, whose first field is its type again (a length, the name).
  std::vector<unsigned char> bytes(blob.size());
  size_t length = 0;
  if (blob.empty() ||
      sodium_base642bin(bytes.data(), bytes.size(), blob.data(), blob.size(), nullptr, &length,
                        nullptr, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      length < 4 + type.size()) {
    return false;
  }
  const size_t named = (size_t{bytes[0]} << 24) | (size_t{bytes[1]} << 16) |
                       (size_t{bytes[2]} << 8) | size_t{bytes[3]};
  return named == type.size() &&
         std::string_view(reinterpret_cast<const char*>(bytes.data()) + 4, named) == type;
}

bool parse_role(std::string_view t, Role* out) {
  if (t == "tenant") {  // the one tenant role there was before tenant-member and read-only
    *out = Role::kTenantAdmin;
    return true;
  }
  return value_of(kRoles, t, out);
}

int rank(Role role) {
  switch (role) {
    case Role::kAdmin:
      return 4;
    case Role::kOperator:
      return 3;
    case Role::kTenantAdmin:
      return 2;
    case Role::kTenantMember:
      return 1;
    case Role::kReadOnly:
      return 0;
  }
  return 0;
}

std::string_view to_string(RuntimeChoice c) { return name_of(kRuntimeChoices, c); }
bool parse_runtime_choice(std::string_view t, RuntimeChoice* out) {
  return value_of(kRuntimeChoices, t, out);
}
std::string_view to_string(TransferKind k) { return name_of(kTransferKinds, k); }
bool parse_transfer_kind(std::string_view t, TransferKind* out) {
  return value_of(kTransferKinds, t, out);
}

std::string_view to_string(UsageKind k) { return name_of(kUsageKinds, k); }
bool parse_usage_kind(std::string_view t, UsageKind* out) { return value_of(kUsageKinds, t, out); }

bool holds_gpus(InstanceState state) {
  return state == InstanceState::kStarting || state == InstanceState::kRunning ||
         state == InstanceState::kStopping;
}

std::string tenant_cash_account(std::string_view tenant_id) {
  std::string out;
  append_tenant_cash_account(out, tenant_id);
  return out;
}

void append_tenant_cash_account(std::string& out, std::string_view tenant_id) {
  out.append("tenant:").append(tenant_id).append(":cash");
}

void append_usage_transfer_id(std::string& out, UsageKind kind, std::string_view instance_id,
                              int64_t run, int64_t billed_seconds) {
  // std::to_chars, not fmt: the billing tick formats one per running workload, and parsing the
  // format string was most of the cost (bench/RESULTS.md, "Billing: one metering tick").
  const auto append_number = [&out](int64_t n) {
    char digits[20];  // an int64 with its sign
    out.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
  };
  out.append(kind == UsageKind::kRun ? "usage:" : "storage:").append(instance_id).push_back(':');
  append_number(run);
  out.push_back(':');
  append_number(billed_seconds);
}

}  // namespace gpurent::model
