// CSV: the simulator's inputs (src/sim/csv.h, src/sim/inputs.h: gpurent's NODES.csv and WORK.csv,
// the Alibaba trace's node and pod lists) and the invoice CSV (src/billing/invoice.h), the one CSV
// the platform writes. The first byte picks what the rest is:
//
//   even: a CSV file, parsed, written back and parsed again, then read as each of the four inputs
//   odd:  an invoice's free-text fields (tenant id, line categories and descriptions, separated
//         by NUL), written by invoice_csv and read back by parse_csv
//
// Invariants: a bad file is an Error "invalid_csv" naming the line, never a crash or undefined
// behaviour; every record has the header's width, the header's names are unique, non-empty and
// trimmed; a table written back as RFC 4180 (every field quoted) parses to the same table; what
// the readers accept keeps their bounds (sched::validate holds for every request, names are
// unique); invoice_csv's fields come back as written (an unquoted one trimmed of spaces and tabs,
// as parse_csv documents).
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "billing/invoice.h"
#include "fuzz_check.h"
#include "sim/csv.h"
#include "sim/inputs.h"

namespace gpurent::sim {
namespace {

using fuzz::shown;

std::string quote_field(std::string_view field) {
  std::string out = "\"";
  for (const char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string write_csv(const CsvTable& table) {
  std::string out;
  const auto row = [&out](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) out += ',';
      out += quote_field(fields[i]);
    }
    out += "\r\n";
  };
  row(table.header);
  for (const auto& record : table.records) row(record.fields);
  return out;
}

void check_error(const Error& error, std::string_view text) {
  FUZZ_CHECK(error.kind == ErrorKind::kInvalidArgument && error.code == "invalid_csv" &&
                 error.message.starts_with("fuzz.csv"),
             "{} ({}) for {}", error.code, error.message, shown(text));
}

template <class Items>
void check_items(const Result<Items>& items, std::string_view text) {
  if (!items) check_error(items.error(), text);
}

void check_table(std::string_view text) {
  auto table = parse_csv(text, "fuzz.csv");
  if (!table) {
    check_error(table.error(), text);
    return;
  }
  std::set<std::string, std::less<>> names;
  for (const auto& name : table->header) {
    FUZZ_CHECK(!name.empty() && names.insert(name).second, "header name {}", shown(name));
    FUZZ_CHECK(name.find_first_of(" \t") != 0 && name.find_last_of(" \t") != name.size() - 1,
               "header name {} is not trimmed", shown(name));
  }
  int line = table->header_line;
  for (const auto& record : table->records) {
    FUZZ_CHECK(record.fields.size() == table->header.size(), "a record of {} fields, header {}",
               record.fields.size(), table->header.size());
    FUZZ_CHECK(record.line > line, "record line {} after {}", record.line, line);
    line = record.line;
  }
  const std::string written = write_csv(*table);
  auto again = parse_csv(written, "fuzz.csv");
  FUZZ_CHECK(again.has_value(), "the table written back as {} is refused: {}", shown(written),
             again.error().message);
  FUZZ_CHECK(again->header == table->header && again->records.size() == table->records.size(),
             "{} written as {} reads back otherwise", shown(text), shown(written));
  for (size_t i = 0; i < table->records.size(); ++i) {
    FUZZ_CHECK(again->records[i].fields == table->records[i].fields,
               "record {} of {} written as {} reads back otherwise", i, shown(text),
               shown(written));
  }

  auto nodes = nodes_from_csv(*table);
  check_items(nodes, text);
  auto work = work_from_csv(*table);
  check_items(work, text);
  auto trace_nodes = nodes_from_alibaba(*table);
  check_items(trace_nodes, text);
  auto pods = work_from_alibaba(*table);
  check_items(pods, text);
  for (const auto* list : {&nodes, &trace_nodes}) {
    if (!*list) continue;
    std::set<std::string> ids;
    for (const auto& node : **list) {
      FUZZ_CHECK(ids.insert(node.id).second, "node {} twice", shown(node.id));
      FUZZ_CHECK(node.gpus.empty() == node.gpu_type.empty(), "node {}", shown(node.id));
      FUZZ_CHECK(node.cpu_milli >= 0 && node.memory_mib >= 0, "node {}", shown(node.id));
    }
  }
  for (const auto* list : {&work, &pods}) {
    if (!*list) continue;
    std::set<std::string> ids;
    for (const auto& item : **list) {
      FUZZ_CHECK(ids.insert(item.id).second, "item {} twice", shown(item.id));
      FUZZ_CHECK(sched::validate(item.request).has_value(), "item {} is not a valid request",
                 shown(item.id));
      FUZZ_CHECK(item.arrival_s >= 0 && item.duration_s.value_or(0) >= 0 && item.gpu_milli() >= 0,
                 "item {}", shown(item.id));
    }
  }
}

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return std::string(text.substr(first, text.find_last_not_of(" \t") - first + 1));
}

// What parse_csv gives back for a field invoice_csv wrote.
std::string read_back(std::string_view field) {
  const bool is_quoted = field.find_first_of(",\"\r\n") != std::string_view::npos;
  return is_quoted ? std::string(field) : trimmed(field);
}

void check_invoice(std::string_view input) {
  fuzz::Input parts(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  billing::Invoice invoice;
  invoice.id = "2026-12";
  invoice.currency = "CNY";
  invoice.tenant_id = std::string(parts.until('\0'));
  int64_t amount = 1;
  while (!parts.empty() && invoice.lines.size() + invoice.prepaid.size() < 16) {
    billing::InvoiceLine line;
    const uint8_t knob = parts.byte();
    line.category = std::string(parts.until('\0'));
    line.description = std::string(parts.until('\0'));
    line.quantity = knob * 3600;
    line.unit = knob & 1 ? "s" : "items";
    amount = amount * -7 + knob;
    line.amount = amount;
    (knob & 2 ? invoice.prepaid : invoice.lines).push_back(std::move(line));
  }
  invoice.opening_balance = amount;
  const std::string csv = billing::invoice_csv(invoice);
  auto table = parse_csv(csv, "invoice.csv");
  FUZZ_CHECK(table.has_value(), "invoice_csv wrote what parse_csv refuses ({}): {}",
             table.error().message, shown(csv));
  FUZZ_CHECK(table->header.size() == 8, "{} columns", table->header.size());
  const size_t rows = invoice.lines.size() + invoice.prepaid.size() + 5;
  FUZZ_CHECK(table->records.size() == rows, "{} rows, not {}: {}", table->records.size(), rows,
             shown(csv));
  std::vector<const billing::InvoiceLine*> lines;
  for (const auto& line : invoice.lines) lines.push_back(&line);
  for (const auto& line : invoice.prepaid) lines.push_back(&line);
  for (size_t i = 0; i < table->records.size(); ++i) {
    const auto& fields = table->records[i].fields;
    FUZZ_CHECK(fields[0] == invoice.id && fields[1] == read_back(invoice.tenant_id) &&
                   fields[7] == invoice.currency,
               "row {} of {}", i, shown(csv));
    if (i >= lines.size()) continue;
    const std::string category =
        i < invoice.lines.size() ? lines[i]->category : "prepaid:" + lines[i]->category;
    FUZZ_CHECK(fields[2] == read_back(category) && fields[3] == read_back(lines[i]->description) &&
                   fields[4] == std::to_string(lines[i]->quantity) && fields[5] == lines[i]->unit,
               "row {} reads {} | {} from {}", i, shown(fields[2]), shown(fields[3]), shown(csv));
  }
}

}  // namespace
}  // namespace gpurent::sim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpurent::fuzz::Input input(data, size);
  const uint8_t mode = input.byte();
  const std::string_view rest = input.rest();
  try {
    if (mode & 1) {
      gpurent::sim::check_invoice(rest);
    } else {
      gpurent::sim::check_table(rest);
    }
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, "an exception escaped: {}", e.what());
  }
  return 0;
}
