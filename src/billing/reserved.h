// Reserved terms: what a reservation (model/job.h) costs, when it is paid and when it is earned.
//
// Contract:
// - Price. A term of gpu_count GPUs for a window of length L costs
//     total = price_per_gpu_hour x gpu_count x (1000 - discount) / 1000 x L / 1 h
//   with one rounding toward zero (L in milliseconds). price_per_gpu_hour is the on-demand price
//   in force at booking and the discount the largest the price book gives a term no longer than
//   L (term_discount_permille); both are fixed at booking, like any quoted price.
// - Payment. Up front: the whole total at booking. Monthly: one payment per started 30-day period
//   of the window (model::kSecondsPerBillingMonth), the first at booking and payment k at
//   start + k x 30 days; after k payments the tenant has paid total x k x 30 d / L rounded toward
//   zero, and after the last one exactly total. Payments move cash into the reservation's prepaid
//   account "tenant:<t>:reservation:<r>" (ids "reservation:<r>:<k>").
// - A commitment. Cancelled before its window starts, a reservation is refunded what was paid
//   (id "reservation-refund:<r>") and owes nothing more. From its start it is a commitment:
//   cancelling releases the capacity, but every payment still falls due on its date.
// - Revenue. The prepaid account is earned into revenue by whole hours of the window as they
//   pass: total x hours / L, rounded toward zero, never more than was paid; everything paid once
//   the window is over or the reservation was cancelled after its start. Ids
//   "reservation-use:<r>:<recognised after>": they only grow, so a replay posts nothing twice.
// - Reserved work running on the reservation pays no GPU price (billing.h); its CPU, memory and
//   disk are metered as usual.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "model/job.h"
#include "model/ledger.h"
#include "model/volume.h"

namespace gpurent::billing {

inline constexpr Millis kReservationPaymentPeriod{model::kSecondsPerBillingMonth * 1000};

// The discount a window of `length` earns from a table of term days -> per mille (0: none).
int term_discount_permille(const std::map<int, int>& discounts, Millis length);
Micros term_total(Micros price_per_gpu_hour, int gpu_count, int discount_permille, Millis length);
// Up front: 1. Monthly: the started 30-day periods of the window.
int payment_count(const model::Reservation& reservation);
// What payment k (0-based) is, and when it falls due.
Micros payment_amount(const model::Reservation& reservation, int k);
Timestamp payment_due_at(const model::Reservation& reservation, int k);

// The payments due by `now` not yet made, in order; marks them made on the reservation. None
// once it was refunded.
std::vector<model::Transfer> collect_payments(model::Reservation& reservation, Timestamp now);
// The revenue earned by `now` not yet recognised, if any; marks it recognised.
std::optional<model::Transfer> recognise_revenue(model::Reservation& reservation, Timestamp now);
// A reservation cancelled before its window: what was paid goes back to cash (nullopt when
// nothing was paid). Marks it refunded.
std::optional<model::Transfer> refund_unstarted(model::Reservation& reservation, Timestamp now);

}  // namespace gpurent::billing
