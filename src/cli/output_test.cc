#include "cli/output.h"

#include <gtest/gtest.h>

namespace gpurent::cli {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const Timestamp kNow = *parse_rfc3339("2026-11-30T15:26:13.123Z");

TEST(CliTableTest, AlignsColumnsWithoutTrailingSpaces) {
  Table table({"ID", "NAME", "STATE"});
  table.add_row({"i-1", "train", "running"});
  table.add_row({"i-22", "a-longer-name", ""});
  EXPECT_EQ(table.render(),
            "ID     NAME            STATE\n"
            "i-1    train           running\n"
            "i-22   a-longer-name\n");
}

TEST(CliTableTest, CountsWideCharactersTwice) {
  Table table({"NAME", "BALANCE"});
  table.add_row({"北大实验室", "CNY 1.00"});
  table.add_row({"lab", "CNY 2.00"});
  EXPECT_EQ(table.render(),
            "NAME         BALANCE\n"
            "北大实验室   CNY 1.00\n"
            "lab          CNY 2.00\n");
}

TEST(CliTableTest, NeutralisesControlCharacters) {
  Table table({"NAME", "X"});
  table.add_row({"evil\x1b[2J\nname", "x"});
  EXPECT_EQ(table.render(), "NAME            X\nevil?[2J?name   x\n");
  EXPECT_EQ(sanitize("ok\xff"), "ok\xEF\xBF\xBD");
  EXPECT_EQ(sanitize("\xC2\x9B"), "?");  // C1 CSI
}

TEST(CliFieldsTest, AlignsValues) {
  EXPECT_EQ(render_fields({{"ID", "i-1"}, {"Exit code", ""}}),
            "ID:         i-1\n"
            "Exit code:  -\n");
}

TEST(CliFormatTest, Money) {
  EXPECT_EQ(format_price_per_hour(18'000'000, "CNY"), "CNY 18.00/h");
  // A price keeps the digits it has beyond the cents: rounded, 0.00012 would read as free.
  EXPECT_EQ(format_price_per_hour(2'345'000, "CNY"), "CNY 2.345/h");
  EXPECT_EQ(format_price(120, "CNY", "GB-h"), "CNY 0.00012/GB-h");
  EXPECT_EQ(format_price(18'000'000, "", "GPU-h"), "18.00/GPU-h");
  EXPECT_EQ(format_balance_change(1'000'000'000, "CNY"), "+CNY 1000.00");
  EXPECT_EQ(format_balance_change(-32'690'000, "CNY"), "-CNY 32.69");
}

TEST(CliFormatTest, Memory) {
  EXPECT_EQ(format_memory_mb(81920), "80 GiB");
  EXPECT_EQ(format_memory_mb(24564), "24 GiB");
  EXPECT_EQ(format_memory_mb(7680), "7.5 GiB");
  EXPECT_EQ(format_memory_mb(512), "512 MiB");
}

TEST(CliFormatTest, RelativeTimes) {
  EXPECT_EQ(format_relative(kNow - seconds(12), kNow), "12s ago");
  EXPECT_EQ(format_relative(kNow - minutes(5), kNow), "5m ago");
  EXPECT_EQ(format_relative(kNow - hours(47), kNow), "47h ago");
  EXPECT_EQ(format_relative(kNow - hours(72), kNow), "3d ago");
  EXPECT_EQ(format_relative(kNow + hours(23), kNow), "in 23h");
  EXPECT_EQ(format_relative(kNow - hours(24 * 40), kNow), "2026-10-21");
}

TEST(CliFormatTest, Durations) {
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(723), "12m03s");
  EXPECT_EQ(format_duration(3 * 3600 + 4 * 60 + 5), "3h04m");
  EXPECT_EQ(format_duration(2 * 86400 + 3 * 3600), "2d03h");
}

TEST(CliFormatTest, ShellJoin) {
  EXPECT_EQ(shell_join({"python3", "-c", "print('hi')", "a=b", ""}),
            "python3 -c 'print('\\''hi'\\'')' a=b ''");
}

TEST(CliFormatTest, PrettyJson) {
  EXPECT_EQ(pretty_json(Json::parse(R"({"a":[1]})")), "{\n  \"a\": [\n    1\n  ]\n}\n");
}

}  // namespace
}  // namespace gpurent::cli
