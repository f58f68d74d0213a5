#include "controller/change_set.h"

#include "billing/billing.h"

namespace gpurent::controller {
namespace {

template <class T>
void append(std::vector<T>& to, std::vector<T>& from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

void ChangeSet::merge(ChangeSet&& other) {
  // The other batch's packed rows come after everything of this one: their positions and text
  // offsets move by what this batch holds.
  for (auto& charge : other.usage_charges) {
    charge.position += transfers.size();
    charge.text += packed_text.size();
  }
  for (auto& row : other.metered_usage) {
    row.position += usage.size();
    row.text += packed_text.size();
  }
  append(usage_charges, other.usage_charges);
  append(metered_usage, other.metered_usage);
  packed_text.append(other.packed_text);
  append(tenants, other.tenants);
  append(api_keys, other.api_keys);
  append(join_tokens, other.join_tokens);
  append(nodes, other.nodes);
  append(instances, other.instances);
  append(instance_rows, other.instance_rows);
  append(jobs, other.jobs);
  append(job_tasks, other.job_tasks);
  append(reservations, other.reservations);
  append(quotas, other.quotas);
  append(template_changes, other.template_changes);
  append(usage, other.usage);
  append(volumes, other.volumes);
  append(idempotency, other.idempotency);
  append(transfers, other.transfers);
  append(events, other.events);
  append(audit, other.audit);
  append(price_versions, other.price_versions);
  append(spot_prices, other.spot_prices);
  append(package_products, other.package_products);
  append(packages, other.packages);
  append(balance_settings, other.balance_settings);
  append(downtime, other.downtime);
  append(gpu_quarantines, other.gpu_quarantines);
  append(gpu_benchmarks, other.gpu_benchmarks);
  woken_nodes.merge(other.woken_nodes);
  append(changed_instances, other.changed_instances);
  monitoring_changes.merge(std::move(other.monitoring_changes));
}

void ChangeSet::add_usage_charge(const model::UsageRecord& usage, Micros amount) {
  usage_charges.push_back({.position = transfers.size(),
                           .text = packed_text.size(),
                           .instance_size = static_cast<uint32_t>(usage.instance_id.size()),
                           .tenant_size = static_cast<uint32_t>(usage.tenant_id.size()),
                           .kind = usage.kind,
                           .run = usage.run,
                           .billed_seconds = usage.billed_seconds,
                           .at = usage.metered_until,
                           .amount = amount});
  packed_text.append(usage.instance_id).append(usage.tenant_id);
}

void ChangeSet::add_metered_usage(const model::UsageRecord& usage) {
  metered_usage.push_back({.position = this->usage.size(),
                           .text = packed_text.size(),
                           .id_size = static_cast<uint32_t>(usage.id.size()),
                           .price_per_gpu_hour = usage.price_per_gpu_hour,
                           .metered_until = usage.metered_until,
                           .billed_seconds = usage.billed_seconds,
                           .charged = usage.charged,
                           .segment_rate = usage.segment_rate,
                           .segment_seconds = usage.segment_seconds,
                           .segment_charged = usage.segment_charged,
                           .package_seconds = usage.package_seconds});
  packed_text.append(usage.id);
}

std::string_view ChangeSet::instance_id(const UsageCharge& charge) const {
  return std::string_view(packed_text).substr(charge.text, charge.instance_size);
}

std::string_view ChangeSet::tenant_id(const UsageCharge& charge) const {
  return std::string_view(packed_text)
      .substr(charge.text + charge.instance_size, charge.tenant_size);
}

std::string_view ChangeSet::usage_id(const MeteredUsage& row) const {
  return std::string_view(packed_text).substr(row.text, row.id_size);
}

model::Transfer ChangeSet::transfer(const UsageCharge& charge) const {
  // The record as it was when charged, as far as its transfer shows it.
  model::UsageRecord usage;
  usage.kind = charge.kind;
  usage.instance_id = instance_id(charge);
  usage.tenant_id = tenant_id(charge);
  usage.run = charge.run;
  usage.billed_seconds = charge.billed_seconds;
  usage.metered_until = charge.at;
  return billing::usage_transfer(usage, charge.amount);
}

std::vector<model::Transfer> ChangeSet::all_transfers() const {
  std::vector<model::Transfer> out;
  out.reserve(transfers.size() + usage_charges.size());
  (void)for_each_transfer([&](const model::Transfer& t) -> Status {
    out.push_back(t);
    return {};
  });
  return out;
}

}  // namespace gpurent::controller
