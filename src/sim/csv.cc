#include "sim/csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>

namespace gpurent::sim {
namespace {

constexpr std::string_view kCode = "invalid_csv";
constexpr std::string_view kBom = "\xEF\xBB\xBF";

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

Error csv_error(const std::string& source, int line, std::string_view why) {
  return Error::invalid(std::string(kCode), fmt::format("{} line {}: {}", source, line, why));
}

// Walks the text one record at a time, counting lines (including those inside quoted fields).
class Scanner {
 public:
  Scanner(std::string_view text, const std::string& source) : text_(text), source_(source) {
    if (text_.starts_with(kBom)) pos_ = kBom.size();
  }

  bool done() const { return pos_ >= text_.size(); }

  // The next record; blank lines come back as a single unquoted empty field.
  Result<CsvRecord> next(bool* blank) {
    CsvRecord record{.line = line_};
    bool any_quoted = false;
    while (true) {
      bool quoted = false;
      GPURENT_TRY(field, next_field(record.line, &quoted));
      any_quoted = any_quoted || quoted;
      record.fields.push_back(std::move(field));
      if (done()) break;
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      end_line();
      break;
    }
    *blank = !any_quoted && record.fields.size() == 1 && record.fields[0].empty();
    return record;
  }

 private:
  // Consumes LF, CRLF or a lone CR.
  void end_line() {
    if (text_[pos_] == '\r') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
    ++line_;
  }

  Result<std::string> next_field(int record_line, bool* quoted) {
    size_t start = pos_;
    while (start < text_.size() && (text_[start] == ' ' || text_[start] == '\t')) ++start;
    if (start < text_.size() && text_[start] == '"') {
      *quoted = true;
      pos_ = start + 1;
      return quoted_field(record_line);
    }
    const size_t end = text_.find_first_of(",\r\n", pos_);
    const std::string_view raw =
        text_.substr(pos_, end == std::string_view::npos ? end : end - pos_);
    if (raw.find('"') != std::string_view::npos) {
      return fail(csv_error(source_, line_, "a quote inside an unquoted field"));
    }
    pos_ = end == std::string_view::npos ? text_.size() : end;
    return std::string(trim(raw));
  }

  Result<std::string> quoted_field(int record_line) {
    std::string out;
    while (true) {
      if (done()) return fail(csv_error(source_, record_line, "a quoted field is not closed"));
      const char c = text_[pos_++];
      if (c == '"') {
        if (pos_ < text_.size() && text_[pos_] == '"') {
          out += '"';
          ++pos_;
          continue;
        }
        break;
      }
      // A line break inside quotes is data, but still a line for the messages that follow.
      if (c == '\n' || (c == '\r' && (pos_ >= text_.size() || text_[pos_] != '\n'))) ++line_;
      out += c;
    }
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    if (!done() && text_[pos_] != ',' && text_[pos_] != '\r' && text_[pos_] != '\n') {
      return fail(csv_error(source_, line_, "unexpected text after a closing quote"));
    }
    return out;
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

Result<CsvTable> parse_csv(std::string_view text, std::string source) {
  CsvTable table{.source = std::move(source)};
  if (text.size() > kMaxCsvBytes) {
    return fail(Error::invalid(
        std::string(kCode), fmt::format("{}: larger than {} bytes", table.source, kMaxCsvBytes)));
  }
  Scanner scanner(text, table.source);
  bool have_header = false;
  while (!scanner.done()) {
    bool blank = false;
    GPURENT_TRY(record, scanner.next(&blank));
    if (blank) continue;
    if (!have_header) {
      std::set<std::string, std::less<>> seen;
      for (auto& name : record.fields) {
        name = std::string(trim(name));
        if (name.empty()) return fail(csv_error(table.source, record.line, "an empty column name"));
        if (!seen.insert(name).second) {
          return fail(
              csv_error(table.source, record.line, fmt::format("column '{}' appears twice", name)));
        }
      }
      table.header = std::move(record.fields);
      table.header_line = record.line;
      have_header = true;
      continue;
    }
    if (record.fields.size() != table.header.size()) {
      return fail(csv_error(
          table.source, record.line,
          fmt::format("{} fields, the header has {}", record.fields.size(), table.header.size())));
    }
    table.records.push_back(std::move(record));
  }
  if (!have_header) {
    return fail(Error::invalid(std::string(kCode),
                               fmt::format("{}: empty, expected a header row", table.source)));
  }
  return table;
}

Result<CsvTable> read_csv_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(Error::invalid("file_unreadable",
                               fmt::format("cannot read {}: {}", path, std::strerror(errno))));
  }
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size < 0 || static_cast<size_t>(size) > kMaxCsvBytes) {
    return fail(Error::invalid(std::string(kCode),
                               fmt::format("{}: larger than {} bytes", path, kMaxCsvBytes)));
  }
  std::string text(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(text.data(), size)) {
    return fail(Error::invalid("file_unreadable", fmt::format("cannot read {}", path)));
  }
  return parse_csv(text, path);
}

Result<CsvColumns> CsvColumns::resolve(const CsvTable& table,
                                       std::vector<std::string_view> required,
                                       std::vector<std::string_view> optional) {
  std::vector<std::pair<std::string, int>> index;
  for (size_t i = 0; i < table.header.size(); ++i) {
    const std::string& name = table.header[i];
    if (std::ranges::find(required, name) == required.end() &&
        std::ranges::find(optional, name) == optional.end()) {
      return fail(
          csv_error(table.source, table.header_line, fmt::format("unknown column '{}'", name)));
    }
    index.emplace_back(name, static_cast<int>(i));
  }
  for (const auto name : required) {
    if (std::ranges::find(table.header, name) == table.header.end()) {
      return fail(csv_error(table.source, table.header_line,
                            fmt::format("the column '{}' is missing", name)));
    }
  }
  return CsvColumns(table, std::move(index));
}

std::optional<int> CsvColumns::find(std::string_view column) const {
  for (const auto& [name, position] : index_) {
    if (name == column) return position;
  }
  return std::nullopt;
}

bool CsvColumns::has(std::string_view column) const { return find(column).has_value(); }

std::string_view CsvColumns::field(const CsvRecord& record, std::string_view column) const {
  const auto position = find(column);
  return position ? std::string_view(record.fields[*position]) : std::string_view();
}

Error CsvColumns::error(const CsvRecord& record, std::string_view column,
                        std::string_view why) const {
  return csv_error(source_, record.line, fmt::format("column {}: {}", column, why));
}

Error CsvColumns::error(const CsvRecord& record, std::string_view why) const {
  return csv_error(source_, record.line, why);
}

Result<std::string> CsvColumns::text(const CsvRecord& record, std::string_view column) const {
  const auto value = field(record, column);
  if (value.empty()) return fail(error(record, column, "empty"));
  return std::string(value);
}

Result<int64_t> CsvColumns::integer(const CsvRecord& record, std::string_view column, int64_t min,
                                    int64_t max) const {
  GPURENT_TRY(value, optional_integer(record, column, min, max));
  if (!value) return fail(error(record, column, "empty"));
  return *value;
}

Result<std::optional<int64_t>> CsvColumns::optional_integer(const CsvRecord& record,
                                                            std::string_view column, int64_t min,
                                                            int64_t max) const {
  const auto value = field(record, column);
  if (value.empty()) return std::optional<int64_t>();
  const auto parsed = parse_int(value, min, max);
  if (!parsed) {
    return fail(error(record, column,
                      fmt::format("'{}' is not a whole number in [{}, {}]", value, min, max)));
  }
  return parsed;
}

Result<int64_t> CsvColumns::decimal(const CsvRecord& record, std::string_view column, int64_t scale,
                                    int64_t max) const {
  const auto value = field(record, column);
  if (value.empty()) return fail(error(record, column, "empty"));
  const auto parsed = parse_scaled_decimal(value, scale, max);
  if (!parsed) {
    return fail(error(record, column,
                      fmt::format("'{}' is not a number from 0 to {} in steps of 1/{}", value,
                                  max / scale, scale)));
  }
  return *parsed;
}

std::optional<int64_t> parse_int(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < min || value > max) return std::nullopt;
  return value;
}

std::optional<int64_t> parse_scaled_decimal(std::string_view text, int64_t scale, int64_t max) {
  constexpr size_t kMaxDigits = 18;
  const auto dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  const auto all_digits = [](std::string_view s) {
    return std::ranges::all_of(s, [](char c) { return c >= '0' && c <= '9'; });
  };
  if ((whole.empty() && fraction.empty()) || !all_digits(whole) || !all_digits(fraction) ||
      (dot != std::string_view::npos && fraction.empty())) {
    return std::nullopt;
  }
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  if (whole.size() > kMaxDigits || fraction.size() > kMaxDigits) return std::nullopt;
  __int128 whole_value = 0;
  for (const char c : whole) whole_value = whole_value * 10 + (c - '0');
  __int128 fraction_value = 0;
  __int128 denominator = 1;
  for (const char c : fraction) {
    fraction_value = fraction_value * 10 + (c - '0');
    denominator *= 10;
  }
  const __int128 scaled_fraction = fraction_value * scale;
  if (scaled_fraction % denominator != 0) return std::nullopt;
  const __int128 value = whole_value * scale + scaled_fraction / denominator;
  if (value > max) return std::nullopt;
  return static_cast<int64_t>(value);
}

}  // namespace gpurent::sim
