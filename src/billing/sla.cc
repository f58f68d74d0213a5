#include "billing/sla.h"

namespace gpurent::billing {

int sla_credit_percent(const SlaMonth& month) {
  if (month.down_seconds <= 0) return 0;
  // up / total < p / q  <=>  up * q < p * total, in 128 bits so no duration can overflow.
  const __int128 up = month.up_seconds;
  const __int128 total = __int128{month.up_seconds} + month.down_seconds;
  if (up * 100 < total * 95) return 50;
  if (up * 100 < total * 99) return 25;
  if (up * 1000 < total * 999) return 10;
  return 0;
}

Micros sla_credit(const SlaMonth& month) {
  return static_cast<Micros>(__int128{month.gpu_charges} * sla_credit_percent(month) / 100);
}

}  // namespace gpurent::billing
