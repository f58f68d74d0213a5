#include "cli/output.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace gpurent::cli {
namespace {

constexpr std::string_view kColumnGap = "   ";
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Decodes one UTF-8 sequence at text[pos]; returns its length, 0 when it is invalid.
size_t decode_utf8(std::string_view text, size_t pos, char32_t* out) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const unsigned char lead = byte(0);
  size_t length;
  char32_t code;
  if (lead < 0x80) {
    *out = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3F);
  }
  // Overlong forms, surrogates and values beyond Unicode are invalid.
  static constexpr char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMinimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  *out = code;
  return length;
}

bool is_wide(char32_t c) {
  return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF && c != 0x303F) ||
         (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
         (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
         (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD);
}

std::string pad(const std::string& text, size_t width) {
  return text + std::string(width - std::min(width, display_width(text)), ' ');
}

}  // namespace

Table::Table(std::vector<std::string> headers) { rows_.push_back(std::move(headers)); }

void Table::add_row(std::vector<std::string> cells) {
  for (auto& cell : cells) cell = sanitize(cell);
  cells.resize(rows_[0].size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<size_t> widths(rows_[0].size(), 0);
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += kColumnGap;
      line += i + 1 == row.size() ? row[i] : pad(row[i], widths[i]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

std::string render_fields(const Fields& fields) {
  size_t width = 0;
  for (const auto& [key, value] : fields) width = std::max(width, display_width(key) + 1);
  std::string out;
  for (const auto& [key, value] : fields) {
    out += fmt::format("{}  {}\n", pad(key + ":", width), value.empty() ? "-" : sanitize(value));
  }
  return out;
}

std::string sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t code;
    const size_t length = decode_utf8(text, pos, &code);
    if (length == 0) {
      out += kReplacement;
      ++pos;
      continue;
    }
    if (code < 0x20 || (code >= 0x7F && code <= 0x9F)) {
      out.push_back('?');
    } else {
      out.append(text.substr(pos, length));
    }
    pos += length;
  }
  return out;
}

size_t display_width(std::string_view text) {
  size_t width = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t code;
    const size_t length = decode_utf8(text, pos, &code);
    width += length != 0 && is_wide(code) ? 2 : 1;
    pos += std::max<size_t>(length, 1);
  }
  return width;
}

std::string pretty_json(const Json& value) {
  return value.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string format_price(Micros price, std::string_view currency, std::string_view per) {
  if (price % 10'000 == 0) return fmt::format("{}/{}", format_money(price, currency), per);
  std::string digits = format_micros(price);  // six decimals: drop the zeros after the cents
  while (digits.ends_with('0')) digits.pop_back();
  return fmt::format("{}{}{}/{}", currency, currency.empty() ? "" : " ", digits, per);
}

std::string format_price_per_hour(Micros price, std::string_view currency) {
  return format_price(price, currency, "h");
}

std::string format_permille_percent(int64_t permille) {
  return permille % 10 == 0 ? fmt::format("{} %", permille / 10)
                            : fmt::format("{}.{} %", permille / 10, permille % 10);
}

std::string format_balance_change(Micros change, std::string_view currency) {
  return (change > 0 ? "+" : "") + format_money(change, currency);
}

std::string format_memory_mb(int64_t memory_mb) {
  if (memory_mb < 1024) return fmt::format("{} MiB", memory_mb);
  if (memory_mb < 10 * 1024) {
    const int64_t tenths = (memory_mb * 10 + 512) / 1024;
    return tenths % 10 == 0 ? fmt::format("{} GiB", tenths / 10)
                            : fmt::format("{}.{} GiB", tenths / 10, tenths % 10);
  }
  return fmt::format("{} GiB", (memory_mb + 512) / 1024);
}

std::string format_relative(Timestamp t, Timestamp now) {
  using std::chrono::duration_cast;
  const int64_t seconds = duration_cast<std::chrono::seconds>(now - t).count();
  const int64_t magnitude = std::abs(seconds);
  std::string amount;
  if (magnitude < 60) {
    amount = fmt::format("{}s", magnitude);
  } else if (magnitude < 3600) {
    amount = fmt::format("{}m", magnitude / 60);
  } else if (magnitude < 48 * 3600) {
    amount = fmt::format("{}h", magnitude / 3600);
  } else if (magnitude < 30 * 86400) {
    amount = fmt::format("{}d", magnitude / 86400);
  } else {
    return format_rfc3339(t).substr(0, 10);
  }
  return seconds >= 0 ? amount + " ago" : "in " + amount;
}

std::string format_duration(int64_t seconds) {
  if (seconds < 60) return fmt::format("{}s", seconds);
  if (seconds < 3600) return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  if (seconds < 86400) return fmt::format("{}h{:02}m", seconds / 3600, seconds % 3600 / 60);
  return fmt::format("{}d{:02}h", seconds / 86400, seconds % 86400 / 3600);
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_@%+=:,./-") == std::string::npos;
    if (plain) {
      out += word;
      continue;
    }
    out += '\'';
    for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace gpurent::cli
