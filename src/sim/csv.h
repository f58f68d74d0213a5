// CSV input for the simulator: a small, strict reader of RFC 4180 text.
//
// Contract:
//   - The first record is the header; names are trimmed of spaces and must be unique and
//     non-empty. A UTF-8 byte-order mark before it is skipped.
//   - Fields are separated by ',' and may be quoted with '"' (a doubled '"' inside quotes is one
//     quote; quoted fields may hold commas and line breaks). Unquoted fields are trimmed of
//     spaces and tabs; quoted ones are kept as written.
//   - Records end with LF or CRLF; a lone CR is accepted as well. Blank lines are skipped.
//   - Every record must have as many fields as the header. Anything else (a stray quote, an
//     unterminated quoted field, a short or long record) is an Error of code "invalid_csv" whose
//     message names the source and the line: "WORK.csv line 7: 3 fields, the header has 9".
//   - Bounded: at most kMaxCsvBytes of text is read.
//
// Typed access goes through CsvColumns, which resolves column names once and parses fields with
// errors that name the source, line and column. Numbers are parsed exactly (no floating point):
// "0.5" cores with scale 1000 is 500 milli.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::sim {

inline constexpr size_t kMaxCsvBytes = size_t{1} << 30;

struct CsvRecord {
  int line = 0;  // 1-based line on which the record starts
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string source;  // a name for messages: the file name
  std::vector<std::string> header;
  int header_line = 1;
  std::vector<CsvRecord> records;  // without the header
};

Result<CsvTable> parse_csv(std::string_view text, std::string source);
// Reads and parses a file; a missing or unreadable file is an Error of code "file_unreadable".
Result<CsvTable> read_csv_file(const std::string& path);

// The columns of one table, looked up by name.
class CsvColumns {
 public:
  // Fails ("invalid_csv") when a required column is missing. Columns that are neither required
  // nor optional are refused too, so a misspelt optional column is not silently ignored.
  static Result<CsvColumns> resolve(const CsvTable& table, std::vector<std::string_view> required,
                                    std::vector<std::string_view> optional = {});

  // The field of a column in a record; "" when an optional column is absent from the table.
  std::string_view field(const CsvRecord& record, std::string_view column) const;
  bool has(std::string_view column) const;

  // A non-empty field.
  Result<std::string> text(const CsvRecord& record, std::string_view column) const;
  // An integer in [min, max]; an empty field is an error.
  Result<int64_t> integer(const CsvRecord& record, std::string_view column, int64_t min,
                          int64_t max) const;
  // Like integer(), but an empty field (or an absent optional column) gives nullopt.
  Result<std::optional<int64_t>> optional_integer(const CsvRecord& record, std::string_view column,
                                                  int64_t min, int64_t max) const;
  // A non-negative decimal ("12", "0.5", "1.25") times `scale`, which must come out whole:
  // decimal(r, "cpu", 1000) reads cores as millicores. An empty field is an error.
  Result<int64_t> decimal(const CsvRecord& record, std::string_view column, int64_t scale,
                          int64_t max) const;

  // "SOURCE line N: column C: <why>", as an "invalid_csv" Error.
  Error error(const CsvRecord& record, std::string_view column, std::string_view why) const;
  // "SOURCE line N: <why>", for what is wrong with the record as a whole.
  Error error(const CsvRecord& record, std::string_view why) const;

 private:
  CsvColumns(const CsvTable& table, std::vector<std::pair<std::string, int>> index)
      : source_(table.source), index_(std::move(index)) {}
  std::optional<int> find(std::string_view column) const;

  std::string source_;
  std::vector<std::pair<std::string, int>> index_;  // column name -> position in the record
};

// Parses a whole decimal integer in [min, max]: digits with an optional leading '-'.
std::optional<int64_t> parse_int(std::string_view text, int64_t min, int64_t max);
// Parses a non-negative decimal times scale (see CsvColumns::decimal); nullopt when malformed,
// not whole after scaling, or above max.
std::optional<int64_t> parse_scaled_decimal(std::string_view text, int64_t scale, int64_t max);

}  // namespace gpurent::sim
