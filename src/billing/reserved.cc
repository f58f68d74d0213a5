#include "billing/reserved.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/accounts.h"

namespace gpurent::billing {

namespace {

constexpr int64_t kMillisPerHour = int64_t{3600} * 1000;

Millis window(const model::Reservation& reservation) { return reservation.end - reservation.start; }

// What k payments add up to.
Micros paid_after(const model::Reservation& reservation, int k) {
  if (k >= payment_count(reservation)) return reservation.total;
  return charge_pro_rata(reservation.total, k, kReservationPaymentPeriod.count(),
                         window(reservation).count());
}

model::Transfer transfer(const model::Reservation& reservation, std::string id, Timestamp at,
                         std::string from, std::string to, Micros amount,
                         model::TransferKind kind) {
  return model::Transfer{.id = std::move(id),
                         .at = at,
                         .from_account = std::move(from),
                         .to_account = std::move(to),
                         .amount = amount,
                         .kind = kind,
                         .tenant_id = reservation.tenant_id,
                         .reference = reservation.id};
}

std::string prepaid_account(const model::Reservation& reservation) {
  return model::tenant_reservation_account(reservation.tenant_id, reservation.id);
}

}  // namespace

int term_discount_permille(const std::map<int, int>& discounts, Millis length) {
  int discount = 0;
  for (const auto& [days, permille] : discounts) {
    if (std::chrono::days(days) <= length) discount = permille;
  }
  return discount;
}

Micros term_total(Micros price_per_gpu_hour, int gpu_count, int discount_permille, Millis length) {
  return charge_pro_rata(price_per_gpu_hour, int64_t{gpu_count} * (1000 - discount_permille),
                         length.count(), kMillisPerHour * 1000);
}

int payment_count(const model::Reservation& reservation) {
  if (reservation.payment == model::ReservationPayment::kUpfront) return 1;
  const int64_t period = kReservationPaymentPeriod.count();
  return static_cast<int>((window(reservation).count() + period - 1) / period);
}

Micros payment_amount(const model::Reservation& reservation, int k) {
  return paid_after(reservation, k + 1) - paid_after(reservation, k);
}

Timestamp payment_due_at(const model::Reservation& reservation, int k) {
  return k == 0 ? reservation.created_at : reservation.start + k * kReservationPaymentPeriod;
}

std::vector<model::Transfer> collect_payments(model::Reservation& reservation, Timestamp now) {
  std::vector<model::Transfer> out;
  if (reservation.refunded) return out;
  while (reservation.periods_paid < payment_count(reservation) &&
         payment_due_at(reservation, reservation.periods_paid) <= now) {
    const int k = reservation.periods_paid++;
    const Micros amount = payment_amount(reservation, k);
    if (amount <= 0) continue;
    reservation.paid += amount;
    out.push_back(transfer(reservation, fmt::format("reservation:{}:{}", reservation.id, k),
                           payment_due_at(reservation, k),
                           model::tenant_cash_account(reservation.tenant_id),
                           prepaid_account(reservation), amount, model::TransferKind::kPurchase));
  }
  return out;
}

std::optional<model::Transfer> recognise_revenue(model::Reservation& reservation, Timestamp now) {
  if (reservation.refunded || now < reservation.start) return std::nullopt;
  const bool over = now >= reservation.end ||
                    reservation.state == model::ReservationState::kEnded ||
                    reservation.state == model::ReservationState::kCancelled;
  Micros earned = reservation.paid;
  if (!over) {
    const int64_t hours = (now - reservation.start).count() / kMillisPerHour;
    earned = std::min(earned, charge_pro_rata(reservation.total, hours, kMillisPerHour,
                                              window(reservation).count()));
  }
  if (earned <= reservation.recognised) return std::nullopt;
  const Micros amount = earned - reservation.recognised;
  reservation.recognised = earned;
  return transfer(reservation, fmt::format("reservation-use:{}:{}", reservation.id, earned),
                  std::min(now, reservation.end), prepaid_account(reservation),
                  std::string(model::kRevenueAccount), amount, model::TransferKind::kRecognition);
}

std::optional<model::Transfer> refund_unstarted(model::Reservation& reservation, Timestamp now) {
  if (reservation.refunded || now >= reservation.start) return std::nullopt;
  reservation.refunded = true;
  const Micros amount = reservation.paid - reservation.recognised;
  if (amount <= 0) return std::nullopt;
  return transfer(reservation, "reservation-refund:" + reservation.id, now,
                  prepaid_account(reservation), model::tenant_cash_account(reservation.tenant_id),
                  amount, model::TransferKind::kRefund);
}

}  // namespace gpurent::billing
