// The controller's side of pricing (pricing.h has the book and the market): who may set prices
// and what a new version wakes, the utilisation the spot market observes and the max_price
// interruptions it causes.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/controller.h"
#include "controller/internal.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

Result<model::PriceVersion> Controller::set_prices(const Principal& caller,
                                                   const billing::PriceChange& change) {
  // A type exists if the catalog knows it or a node has one (an unknown model, priced by hand).
  const auto known_type = [this](std::string_view type) {
    if (model::find_gpu_type(type)) return true;
    return std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& entry) {
      return std::any_of(entry.second.gpus.begin(), entry.second.gpus.end(),
                         [&](const model::Gpu& gpu) { return gpu.type == type; });
    });
  };
  GPURENT_TRY(version, pricing_.set(caller, change, known_type));
  // Work queued for a type that just got a price may now be placed.
  scheduler_.queue_changed();
  return version;
}

bool Controller::update_spot_market() {
  MilliGpusByType held;
  for (const auto& [tenant, holding] : placements_.holdings()) {
    for (const auto& [type, milli] : holding.milli_by_type) held[type] += milli;
  }
  return pricing_.observe_utilisation(ready_gpu_capacity(), held);
}

const MilliGpusByType& Controller::ready_gpu_capacity() {
  if (!ready_gpu_capacity_) ready_gpu_capacity_ = count_ready_gpus();
  return *ready_gpu_capacity_;
}

MilliGpusByType Controller::count_ready_gpus() const {
  MilliGpusByType capacity;
  for (const auto& [id, node] : nodes_) {
    if (node.state != model::NodeState::kReady) continue;
    // A node's GPUs are nearly always of one type: the map is searched once per node, not once
    // per GPU.
    int64_t* count = nullptr;
    std::string_view counted;
    for (const auto& gpu : node.gpus) {
      if (quarantines_.quarantined(gpu.uuid)) continue;
      if (count == nullptr || gpu.type != counted) {
        count = &capacity[gpu.type];
        counted = gpu.type;
      }
      *count += model::kMilliPerGpu;
    }
  }
  return capacity;
}

void Controller::interrupt_spot_over_max_price() {
  // Only placed spot work with a max_price can be interrupted, listed by the placements in id
  // order, so that the events come out the same every run. Collected first: stopping changes
  // what is placed.
  std::vector<Instance*> over_price;
  for (const auto& [id, instance] : placements_.with_max_price()) {
    if (instance->state != InstanceState::kStarting && instance->state != InstanceState::kRunning) {
      continue;
    }
    const auto price = pricing_.spot_price(instance->gpu_type);
    if (price && *price > *instance->spec.max_price) over_price.push_back(instance);
  }
  for (Instance* interrupted : over_price) {
    Instance& instance = *interrupted;
    const auto price = pricing_.spot_price(instance.gpu_type);
    // As a preemption: stopped with notice, state preempted once the process is gone, and said
    // in the tenant's events as any preemption is.
    instance.preempt_requested = true;
    std::string why = fmt::format(
        "interrupted: the spot price of {} ({}/h per GPU) rose above its max_price ({}/h)",
        instance.gpu_type, format_money(*price, options_.currency),
        format_money(*instance.spec.max_price, options_.currency));
    events_.record(instance.tenant_id, instance.id, model::event_kind::kInstancePreempted, why);
    request_stop(instance, std::move(why));
    spdlog::info("interrupted spot instance={} price={} max_price={}", instance.id, *price,
                 *instance.spec.max_price);
  }
}

}  // namespace gpurent::controller
