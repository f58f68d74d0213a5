#include "billing/invoice.h"

#include <gtest/gtest.h>

#include "billing/billing.h"

namespace gpurent::billing {
namespace {

Timestamp at(std::string_view text) { return *parse_rfc3339(text); }

model::Transfer transfer(std::string id, std::string_view when, std::string from, std::string to,
                         Micros amount, model::TransferKind kind, std::string reference = "") {
  return {.id = std::move(id),
          .at = at(when),
          .from_account = std::move(from),
          .to_account = std::move(to),
          .amount = amount,
          .kind = kind,
          .tenant_id = "t-1",
          .reference = std::move(reference)};
}

const std::string kCash = "tenant:t-1:cash";
const std::string kRevenue = "platform:revenue";

std::vector<model::Transfer> history() {
  using K = model::TransferKind;
  return {
      transfer("topup:t-1:a", "2026-11-30T10:00:00Z", "external:topups", kCash, 100'000'000,
               K::kTopup),
      transfer("usage:i-1:1:600", "2026-11-30T23:50:00Z", kCash, kRevenue, 3'000'000, K::kUsage,
               "i-1"),
      // Posted after the December top-up but at the last metered second: posting order is not
      // time order.
      transfer("topup:t-1:b", "2026-12-01T00:00:05Z", "external:topups", kCash, 5'000'000,
               K::kTopup),
      transfer("usage:i-1:1:1200", "2026-12-01T00:00:00Z", kCash, kRevenue, 3'000'000, K::kUsage,
               "i-1"),
      transfer("usage:i-1:1:1500", "2026-12-01T00:05:00Z", kCash, kRevenue, 1'500'000, K::kUsage,
               "i-1"),
      transfer("package:pkg-1", "2026-12-02T00:00:00Z", kCash, "tenant:t-1:package:pkg-1",
               36'000'000, K::kPurchase, "h100-100"),
      transfer("package-use:pkg-1:100000", "2026-12-02T00:01:40Z", "tenant:t-1:package:pkg-1",
               kRevenue, 1'000'000, K::kRecognition, "pkg-1"),
      transfer("volume:v-1:3600", "2026-12-02T01:00:00Z", kCash, kRevenue, 700, K::kUsage, "v-1"),
      transfer("sla:i-1:2026-11", "2026-12-01T00:00:00Z", "platform:credits:sla", kCash, 250'000,
               K::kCredit, "i-1"),
      transfer("usage:i-1:1:1600", "2027-01-01T00:00:10Z", kCash, kRevenue, 500'000, K::kUsage,
               "i-1"),
  };
}

// The cash account's balance over transfers with `at` before `end`.
Micros cash_before(const std::vector<model::Transfer>& transfers, Timestamp end) {
  Micros sum = 0;
  for (const auto& t : transfers) {
    if (t.at >= end) continue;
    if (t.from_account == kCash) sum -= t.amount;
    if (t.to_account == kCash) sum += t.amount;
  }
  return sum;
}

TEST(Invoice, LinesAndTotalsReconcileWithTheLedger) {
  const auto transfers = history();
  const Month december{2026, 12};
  const auto invoice = build_invoice("t-1", "CNY", december, transfers,
                                     [](std::string_view run) { return std::string(run); });
  EXPECT_EQ(invoice.id, "2026-12");
  EXPECT_EQ(invoice.opening_balance, cash_before(transfers, december.start()));
  EXPECT_EQ(invoice.opening_balance, 97'000'000);
  EXPECT_EQ(invoice.closing_balance, cash_before(transfers, december.end()));
  ASSERT_EQ(invoice.lines.size(), 5u);
  EXPECT_EQ(invoice.lines[0].category, "payments");
  EXPECT_EQ(invoice.lines[0].amount, -5'000'000);
  EXPECT_EQ(invoice.lines[1].category, "gpu_time");
  EXPECT_EQ(invoice.lines[1].description, "i-1:1");
  EXPECT_EQ(invoice.lines[1].quantity, 900);  // seconds 600..1500 were billed in December
  EXPECT_EQ(invoice.lines[1].amount, 4'500'000);
  EXPECT_EQ(invoice.lines[2].category, "packages");
  EXPECT_EQ(invoice.lines[2].amount, 36'000'000);
  EXPECT_EQ(invoice.lines[3].category, "storage");
  EXPECT_EQ(invoice.lines[4].category, "credits");
  EXPECT_EQ(invoice.lines[4].amount, -250'000);
  EXPECT_EQ(invoice.charges, 4'500'000 + 36'000'000 + 700);
  EXPECT_EQ(invoice.credits, -250'000);
  EXPECT_EQ(invoice.payments, -5'000'000);
  EXPECT_EQ(invoice.opening_balance - invoice.charges - invoice.credits - invoice.payments,
            invoice.closing_balance);
  ASSERT_EQ(invoice.prepaid.size(), 1u);
  EXPECT_EQ(invoice.prepaid[0].amount, 1'000'000);
}

TEST(Invoice, EveryMonthWithCashMovementsHasOneAndTheyChain) {
  const auto transfers = history();
  const auto months = invoice_months("t-1", transfers);
  ASSERT_EQ(months.size(), 3u);  // in time order, though not posted in it
  EXPECT_EQ(months[1].id(), "2026-12");
  EXPECT_EQ(months[0].id(), "2026-11");
  EXPECT_EQ(months[2].id(), "2027-01");
  Micros previous_closing = 0;
  for (const auto& month : months) {
    const auto invoice =
        build_invoice("t-1", "CNY", month, transfers, [](std::string_view) { return ""; });
    EXPECT_EQ(invoice.opening_balance, previous_closing);
    previous_closing = invoice.closing_balance;
  }
  EXPECT_EQ(previous_closing, cash_before(transfers, Month{2027, 1}.end()));
}

TEST(Invoice, CsvHasALinePerItemAndTheTotals) {
  const auto invoice = build_invoice("t-1", "CNY", Month{2026, 12}, history(),
                                     [](std::string_view) { return "h100 on_demand, \"x\""; });
  const std::string csv = invoice_csv(invoice);
  EXPECT_TRUE(
      csv.starts_with("invoice,tenant_id,category,description,quantity,unit,amount,"
                      "currency\r\n"));
  EXPECT_NE(csv.find("2026-12,t-1,gpu_time,\"h100 on_demand, \"\"x\"\"\",900,s,4.500000,CNY\r\n"),
            std::string::npos);
  EXPECT_NE(csv.find("2026-12,t-1,total,closing_balance,0,,"), std::string::npos);
}

TEST(Invoice, MonthsParseAndBound) {
  EXPECT_EQ(parse_month("2026-12")->end(), at("2027-01-01T00:00:00Z"));
  EXPECT_EQ(parse_month("2026-02")->start(), at("2026-02-01T00:00:00Z"));
  EXPECT_FALSE(parse_month("2026-13"));
  EXPECT_FALSE(parse_month("2026-1"));
  EXPECT_FALSE(parse_month("20x6-01"));
  EXPECT_FALSE(parse_month("../etc"));
  EXPECT_EQ(month_of(at("2026-12-31T23:59:59.999Z")).id(), "2026-12");
}

}  // namespace
}  // namespace gpurent::billing
