// SLA credits: how much of an instance's month of GPU charges the platform gives back when
// platform-caused downtime brought its availability below the target.
//
// Contract:
// - availability = up / (up + down) over the month, where `up` is the seconds the instance was
//   billed for in the month and `down` its platform-caused downtime in the month.
// - The schedule (docs/billing.md "SLA"): below 99.9 %: 10 %, below 99 %: 25 %, below 95 %: 50 %
//   of the instance's GPU charges of the month, rounded toward zero once. Integer arithmetic only.
#pragma once

#include <cstdint>

#include "common/money.h"

namespace gpurent::billing {

struct SlaMonth {
  int64_t up_seconds = 0;
  int64_t down_seconds = 0;
  Micros gpu_charges = 0;
};

// 0, 10, 25 or 50.
int sla_credit_percent(const SlaMonth& month);
Micros sla_credit(const SlaMonth& month);

}  // namespace gpurent::billing
