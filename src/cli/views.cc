#include "cli/views.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/output.h"

namespace gpurent::cli {
namespace {

const Json& member(const Json& object, std::string_view key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

int64_t integer(const Json& object, std::string_view key) {
  const Json& value = member(object, key);
  return value.is_number_integer() ? value.get<int64_t>() : 0;
}

std::string dash(std::string value) { return value.empty() ? "-" : value; }

// An unnamed instance or job carries its id as its name: "-" rather than the id twice.
std::string own_name(const Json& object) {
  const std::string name = field_text(object, "name");
  return name == field_text(object, "id") ? "-" : dash(name);
}

std::string when(const Json& object, std::string_view key, Timestamp now) {
  const auto t = parse_rfc3339(field_text(object, key));
  return t ? format_relative(*t, now) : "-";
}

// The exact time and how long ago, for detail views.
std::string when_exactly(const Json& object, std::string_view key, Timestamp now) {
  const std::string value = field_text(object, key);
  const auto t = parse_rfc3339(value);
  return t ? fmt::format("{} ({})", value, format_relative(*t, now)) : "";
}

// Money for people, "CNY 12.35", in the object's currency (-o json keeps the exact micros).
std::string amount(const Json& object, std::string_view key) {
  const Json& value = member(object, key);
  if (!value.is_number_integer()) return "-";
  return format_money(value.get<Micros>(), field_text(object, "currency"));
}

std::string price(const Json& object, int64_t multiplier = 1) {
  const Micros per_gpu = integer(object, "price_per_gpu_hour_micros");
  if (per_gpu == 0) return "-";  // an unpriced GPU type
  return format_price_per_hour(per_gpu * multiplier, field_text(object, "currency"));
}

std::string memory(const Json& object) {
  const int64_t mb = integer(object, "memory_mb");
  return mb > 0 ? format_memory_mb(mb) : "-";
}

// The agent's clock skew in seconds, signed ("+0.012 s"); "-" until measured.
std::string clock_skew(const Json& node) {
  const Json& ms = member(node, "clock_skew_ms");
  if (!ms.is_number_integer()) return "-";
  return fmt::format("{:+.3f} s", static_cast<double>(ms.get<int64_t>()) / 1000);
}

std::string gpus(const Json& object) {
  const std::string type = field_text(object, "gpu_type");
  return type.empty() ? "-" : fmt::format("{}x {}", integer(object, "gpu_count"), type);
}

std::string command_text(const Json& command) {
  if (command.is_string()) return command.get<std::string>();
  if (!command.is_array()) return "";
  std::vector<std::string> argv;
  for (const auto& word : command) argv.push_back(word.is_string() ? word.get<std::string>() : "");
  return shell_join(argv);
}

std::string join_env(const Json& env) {
  std::string out;
  if (!env.is_object()) return out;
  for (const auto& [name, value] : env.items()) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}={}", name, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

std::string join_strings(const Json& list) {
  std::string out;
  if (!list.is_array()) return out;
  for (const auto& item : list) {
    if (!out.empty()) out += ", ";
    out += item.is_string() ? item.get<std::string>() : item.dump();
  }
  return out;
}

// "v-1:/data, v-2:/scratch": an instance's volume mounts as `launch --volume` takes them.
std::string mounts_text(const Json& list) {
  std::string out;
  if (!list.is_array()) return out;
  for (const auto& mount : list) {
    if (!out.empty()) out += ", ";
    out += field_text(mount, "volume_id") + ":" + field_text(mount, "mount_path");
  }
  return out;
}

// "8x h100-80g" or "4x a100-80g, 2x rtx4090-24g", in the order the types first appear.
std::string gpu_summary(const Json& gpu_list) {
  std::vector<std::pair<std::string, int>> counts;
  if (gpu_list.is_array()) {
    for (const auto& gpu : gpu_list) {
      const std::string type = field_text(gpu, "type");
      auto it = std::find_if(counts.begin(), counts.end(),
                             [&](const auto& entry) { return entry.first == type; });
      if (it == counts.end()) {
        counts.emplace_back(type, 1);
      } else {
        ++it->second;
      }
    }
  }
  std::string out;
  for (const auto& [type, count] : counts) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}x {}", count, type);
  }
  return out;
}

const Json& as_list(const Json& items) {
  static const Json kEmpty = Json::array();
  return items.is_array() ? items : kEmpty;
}

constexpr std::string_view kFinalJobStates[] = {"succeeded", "failed", "cancelled", "preempted"};

// "2 succeeded, 1 running" from a job's task_counts, states with no task left out.
std::string task_counts_text(const Json& job) {
  std::string out;
  const Json& counts = member(job, "task_counts");
  if (!counts.is_object()) return out;
  for (const auto& [state, count] : counts.items()) {
    if (!count.is_number_integer() || count.get<int64_t>() == 0) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", count.get<int64_t>(), state);
  }
  return out;
}

// "3/4": tasks that have ended, of all.
std::string tasks_done(const Json& job) {
  const Json& counts = member(job, "task_counts");
  int64_t done = 0;
  for (const auto state : kFinalJobStates) done += integer(counts, state);
  return fmt::format("{}/{}", done, integer(job, "array"));
}

}  // namespace

std::string field_text(const Json& object, std::string_view key) {
  const Json& value = member(object, key);
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  return "";
}

std::string instances_view(const Json& items, Timestamp now) {
  Table table({"ID", "NAME", "STATE", "GPUS", "NODE", "PRICE", "CREATED"});
  for (const auto& instance : as_list(items)) {
    // Only work that holds or waits for GPUs has a price running.
    const std::string state = field_text(instance, "state");
    const bool priced =
        state == "pending" || state == "starting" || state == "running" || state == "stopping";
    table.add_row({field_text(instance, "id"), own_name(instance), state, gpus(instance),
                   dash(field_text(instance, "node_id")),
                   priced ? price(instance, integer(instance, "gpu_count")) : "-",
                   when(instance, "created_at", now)});
  }
  return table.render();
}

std::string instance_view(const Json& instance, Timestamp now) {
  const int64_t count = integer(instance, "gpu_count");
  std::string exit_code = field_text(instance, "exit_code");
  return render_fields({
      {"ID", field_text(instance, "id")},
      {"Name", own_name(instance)},
      {"Tenant", field_text(instance, "tenant_id")},
      {"State", field_text(instance, "state")},
      {"Reason", field_text(instance, "reason")},
      {"GPUs", gpus(instance)},
      {"GPU UUIDs", join_strings(member(instance, "gpus"))},
      {"Node", field_text(instance, "node_id")},
      {"CPU", integer(instance, "cpu") > 0 ? field_text(instance, "cpu") : ""},
      {"Memory",
       integer(instance, "memory_gb") > 0 ? field_text(instance, "memory_gb") + " GB" : ""},
      {"Template", field_text(instance, "template")},
      {"Image", field_text(instance, "image")},
      {"Command", command_text(member(instance, "command"))},
      {"Process", command_text(member(instance, "process_command"))},
      {"Env", join_env(member(instance, "env"))},
      {"Volumes", mounts_text(member(instance, "volumes"))},
      {"Pricing", field_text(instance, "pricing")},
      {"Price", count > 1 ? fmt::format("{} ({} per GPU)", price(instance, count), price(instance))
                          : price(instance)},
      {"Run", field_text(instance, "run")},
      {"Created", when_exactly(instance, "created_at", now)},
      {"Started", when_exactly(instance, "started_at", now)},
      {"Ended", when_exactly(instance, "ended_at", now)},
      {"Exit code", exit_code},
  });
}

std::string offers_view(const Json& items) {
  Table table({"GPU TYPE", "NAME", "MEMORY", "FREE", "TOTAL", "MAX/NODE", "PRICE"});
  for (const auto& offer : as_list(items)) {
    table.add_row({field_text(offer, "gpu_type"), field_text(offer, "display_name"), memory(offer),
                   field_text(offer, "free"), field_text(offer, "total"),
                   field_text(offer, "max_free_per_node"), price(offer)});
  }
  return table.render();
}

std::string gpu_types_view(const Json& items) {
  Table table({"GPU TYPE", "NAME", "MEMORY", "FREE", "TOTAL", "PRICE"});
  for (const auto& type : as_list(items)) {
    table.add_row({field_text(type, "slug"), field_text(type, "display_name"), memory(type),
                   field_text(type, "free"), field_text(type, "total"), price(type)});
  }
  return table.render();
}

std::string balance_view(const Json& balance) {
  return render_fields({{"Tenant", field_text(balance, "tenant_id")},
                        {"Balance", amount(balance, "balance_micros")}});
}

namespace {

// "1m00s", or "1m00s (59s of it the minimum)" when the run's minimum duration was charged.
std::string run_duration(const Json& run) {
  const std::string billed = format_duration(integer(run, "seconds"));
  const int64_t minimum = integer(run, "minimum_seconds");
  return minimum > 0 ? fmt::format("{} ({} of it the minimum)", billed, format_duration(minimum))
                     : billed;
}

}  // namespace

std::string usage_view(const Json& usage, Timestamp now) {
  const std::string currency = field_text(usage, "currency");
  Table table({"INSTANCE", "RUN", "GPUS", "PRICE", "STARTED", "DURATION", "AMOUNT"});
  for (auto run : as_list(member(usage, "items"))) {
    if (run.is_object() && !run.contains("currency")) run["currency"] = currency;
    table.add_row({field_text(run, "instance_id"), field_text(run, "run"), gpus(run),
                   price(run, integer(run, "gpu_count")), when(run, "started_at", now),
                   run_duration(run), amount(run, "amount_micros")});
  }
  std::string text = table.render();
  const Json& volumes = member(usage, "volumes");
  if (volumes.is_array() && !volumes.empty()) {
    Table storage({"VOLUME", "NAME", "SIZE", "CREATED", "DURATION", "AMOUNT"});
    for (auto volume : volumes) {
      if (volume.is_object() && !volume.contains("currency")) volume["currency"] = currency;
      storage.add_row({field_text(volume, "volume_id"), field_text(volume, "name"),
                       fmt::format("{} GB", integer(volume, "size_gb")),
                       when(volume, "created_at", now), format_duration(integer(volume, "seconds")),
                       amount(volume, "amount_micros")});
    }
    text += "\n" + storage.render();
  }
  return text + fmt::format("\nTotal: {}\n", amount(usage, "total_micros"));
}

std::string transfers_view(const Json& items, Timestamp now) {
  Table table({"ID", "TIME", "KIND", "FROM", "TO", "AMOUNT", "REFERENCE"});
  for (const auto& transfer : as_list(items)) {
    table.add_row({field_text(transfer, "id"), when(transfer, "at", now),
                   field_text(transfer, "kind"), field_text(transfer, "from_account"),
                   field_text(transfer, "to_account"), amount(transfer, "amount_micros"),
                   dash(field_text(transfer, "reference"))});
  }
  return table.render();
}

std::string topup_view(const Json& topup) {
  return render_fields({{"Transfer", field_text(topup, "transfer_id")},
                        {"Tenant", field_text(topup, "tenant_id")},
                        {"Amount", amount(topup, "amount_micros")},
                        {"Balance", amount(topup, "balance_micros")}});
}

std::string whoami_view(const Json& whoami) {
  return render_fields({{"Tenant", field_text(whoami, "tenant_id")},
                        {"Key", field_text(whoami, "key_id")},
                        {"Role", field_text(whoami, "role")}});
}

std::string tenants_view(const Json& items, Timestamp now) {
  Table table({"ID", "NAME", "BALANCE", "CREATED"});
  for (const auto& tenant : as_list(items)) {
    table.add_row({field_text(tenant, "id"), field_text(tenant, "name"),
                   amount(tenant, "balance_micros"), when(tenant, "created_at", now)});
  }
  return table.render();
}

std::string tenant_view(const Json& tenant, Timestamp now) {
  return render_fields({{"ID", field_text(tenant, "id")},
                        {"Name", field_text(tenant, "name")},
                        {"Created", when_exactly(tenant, "created_at", now)}});
}

std::string api_key_view(const Json& key, Timestamp now) {
  return render_fields({{"ID", field_text(key, "id")},
                        {"Tenant", field_text(key, "tenant_id")},
                        {"Role", field_text(key, "role")},
                        {"Name", field_text(key, "name")},
                        {"Created", when_exactly(key, "created_at", now)},
                        {"Key", field_text(key, "key")}}) +
         "\nStore the key now: it is not shown again.\n";
}

std::string nodes_view(const Json& items, Timestamp now) {
  Table table({"ID", "NAME", "STATE", "GPUS", "FREE", "CPU", "MEMORY", "LAST SEEN"});
  for (const auto& node : as_list(items)) {
    std::string name = field_text(node, "name");
    if (member(node, "simulated") == true) name += " (sim)";
    const std::string state = field_text(node, "state");
    table.add_row({field_text(node, "id"), name,
                   member(node, "cordoned") == true ? state + " (cordoned)" : state,
                   dash(gpu_summary(member(node, "gpus"))), field_text(node, "free_gpus"),
                   field_text(node, "cpu_count"), memory(node), when(node, "last_heartbeat", now)});
  }
  return table.render();
}

namespace {

// "sandbox (CPU and memory limits through cgroup v1)", or "none: one tenant's processes at a time
// (the agent does not run as root ...)".
std::string isolation(const Json& node) {
  const std::string mode = field_text(node, "isolation");
  const std::string note = field_text(node, "isolation_note");
  if (mode == "sandbox") return note.empty() ? mode : fmt::format("sandbox ({})", note);
  return fmt::format("none: one tenant's processes at a time{}",
                     note.empty() ? "" : fmt::format(" ({})", note));
}

}  // namespace

std::string node_view(const Json& node, Timestamp now) {
  std::string out = render_fields({
      {"ID", field_text(node, "id")},
      {"Name", field_text(node, "name")},
      {"State", field_text(node, "state")},
      {"Status", field_text(node, "status")},
      {"GPUs", fmt::format("{} ({} free)", dash(gpu_summary(member(node, "gpus"))),
                           dash(field_text(node, "free_gpus")))},
      {"CPU", field_text(node, "cpu_count")},
      {"Memory", memory(node)},
      {"Simulated", field_text(node, "simulated")},
      {"Isolation", isolation(node)},
      {"Agent", field_text(node, "agent_version")},
      {"Registered", when_exactly(node, "registered_at", now)},
      {"Last seen", when_exactly(node, "last_heartbeat", now)},
      {"Clock skew", clock_skew(node)},
  });
  Table table({"INDEX", "UUID", "TYPE", "NAME", "MEMORY", "INSTANCE", "UTIL", "TEMP", "POWER",
               "FB USED", "XID"});
  // The GPU's latest telemetry; "-" for what it did not report.
  const auto reading = [](const Json& gpu, std::string_view key, std::string_view unit) {
    const std::string value = field_text(member(gpu, "telemetry"), key);
    return value.empty() ? std::string("-") : value + std::string(unit);
  };
  for (const auto& gpu : as_list(member(node, "gpus"))) {
    table.add_row({field_text(gpu, "index"), field_text(gpu, "uuid"), field_text(gpu, "type"),
                   field_text(gpu, "name"), memory(gpu), dash(field_text(gpu, "instance_id")),
                   reading(gpu, "gpu_util_pct", "%"), reading(gpu, "temperature_c", " C"),
                   reading(gpu, "power_w", " W"), reading(gpu, "fb_used_mib", " MiB"),
                   dash(field_text(member(member(gpu, "telemetry"), "last_xid"), "code"))});
  }
  out += "\n" + table.render();
  const auto& quarantined = as_list(member(node, "quarantined_gpus"));
  if (quarantined.empty()) return out;
  Table out_of_service({"QUARANTINED GPU", "UUID", "CAUSE", "SINCE", "WHAT"});
  for (const auto& gpu : quarantined) {
    out_of_service.add_row({field_text(gpu, "index"), field_text(gpu, "uuid"),
                            field_text(gpu, "cause"), when(gpu, "quarantined_at", now),
                            field_text(gpu, "message")});
  }
  return out + "\n" + out_of_service.render() +
         fmt::format("Release one after checking it: gpurent nodes release-gpu {} INDEX\n",
                     sanitize(field_text(node, "id")));
}

std::string join_token_view(const Json& token, std::string_view server_url, Timestamp now) {
  return render_fields({{"ID", field_text(token, "id")},
                        {"Token", field_text(token, "token")},
                        {"Expires", when_exactly(token, "expires_at", now)}}) +
         fmt::format(
             "\nStore the token now: it is not shown again. On the new node run:\n"
             "  gpurent agent --server {} --join-token {}\n",
             sanitize(server_url), sanitize(field_text(token, "token")));
}

std::string jobs_view(const Json& items, Timestamp now) {
  Table table({"ID", "NAME", "STATE", "GPUS", "NODES", "TASKS DONE", "CREATED"});
  for (const auto& job : as_list(items)) {
    table.add_row({field_text(job, "id"), own_name(job), field_text(job, "state"), gpus(job),
                   field_text(job, "nodes"), tasks_done(job), when(job, "created_at", now)});
  }
  return table.render();
}

std::string job_view(const Json& job, Timestamp now) {
  const Json& max_runtime = member(job, "max_runtime_s");
  std::string out = render_fields({
      {"ID", field_text(job, "id")},
      {"Name", own_name(job)},
      {"Tenant", field_text(job, "tenant_id")},
      {"State", field_text(job, "state")},
      {"Reason", field_text(job, "reason")},
      {"GPUs", gpus(job) + (integer(job, "nodes") > 1
                                ? fmt::format(" on each of {} nodes", integer(job, "nodes"))
                                : "")},
      {"Tasks", fmt::format("{} ({})", field_text(job, "array"), dash(task_counts_text(job)))},
      {"Retries", field_text(job, "retries")},
      {"Command", command_text(member(job, "command"))},
      {"Env", join_env(member(job, "env"))},
      {"Pricing", field_text(job, "pricing")},
      {"Max runtime",
       max_runtime.is_number_integer() ? format_duration(max_runtime.get<int64_t>()) : ""},
      {"Created", when_exactly(job, "created_at", now)},
      {"Started", when_exactly(job, "started_at", now)},
      {"Ended", when_exactly(job, "ended_at", now)},
  });
  const Json& tasks = member(job, "tasks");
  if (!tasks.is_array()) {
    return out + fmt::format("\n{} tasks: `gpurent job show {} --tasks` lists them.\n",
                             integer(job, "array"), sanitize(field_text(job, "id")));
  }
  Table table({"TASK", "STATE", "ATTEMPTS", "EXIT", "INSTANCES"});
  for (const auto& task : tasks) {
    table.add_row({field_text(task, "index"), field_text(task, "state"),
                   field_text(task, "attempts"), dash(field_text(task, "exit_code")),
                   dash(join_strings(member(task, "instances")))});
  }
  return out + "\n" + table.render();
}

std::string reservations_view(const Json& items, Timestamp now) {
  Table table({"ID", "TENANT", "GPUS", "STATE", "START", "END", "TOTAL", "PAID"});
  for (const auto& reservation : as_list(items)) {
    table.add_row({field_text(reservation, "id"), field_text(reservation, "tenant_id"),
                   gpus(reservation), field_text(reservation, "state"),
                   when(reservation, "start", now), when(reservation, "end", now),
                   amount(reservation, "total_micros"), amount(reservation, "paid_micros")});
  }
  return table.render();
}

// "CNY 18.00/GPU-h" and, for a term discount, ", 10 % off".
std::string reserved_price(const Json& reservation) {
  const int64_t discount = integer(reservation, "discount_permille");
  std::string text = format_price(integer(reservation, "price_per_gpu_hour_micros"),
                                  field_text(reservation, "currency"), "GPU-h");
  if (discount > 0) text += fmt::format(", {} off", format_permille_percent(discount));
  return text;
}

std::string reservation_quote_text(const Json& quote) {
  const std::string window = fmt::format("{} {} GPU(s) from {} to {}", integer(quote, "gpu_count"),
                                         field_text(quote, "gpu_type"), field_text(quote, "start"),
                                         field_text(quote, "end"));
  if (field_text(quote, "payment") == "monthly") {
    return fmt::format(
        "Booking {} costs {} ({}), paid every 30 days; the first payment is "
        "taken now. Book it?",
        window, amount(quote, "total_micros"), reserved_price(quote));
  }
  return fmt::format("Booking {} takes {} from your balance now ({}). Book it?", window,
                     amount(quote, "total_micros"), reserved_price(quote));
}

std::string reservation_view(const Json& reservation, Timestamp now) {
  return render_fields(
      {{"ID", field_text(reservation, "id")},
       {"Tenant", field_text(reservation, "tenant_id")},
       {"GPUs", gpus(reservation)},
       {"State", field_text(reservation, "state")},
       {"Start", when_exactly(reservation, "start", now)},
       {"End", when_exactly(reservation, "end", now)},
       {"Created", when_exactly(reservation, "created_at", now)},
       {"Price", reserved_price(reservation)},
       {"Total", amount(reservation, "total_micros")},
       {"Payment", field_text(reservation, "payment")},
       {"Paid", fmt::format("{}{}", amount(reservation, "paid_micros"),
                            member(reservation, "refunded") == Json(true) ? " (refunded)" : "")}});
}

std::string templates_view(const Json& items) {
  Table table({"NAME", "RUNTIMES", "IMAGE", "SERVICES", "GPU MEMORY", "BUILT IN"});
  for (const auto& t : as_list(items)) {
    const int64_t memory_gb = integer(t, "recommended_gpu_memory_gb");
    table.add_row({field_text(t, "name"), join_strings(member(t, "runtimes")),
                   field_text(t, "image"), join_strings(member(t, "services")),
                   memory_gb > 0 ? fmt::format(">= {} GB", memory_gb) : "any",
                   field_text(t, "builtin")});
  }
  return table.render();
}

std::string template_view(const Json& t) {
  const int64_t memory_gb = integer(t, "recommended_gpu_memory_gb");
  return render_fields({{"Name", field_text(t, "name")},
                        {"Description", field_text(t, "description")},
                        {"Runtimes", join_strings(member(t, "runtimes"))},
                        {"Image", field_text(t, "image")},
                        {"Command", command_text(member(t, "command"))},
                        {"Process", command_text(member(t, "process_command"))},
                        {"Env", join_env(member(t, "env"))},
                        {"Services", join_strings(member(t, "services"))},
                        {"GPU memory", memory_gb > 0 ? fmt::format(">= {} GB", memory_gb) : "any"},
                        {"Built in", field_text(t, "builtin")}});
}

std::string quota_view(const Json& quota) {
  std::string per_type;
  const Json& limits = member(quota, "max_gpus_per_type");
  if (limits.is_object()) {
    for (const auto& [type, count] : limits.items()) {
      if (!per_type.empty()) per_type += ", ";
      per_type += fmt::format("{} {}", count.dump(), type);
    }
  }
  const std::string max_instances = field_text(quota, "max_instances");
  return render_fields({{"Tenant", field_text(quota, "tenant_id")},
                        {"Max GPUs", per_type.empty() ? "no limit" : per_type},
                        {"Max instances", max_instances.empty() ? "no limit" : max_instances},
                        {"Weight", field_text(quota, "weight")}});
}

std::string volumes_view(const Json& items, Timestamp now) {
  Table table({"ID", "NAME", "SIZE", "NODE", "STATE", "CREATED"});
  for (const auto& volume : as_list(items)) {
    table.add_row({field_text(volume, "id"), field_text(volume, "name"),
                   fmt::format("{} GB", integer(volume, "size_gb")),
                   dash(field_text(volume, "node_id")), field_text(volume, "state"),
                   when(volume, "created_at", now)});
  }
  return table.render();
}

std::string volume_view(const Json& volume, Timestamp now) {
  return render_fields({{"ID", field_text(volume, "id")},
                        {"Name", field_text(volume, "name")},
                        {"Tenant", field_text(volume, "tenant_id")},
                        {"Size", fmt::format("{} GB", integer(volume, "size_gb"))},
                        {"Node", dash(field_text(volume, "node_id"))},
                        {"State", field_text(volume, "state")},
                        {"Created", when_exactly(volume, "created_at", now)}});
}

std::string events_view(const Json& items, Timestamp now) {
  Table table({"WHEN", "KIND", "OBJECT", "MESSAGE"});
  for (const auto& event : as_list(items)) {
    table.add_row({when(event, "at", now), field_text(event, "kind"),
                   field_text(event, "object_id"), field_text(event, "message")});
  }
  return table.render();
}

}  // namespace gpurent::cli
