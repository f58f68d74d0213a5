#include "billing/revenue.h"

#include <gtest/gtest.h>

namespace gpurent::billing {
namespace {

model::Transfer at_ms(int64_t ms, std::string tenant, std::string from, std::string to,
                      Micros amount, model::TransferKind kind, std::string reference) {
  return {.id = reference + std::to_string(ms),
          .at = from_unix_ms(ms),
          .from_account = std::move(from),
          .to_account = std::move(to),
          .amount = amount,
          .kind = kind,
          .tenant_id = std::move(tenant),
          .reference = std::move(reference)};
}

TEST(Revenue, ByGpuTypeAndTenantInTheWindowOnly) {
  using K = model::TransferKind;
  const std::vector<model::Transfer> transfers = {
      at_ms(5, "t-1", "tenant:t-1:cash", "platform:revenue", 100, K::kUsage, "h100"),
      at_ms(10, "t-1", "tenant:t-1:cash", "platform:revenue", 200, K::kUsage, "h100"),
      at_ms(11, "t-1", "tenant:t-1:package:p", "platform:revenue", 30, K::kRecognition, "a100"),
      at_ms(12, "t-2", "tenant:t-2:cash", "platform:revenue", 7, K::kUsage, "storage"),
      at_ms(13, "t-2", "tenant:t-2:cash", "tenant:t-2:package:q", 500, K::kPurchase, "a100"),
      at_ms(14, "t-2", "platform:credits:sla", "tenant:t-2:cash", 9, K::kCredit, "x"),
      at_ms(20, "t-2", "tenant:t-2:cash", "platform:revenue", 1000, K::kUsage, "h100"),
  };
  RevenueReport report{.from = from_unix_ms(10), .to = from_unix_ms(20)};
  add_revenue(report, transfers, [](const model::Transfer& t) { return t.reference; });
  EXPECT_EQ(report.total, 237);  // a purchase is deferred revenue, not revenue
  EXPECT_EQ(report.credits, 9);
  EXPECT_EQ(report.by_gpu_type,
            (std::map<std::string, Micros>{{"h100", 200}, {"a100", 30}, {"storage", 7}}));
  EXPECT_EQ(report.by_tenant, (std::map<std::string, Micros>{{"t-1", 230}, {"t-2", 7}}));
}

}  // namespace
}  // namespace gpurent::billing
