// Text for people: aligned tables, "Key: value" blocks, and the short forms of money, memory,
// times and durations the CLI prints. Pure functions of their inputs ("now" is passed in), so
// they are tested without a server or a clock.
//
// Every string that came from the server passes through sanitize() on its way to the terminal: a
// name with an escape sequence or a line break cannot rewrite the screen or break the columns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/json.h"
#include "common/money.h"

namespace gpurent::cli {

// Columns separated by three spaces, each as wide as its widest cell (in terminal columns, so
// CJK names line up), no trailing spaces. Rows shorter than the header are padded with "".
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);
  std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

// "Key:    value" lines with the values aligned; empty values print as "-".
using Fields = std::vector<std::pair<std::string, std::string>>;
std::string render_fields(const Fields& fields);

// Control characters (C0, DEL, C1) become '?'; invalid UTF-8 bytes become U+FFFD.
std::string sanitize(std::string_view text);
// Terminal columns of sanitized UTF-8 text: East Asian wide characters count two.
size_t display_width(std::string_view text);

// The API's JSON pretty-printed (two spaces), with a final newline.
std::string pretty_json(const Json& value);

// The one way the CLI shows a price: "CNY 18.00/h", "CNY 18.00/GPU-h"; a price finer than a cent
// keeps its digits ("CNY 0.00012/GB-h") so that it never reads as zero.
std::string format_price(Micros price, std::string_view currency, std::string_view per);
std::string format_price_per_hour(Micros price, std::string_view currency);
// Per mille as a percentage: 400 -> "40 %", 125 -> "12.5 %".
std::string format_permille_percent(int64_t permille);
// A change to a balance: "+CNY 1000.00" added, "-CNY 32.69" taken.
std::string format_balance_change(Micros change, std::string_view currency);
// 81920 -> "80 GiB", 24564 -> "24 GiB" (one decimal below 10 GiB: "7.5 GiB"), 512 -> "512 MiB".
std::string format_memory_mb(int64_t memory_mb);
// Within 30 days: "12s ago", "5m ago", "3h ago", "2d ago", "in 23h"; further: "2026-11-30".
std::string format_relative(Timestamp t, Timestamp now);
// "45s", "12m03s", "3h04m", "2d03h".
std::string format_duration(int64_t seconds);
// An argv as a shell would need it typed: words with special characters single-quoted.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace gpurent::cli
