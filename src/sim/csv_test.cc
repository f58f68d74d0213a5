#include "sim/csv.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace gpurent::sim {
namespace {

CsvTable parsed(std::string_view text) {
  auto table = parse_csv(text, "t.csv");
  EXPECT_TRUE(table.has_value()) << table.error().message;
  return table ? *table : CsvTable{};
}

std::string error_of(std::string_view text) {
  auto table = parse_csv(text, "t.csv");
  EXPECT_FALSE(table.has_value());
  if (table) return "";
  EXPECT_EQ(table.error().code, "invalid_csv");
  return table.error().message;
}

TEST(Csv, ReadsHeaderAndRecordsWithTheirLines) {
  const CsvTable table = parsed("a, b ,c\n1,2,3\n\n 4 ,,6\n");
  EXPECT_EQ(table.header, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(table.records.size(), 2u);
  EXPECT_EQ(table.records[0].line, 2);
  EXPECT_EQ(table.records[0].fields, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(table.records[1].line, 4);  // the blank line is skipped but counted
  EXPECT_EQ(table.records[1].fields, (std::vector<std::string>{"4", "", "6"}));
}

TEST(Csv, QuotedFieldsKeepCommasQuotesAndLineBreaks) {
  const CsvTable table =
      parsed("id,note\n\"x,1\",\"say \"\"hi\"\"\"\n\"y\",\"two\nlines\"\nz, \" kept \" \n");
  ASSERT_EQ(table.records.size(), 3u);
  EXPECT_EQ(table.records[0].fields, (std::vector<std::string>{"x,1", "say \"hi\""}));
  EXPECT_EQ(table.records[1].fields, (std::vector<std::string>{"y", "two\nlines"}));
  EXPECT_EQ(table.records[1].line, 3);
  // The line break inside the quotes moved the next record to line 5.
  EXPECT_EQ(table.records[2].line, 5);
  EXPECT_EQ(table.records[2].fields, (std::vector<std::string>{"z", " kept "}));
}

TEST(Csv, AcceptsCrlfLoneCrBomAndNoFinalNewline) {
  for (const std::string_view text : {"\xEF\xBB\xBF"
                                      "a,b\r\n1,2\r\n3,4",
                                      "a,b\r1,2\r3,4\r", "a,b\n1,2\n3,4\n\n\n"}) {
    const CsvTable table = parsed(text);
    EXPECT_EQ(table.header, (std::vector<std::string>{"a", "b"})) << text;
    ASSERT_EQ(table.records.size(), 2u) << text;
    EXPECT_EQ(table.records[1].fields, (std::vector<std::string>{"3", "4"})) << text;
    EXPECT_EQ(table.records[1].line, 3) << text;
  }
  // An empty last field survives the line end.
  EXPECT_EQ(parsed("a,b\r\n1,\r\n").records[0].fields, (std::vector<std::string>{"1", ""}));
}

TEST(Csv, RefusesMalformedTextNamingTheLine) {
  EXPECT_EQ(error_of("a,b\n1,2\n1,2,3\n"), "t.csv line 3: 3 fields, the header has 2");
  EXPECT_EQ(error_of("a,b\n1\n"), "t.csv line 2: 1 fields, the header has 2");
  EXPECT_EQ(error_of("a,b\n1,x\"y\n"), "t.csv line 2: a quote inside an unquoted field");
  EXPECT_EQ(error_of("a,b\n1,2\n3,\"open\n\nstill open"),
            "t.csv line 3: a quoted field is not closed");
  EXPECT_EQ(error_of("a,b\n\"x\"y,2\n"), "t.csv line 2: unexpected text after a closing quote");
  EXPECT_EQ(error_of(""), "t.csv: empty, expected a header row");
  EXPECT_EQ(error_of("\n\n"), "t.csv: empty, expected a header row");
  EXPECT_EQ(error_of("a,b,a\n"), "t.csv line 1: column 'a' appears twice");
  EXPECT_EQ(error_of("a,,b\n"), "t.csv line 1: an empty column name");
}

TEST(CsvColumns, ResolvesRequiredAndOptionalColumns) {
  const CsvTable table = parsed("name,count\nx,3\n");
  auto columns = CsvColumns::resolve(table, {"name", "count"}, {"labels"});
  ASSERT_TRUE(columns.has_value());
  EXPECT_TRUE(columns->has("count"));
  EXPECT_FALSE(columns->has("labels"));
  EXPECT_EQ(columns->field(table.records[0], "labels"), "");
  EXPECT_EQ(*columns->integer(table.records[0], "count", 0, 10), 3);

  auto missing = CsvColumns::resolve(table, {"name", "count", "cpu"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message, "t.csv line 1: the column 'cpu' is missing");
  auto unknown = CsvColumns::resolve(table, {"name"});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().message, "t.csv line 1: unknown column 'count'");
}

TEST(CsvColumns, ParsesNumbersWithErrorsNamingLineAndColumn) {
  const CsvTable table = parsed("n,d\n12,0.5\n-3,1.25\n,\nx,1e3\n99,0.0001\n");
  auto columns = *CsvColumns::resolve(table, {"n", "d"});
  const auto& r = table.records;
  EXPECT_EQ(*columns.integer(r[0], "n", 0, 100), 12);
  EXPECT_EQ(*columns.decimal(r[0], "d", 1000, 1'000'000), 500);
  EXPECT_EQ(*columns.decimal(r[1], "d", 1024, 1'000'000), 1280);
  EXPECT_EQ(columns.integer(r[1], "n", 0, 100).error().message,
            "t.csv line 3: column n: '-3' is not a whole number in [0, 100]");
  EXPECT_EQ(*columns.integer(r[1], "n", -5, 100), -3);
  EXPECT_EQ(columns.integer(r[2], "n", 0, 100).error().message, "t.csv line 4: column n: empty");
  EXPECT_FALSE(columns.optional_integer(r[2], "n", 0, 100)->has_value());
  EXPECT_FALSE(columns.integer(r[3], "n", 0, 100).has_value());
  EXPECT_EQ(columns.decimal(r[3], "d", 1000, 1'000'000).error().message,
            "t.csv line 5: column d: '1e3' is not a number from 0 to 1000 in steps of 1/1000");
  EXPECT_FALSE(columns.integer(r[4], "n", 0, 50).has_value());
  EXPECT_FALSE(columns.decimal(r[4], "d", 1000, 1'000'000).has_value());  // not whole milli
}

TEST(CsvNumbers, ScaledDecimalsAreExact) {
  EXPECT_EQ(parse_scaled_decimal("0.1", 1000, 1'000'000), 100);
  EXPECT_EQ(parse_scaled_decimal("112", 1000, 1'000'000), 112'000);
  EXPECT_EQ(parse_scaled_decimal(".5", 1000, 1'000'000), 500);
  EXPECT_EQ(parse_scaled_decimal("2.500000", 1000, 1'000'000), 2500);
  EXPECT_EQ(parse_scaled_decimal("2048", 1024, int64_t{1} << 40), 2048 * 1024);
  EXPECT_EQ(parse_scaled_decimal("1000.001", 1000, 1'000'000), std::nullopt);  // above max
  for (const std::string_view bad :
       {"", ".", "1.", "-1", "+1", "1,5", "0x10", " 1", "99999999999999999999"}) {
    EXPECT_EQ(parse_scaled_decimal(bad, 1000, 1'000'000), std::nullopt) << bad;
  }
  EXPECT_EQ(parse_int("-0", -1, 1), 0);
  EXPECT_EQ(parse_int("9223372036854775808", 0, INT64_MAX), std::nullopt);
}

TEST(CsvFile, ReadsAFileAndReportsAMissingOne) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpurent-csv-test-" + std::to_string(::getpid()) + ".csv");
  {
    std::ofstream out(path, std::ios::binary);
    out << "a,b\r\n1,2\r\n";
  }
  auto table = read_csv_file(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(table.has_value()) << table.error().message;
  EXPECT_EQ(table->source, path.string());
  EXPECT_EQ(table->records.size(), 1u);

  auto missing = read_csv_file(path.string());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, "file_unreadable");
  EXPECT_NE(missing.error().message.find(path.string()), std::string::npos);
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace gpurent::sim
