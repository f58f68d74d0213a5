#include "controller/fleet.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "controller/internal.h"

namespace gpurent::controller {

using detail::visible_to;
using model::InstanceState;
using model::NodeState;
using model::Principal;
using monitor::ObservationRef;
using monitor::SignalKind;

namespace {

int64_t unix_ms(Timestamp t) { return to_unix_ms(t); }

// The tenant's environment, with the GPU share's variables on top (a job member's come from its
// placement, on the node). gpu_memory_mb: of the node's GPUs (0: unknown).
std::map<std::string, std::string> workload_env(const model::Instance& instance,
                                                int64_t gpu_memory_mb) {
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

}  // namespace

Result<model::DesiredState> Fleet::desired_state(std::string_view node_id) const {
  const auto node = c_.nodes.find(node_id);
  if (node == c_.nodes.end()) return fail(Error::not_found("node", node_id));
  model::DesiredState desired{node->second.id, node->second.generation, {}, {}};
  desired.volumes = c_.volumes.on_node(node->second.id);
  desired.instances = c_.with_files_on(node->second.id);
  desired.benchmark = node->second.benchmark;
  const int64_t gpu_memory_mb = node->second.gpus.empty() ? 0 : node->second.gpus[0].memory_mb;
  for (const auto& [id, placed] : c_.placements.on_node(node->second.id)) {
    const model::Instance& instance = *placed;
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
         .vm = instance.spec.vm,
         .ssh_keys = instance.spec.ssh_keys,
         .command = as_process ? instance.spec.process_command : instance.spec.command,
         .env = workload_env(instance, gpu_memory_mb),
         .gpus = instance.gpus,
         .cpu = instance.spec.cpu,
         .memory_gb = instance.spec.memory_gb,
         .disk_gb = instance.spec.disk_gb,
         .volumes = instance.spec.volumes,
         .services = instance.spec.services,
         .workdir = instance.spec.workdir});
    if (const model::Job* job = c_.jobs.of(instance)) {
      desired.workloads.back().job = model::job_member_placement(*job, instance);
    }
  }
  return desired;
}

Result<int64_t> Fleet::desired_generation(std::string_view node_id) const {
  const auto node = c_.nodes.find(node_id);
  if (node == c_.nodes.end()) return fail(Error::not_found("node", node_id));
  return node->second.generation;
}

Status Fleet::ingest_gpu_samples(std::string_view node_id, std::span<const GpuSamples> gpus) {
  if (!c_.nodes.contains(node_id)) return fail(Error::not_found("node", node_id));
  c_.monitor.series().ingest(node_id, gpus);
  c_.monitor.collect_rollups();
  return {};
}

void Fleet::observe(std::vector<monitor::ObservationRef>& out,
                    const std::vector<monitor::Metric>& watched) const {
  const Timestamp t = now();
  const int64_t now_ms = unix_ms(t);
  const auto fresh = [&](const std::optional<monitor::Sample>& sample) -> std::optional<double> {
    if (!sample || sample->t_ms < now_ms - kSampleMaxAgeMs) return std::nullopt;
    return sample->value;
  };
  const double timeout_s = static_cast<double>(c_.heartbeat_timeout.count()) / 1000.0;
  // The holders of the node's GPUs (by the GPU's position in node.gpus), in instance id order;
  // and each holder's sum and count of its GPUs' fresh utilisation, for all nodes.
  std::vector<std::pair<size_t, const model::Instance*>> holders;
  struct Utilisation {
    const model::Instance* instance;
    std::string_view gpu_type;
    double sum = 0;
    int count = 0;
  };
  std::vector<Utilisation> utilisation;
  // One lock for the whole pass: the telemetry thread waits for it, not the other way round.
  c_.monitor.series().read([&](const monitor::SeriesStore& series) {
    for (const auto& [id, node] : c_.nodes) {
      const bool down = node.state == NodeState::kDown;
      double age_s = static_cast<double>((t - node.last_heartbeat).count()) / 1000.0;
      if (!down) age_s = std::min(age_s, timeout_s);
      out.push_back(
          {.signal = {SignalKind::kNodeHeartbeatAge}, .subject = id, .node = id, .value = age_s});
      if (const auto skew = c_.nodes.clock_skew_ms(id); skew && !down) {
        out.push_back({.signal = {SignalKind::kNodeClockSkew},
                       .subject = id,
                       .node = id,
                       .value = static_cast<double>(std::abs(*skew))});
      }
      // Lookups per node, not per GPU: a node's instances, then its GPUs' latest samples.
      holders.clear();
      const size_t first_holder = utilisation.size();
      for (const auto& [instance_id, placed] : c_.placements.on_node(id)) {
        const model::Instance& instance = *placed;
        const size_t its_first = holders.size();
        for (const auto& uuid : instance.gpus) {
          for (size_t g = 0; g < node.gpus.size(); ++g) {
            if (node.gpus[g].uuid != uuid) continue;
            holders.emplace_back(g, &instance);
            break;
          }
        }
        // The instance's GPU type: its first GPU's.
        const std::string_view gpu_type =
            holders.size() > its_first ? std::string_view(node.gpus[holders[its_first].first].type)
                                       : std::string_view();
        utilisation.push_back({&instance, gpu_type});
      }
      const auto reported = series.latest_of_node(id);
      for (size_t g = 0; g < node.gpus.size(); ++g) {
        const model::Gpu& gpu = node.gpus[g];
        // Usually at the same position; a GPU known only from rollups restored at start has no
        // node in the series store yet, and is found by its uuid.
        const monitor::SeriesStore::GpuLatest* latest =
            g < reported.size() && reported[g]->uuid == gpu.uuid ? reported[g] : nullptr;
        for (size_t r = 0; !latest && r < reported.size(); ++r) {
          if (reported[r]->uuid == gpu.uuid) latest = reported[r];
        }
        if (!latest) latest = series.latest(gpu.uuid);
        if (!latest) continue;  // it never reported
        const model::Instance* first_holder_of_gpu = nullptr;
        // Each holder's utilisation is the mean of its GPUs' fresh values (a shared GPU counts for
        // every instance on it; a down node's last values too, while fresh); instances without
        // telemetry are neither idle nor busy.
        const auto util = fresh(latest->of(monitor::Metric::kGpuUtil));
        for (const auto& [held_gpu, instance] : holders) {
          if (held_gpu != g) continue;
          if (!first_holder_of_gpu) first_holder_of_gpu = instance;
          if (!util) continue;
          for (size_t u = first_holder; u < utilisation.size(); ++u) {
            if (utilisation[u].instance != instance) continue;
            utilisation[u].sum += *util;
            ++utilisation[u].count;
          }
        }
        // A GPU is not observed while its node is down, nor while a VM holds it on real hardware
        // and its guest does not report it: passed through, it has left the host's driver, and
        // only the guest can read it (docs/vm-runtime.md). Simulated GPUs go on reporting.
        const bool in_vm = first_holder_of_gpu && first_holder_of_gpu->spec.vm && !node.simulated;
        if (down || (in_vm && !util)) continue;
        std::string_view instance;
        std::string_view tenant;
        if (first_holder_of_gpu) {
          instance = first_holder_of_gpu->id;
          tenant = first_holder_of_gpu->tenant_id;
        }
        for (const monitor::Metric metric : watched) {
          out.push_back({.signal = {SignalKind::kGpuMetric, metric},
                         .subject = gpu.uuid,
                         .node = id,
                         .gpu_type = gpu.type,
                         .instance = instance,
                         .tenant = tenant,
                         .value = fresh(latest->of(metric))});
        }
      }
      // Benchmarks do not depend on telemetry: judged GPUs are observed whether they reported or
      // not, while their node is up.
      for (const auto& gpu : node.gpus) {
        if (down) break;
        if (const auto shortfall = c_.benchmarks.shortfall(gpu.uuid)) {
          out.push_back({.signal = {SignalKind::kGpuBenchmarkShortfall},
                         .subject = gpu.uuid,
                         .node = id,
                         .gpu_type = gpu.type,
                         .value = shortfall->percent});
        }
      }
    }
  });
  // Then the running instances whose GPUs reported, by instance id (the order observations have
  // always come in).
  std::erase_if(utilisation, [](const Utilisation& u) {
    return u.count == 0 || u.instance->state != InstanceState::kRunning || u.instance->gpus.empty();
  });
  std::sort(utilisation.begin(), utilisation.end(), [](const Utilisation& a, const Utilisation& b) {
    return a.instance->id < b.instance->id;
  });
  for (const Utilisation& u : utilisation) {
    out.push_back({.signal = {SignalKind::kInstanceGpuUtil},
                   .subject = u.instance->id,
                   .node = u.instance->node_id,
                   .gpu_type = u.gpu_type,
                   .instance = u.instance->id,
                   .tenant = u.instance->tenant_id,
                   .value = u.sum / u.count});
  }
}

Result<MetricsAnswer> Fleet::query_metrics(const Principal& caller,
                                           const MetricsQuery& query) const {
  MetricsAnswer answer;
  if (query.gpu) {
    bool visible =
        caller.is_operator() && (!c_.nodes.owner_of_gpu(*query.gpu).empty() ||
                                 c_.monitor.series().read([&](const monitor::SeriesStore& series) {
                                   return !series.node_of(*query.gpu).empty();
                                 }));
    if (!visible) {
      const auto& holders = c_.placements.holders(*query.gpu);
      visible = std::any_of(holders.begin(), holders.end(), [&](const auto& id) {
        return c_.instances.at(id).tenant_id == caller.tenant_id;
      });
    }
    if (!visible) return fail(Error::not_found("gpu", *query.gpu));
    answer.gpus.push_back(*query.gpu);
  } else if (query.node) {
    const auto node = c_.nodes.find(*query.node);
    if (!caller.is_operator() || node == c_.nodes.end()) {
      return fail(Error::not_found("node", *query.node));
    }
    for (const auto& gpu : node->second.gpus) answer.gpus.push_back(gpu.uuid);
  } else if (query.instance) {
    const auto it = c_.instances.find(*query.instance);
    if (it == c_.instances.end() || !visible_to(caller, it->second.tenant_id)) {
      return fail(Error::not_found("instance", *query.instance));
    }
    answer.gpus = it->second.gpus;
  } else {
    return fail(Error::invalid("missing_subject", "give one of gpu, node or instance"));
  }
  const int64_t to_ms = query.to_ms.value_or(unix_ms(now()));
  const monitor::Query series_query{.metric = query.metric,
                                    .gpus = answer.gpus,
                                    .from_ms = query.from_ms.value_or(to_ms - monitor::kHourMs),
                                    .to_ms = to_ms,
                                    .step_ms = query.step_ms,
                                    .aggregation = query.aggregation,
                                    .resolution = query.resolution};
  GPURENT_TRY(result, c_.monitor.series().read([&](const monitor::SeriesStore& series) {
    return series.query(series_query, unix_ms(now()));
  }));
  answer.result = std::move(result);
  return answer;
}

Result<monitor::Rule> Fleet::set_idle_alert(const Principal& caller, std::string_view instance_id,
                                            double below_percent, int64_t for_ms, bool auto_stop) {
  const auto it = c_.instances.find(instance_id);
  if (it == c_.instances.end() || !visible_to(caller, it->second.tenant_id)) {
    return fail(Error::not_found("instance", instance_id));
  }
  monitor::Rule rule = monitor::idle_rule(instance_id, below_percent, for_ms, auto_stop);
  GPURENT_CHECK(monitor::validate(rule));
  // Set on the platform's behalf: a tenant may not set other rules.
  return c_.monitor.put_rule(model::platform_principal(), std::move(rule));
}

std::vector<monitor::GpuReading> Fleet::gpu_readings() const {
  const int64_t now_ms = unix_ms(now());
  std::vector<monitor::GpuReading> readings;
  c_.monitor.series().read([&](const monitor::SeriesStore& series) {
    for (const auto& [id, node] : c_.nodes) {
      for (const auto& gpu : node.gpus) {
        monitor::GpuInfo info{
            .uuid = gpu.uuid, .index = gpu.index, .hostname = node.name, .model_name = gpu.name};
        if (const auto& holders = c_.placements.holders(gpu.uuid); !holders.empty()) {
          info.instance_id = *holders.begin();
          info.tenant = c_.instances.at(info.instance_id).tenant_id;
        }
        auto reading = monitor::latest_reading(series, std::move(info), now_ms, kSampleMaxAgeMs);
        if (!reading.values.empty()) readings.push_back(std::move(reading));
      }
    }
  });
  return readings;
}

PlatformStats Fleet::platform_stats() const {
  PlatformStats stats;
  for (const char* status : {"ready", "degraded", "draining", "cordoned", "down"}) {
    stats.nodes_by_status[status] = 0;
  }
  for (const auto& [id, node] : c_.nodes) ++stats.nodes_by_status[std::string(node_status(node))];
  for (const auto state :
       {InstanceState::kPending, InstanceState::kStarting, InstanceState::kRunning,
        InstanceState::kStopping, InstanceState::kStopped, InstanceState::kFailed,
        InstanceState::kPreempted, InstanceState::kTerminated}) {
    stats.instances_by_state[std::string(model::to_string(state))] = 0;
  }
  for (const auto& [id, instance] : c_.instances) {
    ++stats.instances_by_state[std::string(model::to_string(instance.state))];
  }
  stats.queue_length = static_cast<int>(c_.scheduler.queue_length());
  stats.scheduling_requests_tried = c_.scheduler.requests_tried();
  for (const auto& [id, skew] : c_.nodes.clock_skews()) {
    const auto node = c_.nodes.find(id);
    if (node == c_.nodes.end()) continue;
    stats.clock_skews.push_back({.node_id = id,
                                 .node_name = node->second.name,
                                 .seconds = static_cast<double>(skew) / 1000});
  }
  std::ranges::sort(stats.clock_skews, {}, &NodeClockSkew::node_id);
  stats.alerts_firing = c_.monitor.firing_by_severity();
  for (const auto& offer : offers()) {
    if (offer.price_per_gpu_hour) {
      stats.price_per_gpu_hour[offer.gpu_type] =
          static_cast<double>(*offer.price_per_gpu_hour) / static_cast<double>(kMicrosPerUnit);
    }
  }
  stats.samples_accepted = c_.monitor.series().accepted();
  stats.samples_refused = c_.monitor.series().refused();
  stats.series_memory =
      c_.monitor.series().read([](const monitor::SeriesStore& series) { return series.memory(); });
  return stats;
}

std::vector<Offer> Fleet::offers() const {
  std::map<std::string, Offer> by_type;
  for (const auto& [id, node] : c_.nodes) {
    if (node.state != NodeState::kReady) continue;
    std::map<std::string, int> free_here;
    if (node.cordoned) continue;
    for (const auto& gpu : node.gpus) {
      if (c_.quarantines.quarantined(gpu.uuid)) continue;  // out of service: not on offer
      Offer& offer = by_type[gpu.type];
      offer.gpu_type = gpu.type;
      offer.total += 1;
      const bool measuring = being_measured(node, gpu.uuid);
      if (c_.placements.holders(gpu.uuid).empty() && !measuring) {
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
    offer.price_per_gpu_hour = c_.pricing.book().on_demand_price(type, now());
    out.push_back(std::move(offer));
  }
  return out;
}

std::string_view Fleet::node_status(const Node& node) const {
  if (node.state == NodeState::kDown) return "down";
  if (!node.cordoned) {
    const bool degraded =
        std::any_of(node.gpus.begin(), node.gpus.end(),
                    [&](const model::Gpu& gpu) { return c_.quarantines.quarantined(gpu.uuid); });
    return degraded ? "degraded" : "ready";
  }
  for (const auto& [id, instance] : c_.placements.on_node(node.id)) {
    if (instance->requeue_requested) return "draining";
  }
  return "cordoned";
}

bool Fleet::node_uses_workdir(std::string_view node_id, std::string_view upload_id) const {
  if (upload_id.empty()) return false;
  const auto& placed = c_.placements.on_node(node_id);
  return std::any_of(placed.begin(), placed.end(),
                     [&](const auto& entry) { return entry.second->spec.workdir == upload_id; });
}

}  // namespace gpurent::controller
