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

std::string dash(const std::string& value) { return value.empty() ? "-" : value; }

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

const Json& as_list(const Json& items) {
  static const Json kEmpty = Json::array();
  return items.is_array() ? items : kEmpty;
}

}  // namespace

std::string field_text(const Json& object, std::string_view key) {
  const Json& value = member(object, key);
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  return "";
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
  std::string scopes;
  if (const auto it = whoami.find("scopes"); it != whoami.end() && it->is_array()) {
    for (const auto& scope : *it) {
      if (scope.is_string()) scopes += (scopes.empty() ? "" : " ") + scope.get<std::string>();
    }
  }
  return render_fields({{"Tenant", field_text(whoami, "tenant_id")},
                        {"Key", field_text(whoami, "key_id")},
                        {"Role", field_text(whoami, "role")},
                        {"Scopes", scopes.empty() ? "*" : sanitize(scopes)}});
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
static std::string reserved_price(const Json& reservation) {
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
  const auto limit = [&](std::string_view field) {
    const std::string count = field_text(quota, field);
    return count.empty() ? std::string("no limit") : count;
  };
  return render_fields({{"Tenant", field_text(quota, "tenant_id")},
                        {"Max GPUs", per_type.empty() ? "no limit" : per_type},
                        {"Max instances", limit("max_instances")},
                        {"Max queued", limit("max_queued")},
                        {"Max array", limit("max_array")},
                        {"Max body bytes", limit("max_body_bytes")},
                        {"Weight", field_text(quota, "weight")}});
}

Json last_items(Json items, size_t tail) {
  if (tail > 0 && items.is_array() && items.size() > tail) {
    items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(items.size() - tail));
  }
  return items;
}

std::string audit_view(const Json& items, Timestamp now) {
  Table table({"WHEN", "KEY", "ROLE", "FROM", "ACTION", "TARGET", "STATUS", "OUTCOME"});
  for (const auto& entry : as_list(items)) {
    const auto status = entry.find("status");
    table.add_row(
        {when(entry, "at", now), dash(field_text(entry, "key_id")), dash(field_text(entry, "role")),
         field_text(entry, "address"), field_text(entry, "action"), field_text(entry, "target"),
         status != entry.end() && status->is_number_integer() ? std::to_string(status->get<int>())
                                                              : "-",
         field_text(entry, "outcome")});
  }
  return table.render();
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
