// The table forms of the typed answers (client::Answer, src/api/): instances, jobs, volumes,
// nodes, tenants and keys, balance and usage. Members read as the SDK typed them; what a server of
// another version left out is its default, and a time it did not send prints as "-".
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "cli/output.h"
#include "cli/view_text.h"
#include "cli/views.h"
#include "common/money.h"

namespace gpurent::cli {
namespace {

// An unnamed instance or job carries its id as its name: "-" rather than the id twice.
std::string own_name(const std::string& name, const std::string& id) {
  return name == id ? "-" : dash(name);
}

std::string gpus(const api::WorkloadView& workload) {
  return workload.gpu_type.empty() ? "-"
                                   : fmt::format("{}x {}", workload.gpu_count, workload.gpu_type);
}

// "v-1:/data, v-2:/scratch": an instance's volume mounts as `launch --volume` takes them.
std::string mounts_text(const std::vector<model::VolumeMount>& mounts) {
  std::string out;
  for (const auto& mount : mounts) {
    out += fmt::format("{}{}:{}", out.empty() ? "" : ", ", mount.volume_id, mount.mount_path);
  }
  return out;
}

// "8x h100-80g" or "4x a100-80g, 2x rtx4090-24g", in the order the types first appear.
std::string gpu_summary(const std::vector<api::NodeGpu>& gpus) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& gpu : gpus) {
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& entry) { return entry.first == gpu.type; });
    if (it == counts.end()) {
      counts.emplace_back(gpu.type, 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [type, count] : counts) {
    out += fmt::format("{}{}x {}", out.empty() ? "" : ", ", count, type);
  }
  return out;
}

// "2 succeeded, 1 running" from a job's task counts, states with no task left out.
std::string task_counts_text(const api::Job& job) {
  std::string out;
  for (const auto& [state, count] : job.task_counts) {
    if (count > 0) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", count, state);
  }
  return out;
}

// "3/4": tasks that have ended, of all.
std::string tasks_done(const api::Job& job) {
  int done = 0;
  for (const auto& [state, count] : job.task_counts) {
    model::JobState parsed;
    if (model::parse_job_state(state, &parsed) && model::is_final(parsed)) done += count;
  }
  return fmt::format("{}/{}", done, job.array);
}

}  // namespace

std::string instances_view(const std::vector<api::Instance>& items, Timestamp now) {
  Table table({"ID", "NAME", "STATE", "GPUS", "NODE", "PRICE", "CREATED"});
  for (const auto& instance : items) {
    // Only work that holds or waits for GPUs has a price running.
    const bool priced =
        model::holds_gpus(instance.state) || instance.state == model::InstanceState::kPending;
    table.add_row({instance.id, own_name(instance.workload.name, instance.id),
                   std::string(model::to_string(instance.state)), gpus(instance.workload),
                   dash(text_of(instance.node_id)),
                   priced ? price(instance.price_per_gpu_hour_micros, instance.currency,
                                  instance.workload.gpu_count)
                          : "-",
                   when(instance.created_at, now)});
  }
  return table.render();
}

std::string instance_view(const api::Instance& instance, Timestamp now) {
  const api::WorkloadView& workload = instance.workload;
  const int count = workload.gpu_count;
  const auto& per_gpu = instance.price_per_gpu_hour_micros;
  return render_fields({
      {"ID", instance.id},
      {"Name", own_name(workload.name, instance.id)},
      {"Tenant", instance.tenant_id},
      {"State", std::string(model::to_string(instance.state))},
      {"Reason", instance.reason},
      {"GPUs", gpus(workload)},
      {"GPU UUIDs", join(instance.gpus)},
      {"Node", text_of(instance.node_id)},
      {"CPU", workload.cpu > 0 ? std::to_string(workload.cpu) : ""},
      {"Memory", workload.memory_gb > 0 ? fmt::format("{} GB", workload.memory_gb) : ""},
      {"Template", text_of(workload.template_name)},
      {"Runtime", workload.runtime},
      {"Image", text_of(workload.image)},
      {"Command", shell_join(workload.command)},
      {"Process", shell_join(workload.process_command)},
      {"Env", join_env(workload.env)},
      {"Volumes", mounts_text(workload.volumes)},
      {"Pricing", std::string(model::to_string(workload.pricing))},
      {"Price", count > 1 ? fmt::format("{} ({} per GPU)", price(per_gpu, instance.currency, count),
                                        price(per_gpu, instance.currency))
                          : price(per_gpu, instance.currency)},
      {"Run", std::to_string(instance.run)},
      {"Created", when_exactly(instance.created_at, now)},
      {"Started", when_exactly(instance.started_at, now)},
      {"Ended", when_exactly(instance.ended_at, now)},
      {"Exit code", text_of(instance.exit_code)},
  });
}

std::string balance_view(const api::Balance& balance) {
  return render_fields({{"Tenant", balance.tenant_id},
                        {"Balance", format_money(balance.balance_micros, balance.currency)}});
}

namespace {

// "1m00s", or "1m00s (59s of it the minimum)" when the run's minimum duration was charged.
std::string run_duration(const api::UsageItem& run) {
  const std::string billed = format_duration(run.seconds);
  return run.minimum_seconds > 0 ? fmt::format("{} ({} of it the minimum)", billed,
                                               format_duration(run.minimum_seconds))
                                 : billed;
}

}  // namespace

std::string usage_view(const api::Usage& usage, Timestamp now) {
  const std::string& currency = usage.currency;
  Table table({"INSTANCE", "RUN", "GPUS", "PRICE", "STARTED", "DURATION", "AMOUNT"});
  for (const auto& run : usage.items) {
    table.add_row({run.instance_id, std::to_string(run.run),
                   run.gpu_type.empty() ? "-" : fmt::format("{}x {}", run.gpu_count, run.gpu_type),
                   price(run.price_per_gpu_hour_micros, currency, run.gpu_count),
                   when(run.started_at, now), run_duration(run),
                   format_money(run.amount_micros, currency)});
  }
  std::string text = table.render();
  if (!usage.volumes.empty()) {
    Table storage({"VOLUME", "NAME", "SIZE", "CREATED", "DURATION", "AMOUNT"});
    for (const auto& volume : usage.volumes) {
      storage.add_row({volume.volume_id, volume.name, fmt::format("{} GB", volume.size_gb),
                       when(volume.created_at, now), format_duration(volume.seconds),
                       format_money(volume.amount_micros, currency)});
    }
    text += "\n" + storage.render();
  }
  return text + fmt::format("\nTotal: {}\n", format_money(usage.total_micros, currency));
}

std::string tenants_view(const std::vector<api::TenantWithBalance>& items, Timestamp now) {
  Table table({"ID", "NAME", "BALANCE", "CREATED"});
  for (const auto& tenant : items) {
    table.add_row({tenant.tenant.id, tenant.tenant.name,
                   format_money(tenant.balance_micros, tenant.currency),
                   when(tenant.tenant.created_at, now)});
  }
  return table.render();
}

std::string tenant_view(const api::Tenant& tenant, Timestamp now) {
  return render_fields({{"ID", tenant.id},
                        {"Name", tenant.name},
                        {"Created", when_exactly(tenant.created_at, now)}});
}

std::string api_key_view(const api::ApiKeyCreated& created, Timestamp now) {
  const api::ApiKey& key = created.api_key;
  return render_fields({{"ID", key.id},
                        {"Tenant", key.tenant_id},
                        {"Role", std::string(model::to_string(key.role))},
                        {"Name", key.name},
                        {"Scopes", fmt::format("{}", fmt::join(key.scopes, " "))},
                        {"Created", when_exactly(key.created_at, now)},
                        {"Expires", key.expires_at ? when_exactly(*key.expires_at, now) : "never"},
                        {"Key", created.key}}) +
         "\nStore the key now: it is not shown again.\n";
}

std::string api_keys_view(const std::vector<api::ApiKey>& items, Timestamp now) {
  Table table({"ID", "TENANT", "ROLE", "NAME", "PREFIX", "SCOPES", "CREATED", "EXPIRES"});
  for (const auto& key : items) {
    table.add_row({key.id, key.tenant_id, std::string(model::to_string(key.role)), dash(key.name),
                   key.prefix, fmt::format("{}", fmt::join(key.scopes, " ")),
                   when(key.created_at, now),
                   key.expires_at ? when(*key.expires_at, now) : "never"});
  }
  return table.render();
}

std::string nodes_view(const std::vector<api::Node>& items, Timestamp now) {
  Table table({"ID", "NAME", "STATE", "GPUS", "FREE", "CPU", "MEMORY", "LAST SEEN"});
  for (const auto& node : items) {
    const std::string state(model::to_string(node.state));
    table.add_row({node.id, node.simulated ? node.name + " (sim)" : node.name,
                   node.cordoned ? state + " (cordoned)" : state, dash(gpu_summary(node.gpus)),
                   std::to_string(node.free_gpus), std::to_string(node.cpu_count),
                   memory(node.memory_mb), when(node.last_heartbeat, now)});
  }
  return table.render();
}

namespace {

// "sandbox (CPU and memory limits through cgroup v1)", or "none: one tenant's processes at a time
// (the agent does not run as root ...)".
std::string isolation(const api::Node& node) {
  const std::string& note = node.isolation_note;
  if (node.isolation == "sandbox")
    return note.empty() ? "sandbox" : fmt::format("sandbox ({})", note);
  return fmt::format("none: one tenant's processes at a time{}",
                     note.empty() ? "" : fmt::format(" ({})", note));
}

// Whether image work runs on the node, and with which NVIDIA Container Toolkit: "yes, NVIDIA
// Container Toolkit 1.17.8", "no: containers get no GPUs here: ...", "no container engine".
std::string containers(const api::Node& node) {
  const auto& toolkit = node.container_toolkit;
  if (!node.container_runtime) {
    return toolkit && !toolkit->note.empty() ? fmt::format("no: {}", toolkit->note)
                                             : "no container engine";
  }
  if (!toolkit) return "yes";
  std::string out = fmt::format("yes, NVIDIA Container Toolkit {}",
                                toolkit->version.empty() ? "of unknown version" : toolkit->version);
  if (!toolkit->note.empty()) out += fmt::format(" ({})", toolkit->note);
  return out;
}

// Whether VM work runs on the node: "yes, kvm", "no: tcg, GPUs not passed through: ...", "no".
std::string vms(const api::Node& node) {
  if (!node.vm) return "no";
  const auto& vm = *node.vm;
  const std::string note = vm.note.empty() ? "" : fmt::format(" ({})", vm.note);
  if (!vm.gpu_passthrough) {
    return fmt::format("no: {}, GPUs cannot be passed through{}", vm.accelerator, note);
  }
  return fmt::format("yes, {}{}", vm.accelerator, note);
}

// The agent's clock skew in seconds, signed ("+0.012 s"); "-" until measured.
std::string clock_skew(const api::Node& node) {
  if (!node.clock_skew_ms) return "-";
  return fmt::format("{:+.3f} s", static_cast<double>(*node.clock_skew_ms) / 1000);
}

}  // namespace

std::string node_view(const api::Node& node, Timestamp now) {
  std::string out = render_fields({
      {"ID", node.id},
      {"Name", node.name},
      {"State", std::string(model::to_string(node.state))},
      {"Status", node.status},
      {"GPUs", fmt::format("{} ({} free)", dash(gpu_summary(node.gpus)), node.free_gpus)},
      {"CPU", std::to_string(node.cpu_count)},
      {"Memory", memory(node.memory_mb)},
      {"Simulated", yes_no(node.simulated)},
      {"Isolation", isolation(node)},
      {"Containers", containers(node)},
      {"VMs", vms(node)},
      {"Agent", node.agent_version},
      {"Registered", when_exactly(node.registered_at, now)},
      {"Last seen", when_exactly(node.last_heartbeat, now)},
      {"Clock skew", clock_skew(node)},
  });
  Table table({"INDEX", "UUID", "TYPE", "NAME", "MEMORY", "INSTANCE", "UTIL", "TEMP", "POWER",
               "FB USED", "XID"});
  for (const auto& gpu : node.gpus) {
    // The GPU's latest telemetry (shown, not typed: server/telemetry_view.h); "-" for what it did
    // not report.
    const auto reading = [&gpu](std::string_view key, std::string_view unit) {
      const std::string value = field_text(gpu.telemetry, key);
      return value.empty() ? std::string("-") : value + std::string(unit);
    };
    const Json& last_xid =
        gpu.telemetry.is_object() ? gpu.telemetry.value("last_xid", Json()) : Json();
    table.add_row({std::to_string(gpu.index), gpu.uuid, gpu.type, gpu.name, memory(gpu.memory_mb),
                   dash(text_of(gpu.instance_id)), reading("gpu_util_pct", "%"),
                   reading("temperature_c", " C"), reading("power_w", " W"),
                   reading("fb_used_mib", " MiB"), dash(field_text(last_xid, "code"))});
  }
  out += "\n" + table.render();
  if (node.quarantined_gpus.empty()) return out;
  Table out_of_service({"QUARANTINED GPU", "UUID", "CAUSE", "SINCE", "WHAT"});
  for (const auto& gpu : node.quarantined_gpus) {
    out_of_service.add_row({std::to_string(gpu.index), gpu.uuid, gpu.cause,
                            when(gpu.quarantined_at, now), gpu.message});
  }
  return out + "\n" + out_of_service.render() +
         fmt::format("Release one after checking it: gpurent nodes release-gpu {} INDEX\n",
                     sanitize(node.id));
}

std::string jobs_view(const std::vector<api::Job>& items, Timestamp now) {
  Table table({"ID", "NAME", "STATE", "GPUS", "NODES", "TASKS DONE", "CREATED"});
  for (const auto& job : items) {
    table.add_row({job.id, own_name(job.workload.name, job.id),
                   std::string(model::to_string(job.state)), gpus(job.workload),
                   std::to_string(job.nodes), tasks_done(job), when(job.created_at, now)});
  }
  return table.render();
}

std::string job_view(const api::Job& job, Timestamp now) {
  const api::WorkloadView& workload = job.workload;
  std::string out = render_fields({
      {"ID", job.id},
      {"Name", own_name(workload.name, job.id)},
      {"Tenant", job.tenant_id},
      {"State", std::string(model::to_string(job.state))},
      {"Reason", job.reason},
      {"GPUs",
       gpus(workload) + (job.nodes > 1 ? fmt::format(" on each of {} nodes", job.nodes) : "")},
      {"Tasks", fmt::format("{} ({})", job.array, dash(task_counts_text(job)))},
      {"Retries", std::to_string(job.retries)},
      {"Command", shell_join(workload.command)},
      {"Env", join_env(workload.env)},
      {"Pricing", std::string(model::to_string(workload.pricing))},
      {"Max runtime", workload.max_runtime_s ? format_duration(*workload.max_runtime_s) : ""},
      {"Created", when_exactly(job.created_at, now)},
      {"Started", when_exactly(job.started_at, now)},
      {"Ended", when_exactly(job.ended_at, now)},
  });
  if (!job.tasks) {
    return out + fmt::format("\n{} tasks: `gpurent job show {} --tasks` lists them.\n", job.array,
                             sanitize(job.id));
  }
  Table table({"TASK", "STATE", "ATTEMPTS", "EXIT", "INSTANCES"});
  for (const auto& task : *job.tasks) {
    table.add_row({std::to_string(task.index), std::string(model::to_string(task.state)),
                   std::to_string(task.attempts), dash(text_of(task.exit_code)),
                   dash(join(task.instances))});
  }
  return out + "\n" + table.render();
}

std::string volumes_view(const std::vector<api::Volume>& items, Timestamp now) {
  Table table({"ID", "NAME", "SIZE", "NODE", "STATE", "CREATED"});
  for (const auto& volume : items) {
    table.add_row({volume.id, volume.name, fmt::format("{} GB", volume.size_gb),
                   dash(text_of(volume.node_id)), std::string(model::to_string(volume.state)),
                   when(volume.created_at, now)});
  }
  return table.render();
}

std::string volume_view(const api::Volume& volume, Timestamp now) {
  return render_fields({{"ID", volume.id},
                        {"Name", volume.name},
                        {"Tenant", volume.tenant_id},
                        {"Size", fmt::format("{} GB", volume.size_gb)},
                        {"Node", dash(text_of(volume.node_id))},
                        {"State", std::string(model::to_string(volume.state))},
                        {"Created", when_exactly(volume.created_at, now)}});
}

}  // namespace gpurent::cli
