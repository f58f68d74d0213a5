// Operators' revenue report: what platform:revenue earned in [from, to), by GPU type and by
// tenant, from the ledger.
//
// Contract: a transfer counts when it moves money into platform:revenue and `from <= at < to`;
// `total` equals the sum of `by_gpu_type` and the sum of `by_tenant`. Credits granted to tenants
// (from the promotions and SLA accounts) in the window are reported beside it, not netted.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "model/ledger.h"

namespace gpurent::billing {

struct RevenueReport {
  Timestamp from{};
  Timestamp to{};
  Micros total = 0;
  Micros credits = 0;
  std::map<std::string, Micros> by_gpu_type;  // "storage" for volumes, "other" if unknown
  std::map<std::string, Micros> by_tenant;
};

// The GPU type a revenue transfer was for (a run's, a package's), "storage" or "other".
using GpuTypeOf = std::function<std::string(const model::Transfer&)>;

void add_revenue(RevenueReport& report, const std::vector<model::Transfer>& transfers,
                 const GpuTypeOf& gpu_type_of);

}  // namespace gpurent::billing
