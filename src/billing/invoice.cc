#include "billing/invoice.h"

#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

namespace gpurent::billing {

using std::chrono::sys_days;
using std::chrono::year_month_day;

Timestamp Month::start() const {
  return Timestamp(
      sys_days(std::chrono::year{year} / std::chrono::month{static_cast<unsigned>(month)} / 1));
}
Timestamp Month::end() const {
  return month == 12 ? Month{year + 1, 1}.start() : Month{year, month + 1}.start();
}
std::string Month::id() const { return fmt::format("{:04}-{:02}", year, month); }

Month month_of(Timestamp t) {
  const year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  return Month{static_cast<int>(ymd.year()), static_cast<int>(static_cast<unsigned>(ymd.month()))};
}

std::optional<Month> parse_month(std::string_view id) {
  if (id.size() != 7 || id[4] != '-') return std::nullopt;
  Month m;
  const auto y = std::from_chars(id.data(), id.data() + 4, m.year);
  const auto mo = std::from_chars(id.data() + 5, id.data() + 7, m.month);
  if (y.ec != std::errc() || y.ptr != id.data() + 4 || mo.ec != std::errc() ||
      mo.ptr != id.data() + 7 || m.year < 1970 || m.month < 1 || m.month > 12) {
    return std::nullopt;
  }
  return m;
}

namespace {

// The run key ("<instance>:<run>") and cumulative billed seconds of a "usage:<instance>:<run>:<s>"
// id, or nullopt for another id.
std::optional<std::pair<std::string, int64_t>> usage_seconds(std::string_view id) {
  if (!id.starts_with("usage:")) return std::nullopt;
  const auto last = id.rfind(':');
  int64_t seconds = 0;
  const auto parsed = std::from_chars(id.data() + last + 1, id.data() + id.size(), seconds);
  if (parsed.ec != std::errc()) return std::nullopt;
  return std::make_pair(std::string(id.substr(6, last - 6)), seconds);
}

// A reserved term's payment, refund or earned revenue (billing/reserved.h).
bool is_reservation(const model::Transfer& t) { return t.id.starts_with("reservation"); }

struct Grouped {
  std::vector<InvoiceLine> lines;
  std::map<std::pair<std::string, std::string>, size_t> index;
  void add(std::string category, std::string description, int64_t quantity, std::string unit,
           Micros amount) {
    const auto [it, fresh] = index.emplace(std::make_pair(category, description), lines.size());
    if (fresh)
      lines.push_back({std::move(category), std::move(description), 0, std::move(unit), 0});
    lines[it->second].quantity += quantity;
    lines[it->second].amount += amount;
  }
};

}  // namespace

Invoice build_invoice(std::string_view tenant_id, std::string currency, Month month,
                      const std::vector<model::Transfer>& transfers, const DescribeRun& describe) {
  const std::string cash = model::tenant_cash_account(tenant_id);
  Invoice invoice{.id = month.id(),
                  .tenant_id = std::string(tenant_id),
                  .currency = std::move(currency),
                  .period_start = month.start(),
                  .period_end = month.end()};
  Grouped lines;
  Grouped prepaid;
  std::map<std::string, int64_t> seconds_billed;  // by run, before the transfer at hand
  for (const auto& t : transfers) {
    int64_t run_seconds = 0;
    std::string run;
    if (const auto usage = usage_seconds(t.id)) {
      int64_t& before = seconds_billed[usage->first];
      run_seconds = usage->second - before;
      before = usage->second;
      run = usage->first;
    }
    const bool out_of_cash = t.from_account == cash;
    const bool into_cash = t.to_account == cash;
    // Posting order is not time order (a meter posts at the last metered second), so no break.
    if (t.at >= month.end()) continue;
    if (t.at < month.start()) {
      if (out_of_cash) invoice.opening_balance -= t.amount;
      if (into_cash) invoice.opening_balance += t.amount;
      continue;
    }
    if (!out_of_cash && !into_cash) {
      if (t.kind == model::TransferKind::kRecognition) {
        prepaid.add(is_reservation(t) ? "reserved_usage" : "package_usage", t.reference, 1, "items",
                    t.amount);
      }
      continue;
    }
    const Micros amount = out_of_cash ? t.amount : -t.amount;
    switch (t.kind) {
      case model::TransferKind::kUsage:
        if (!run.empty()) {
          lines.add("gpu_time", describe(run), run_seconds, "s", amount);
        } else if (t.id.starts_with("volume:")) {
          lines.add("storage", "volumes", 1, "items", amount);
        } else {
          lines.add("other", t.id, 1, "items", amount);
        }
        break;
      case model::TransferKind::kTopup:
        lines.add("payments", "top-ups", 1, "items", amount);
        break;
      case model::TransferKind::kCredit:
        lines.add("credits", t.from_account, 1, "items", amount);
        break;
      case model::TransferKind::kPurchase:
        lines.add(is_reservation(t) ? "reserved_terms" : "packages", t.reference, 1, "items",
                  amount);
        break;
      case model::TransferKind::kRefund:
        lines.add("refunds", t.reference, 1, "items", amount);
        break;
      case model::TransferKind::kRecognition:
        lines.add("other", t.id, 1, "items", amount);
        break;
    }
  }
  invoice.lines = std::move(lines.lines);
  invoice.prepaid = std::move(prepaid.lines);
  invoice.closing_balance = invoice.opening_balance;
  for (const auto& line : invoice.lines) {
    invoice.closing_balance -= line.amount;
    if (line.category == "payments") {
      invoice.payments += line.amount;
    } else if (line.category == "credits") {
      invoice.credits += line.amount;
    } else {
      invoice.charges += line.amount;
    }
  }
  return invoice;
}

std::vector<Month> invoice_months(std::string_view tenant_id,
                                  const std::vector<model::Transfer>& transfers) {
  const std::string cash = model::tenant_cash_account(tenant_id);
  // Posting order is not time order (a meter posts at its last metered second, an SLA credit at
  // the end of the month it is for), so the months are collected and ordered.
  std::set<std::pair<int, int>> months;
  for (const auto& t : transfers) {
    if (t.from_account != cash && t.to_account != cash) continue;
    const Month m = month_of(t.at);
    months.emplace(m.year, m.month);
  }
  std::vector<Month> out;
  for (const auto& [year, month] : months) out.push_back(Month{year, month});
  return out;
}

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

}  // namespace

std::string invoice_csv(const Invoice& invoice) {
  std::string out = "invoice,tenant_id,category,description,quantity,unit,amount,currency\r\n";
  const auto row = [&](std::string_view category, std::string_view description, int64_t quantity,
                       std::string_view unit, Micros amount) {
    out += fmt::format("{},{},{},{},{},{},{},{}\r\n", invoice.id, csv_field(invoice.tenant_id),
                       csv_field(category), csv_field(description), quantity, unit,
                       format_micros(amount), invoice.currency);
  };
  for (const auto& line : invoice.lines) {
    row(line.category, line.description, line.quantity, line.unit, line.amount);
  }
  for (const auto& line : invoice.prepaid) {
    row("prepaid:" + line.category, line.description, line.quantity, line.unit, line.amount);
  }
  row("total", "opening_balance", 0, "", invoice.opening_balance);
  row("total", "charges", 0, "", invoice.charges);
  row("total", "credits", 0, "", invoice.credits);
  row("total", "payments", 0, "", invoice.payments);
  row("total", "closing_balance", 0, "", invoice.closing_balance);
  return out;
}

}  // namespace gpurent::billing
