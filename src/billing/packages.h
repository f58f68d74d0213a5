// Compute packages in metering: which seconds of a run a tenant's prepaid packages cover, and
// what each package has earned. A step in front of the pricing (billing.h): the seconds a package
// covers leave the run's metering before meter_run prices the rest.
//
// Contract:
// - draw_packages covers the first whole seconds of [usage.metered_until, until) from the
//   packages given (earliest expiry first, as the caller orders them): a package covers a second
//   only if the second ends by its expiry and it still holds the run's milli-GPUs for the whole
//   second. It advances usage.metered_until and usage.package_seconds by the seconds covered, so
//   meter_run then charges only the remaining seconds: every second is paid exactly once.
// - Each package's recognised revenue is charge_pro_rata(price, used, 1, capacity): one rounding
//   per package, so many small draws earn exactly what one big draw does. A draw's transfer id is
//   "package-use:<package>:<used after>", deterministic for a replayed meter.
// - expire_package earns the remainder (price - recognised) once, id "package-expiry:<package>".
#pragma once

#include <optional>
#include <vector>

#include "common/clock.h"
#include "model/accounts.h"
#include "model/ledger.h"

namespace gpurent::billing {

// The money moved by a purchase: the tenant's cash into the package's prepaid account.
model::Transfer package_purchase(const model::Package& package);

// Returns the recognition transfers to post (none when nothing was covered or earned).
std::vector<model::Transfer> draw_packages(model::UsageRecord& usage, Timestamp until,
                                           const std::vector<model::Package*>& packages);

// At or after the package's expiry: marks it expired and returns the remainder's transfer, if any.
std::optional<model::Transfer> expire_package(model::Package& package, Timestamp now);

}  // namespace gpurent::billing
