#include "controller/change_set.h"

namespace gpurent::controller {
namespace {

template <class T>
void append(std::vector<T>& to, std::vector<T>& from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

void ChangeSet::merge(ChangeSet&& other) {
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
  append(price_versions, other.price_versions);
  append(spot_prices, other.spot_prices);
  append(package_products, other.package_products);
  append(packages, other.packages);
  append(balance_settings, other.balance_settings);
  append(downtime, other.downtime);
  append(gpu_quarantines, other.gpu_quarantines);
  woken_nodes.merge(other.woken_nodes);
  changed_instances.merge(other.changed_instances);
  monitoring_changes.merge(std::move(other.monitoring_changes));
}

}  // namespace gpurent::controller
