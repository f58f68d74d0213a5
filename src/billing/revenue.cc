#include "billing/revenue.h"

#include "model/accounts.h"

namespace gpurent::billing {

void add_revenue(RevenueReport& report, const std::vector<model::Transfer>& transfers,
                 const GpuTypeOf& gpu_type_of) {
  for (const auto& t : transfers) {
    if (t.at < report.from || t.at >= report.to) continue;
    if (t.to_account == model::kRevenueAccount) {
      report.total += t.amount;
      report.by_gpu_type[gpu_type_of(t)] += t.amount;
      report.by_tenant[t.tenant_id] += t.amount;
    } else if (t.kind == model::TransferKind::kCredit &&
               (t.from_account == model::kSlaCreditsAccount ||
                t.from_account == model::kPromotionsAccount)) {
      report.credits += t.amount;
    }
  }
}

}  // namespace gpurent::billing
