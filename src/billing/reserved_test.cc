#include "billing/reserved.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/accounts.h"

namespace gpurent::billing {
namespace {

using std::chrono::days;
using std::chrono::hours;

const Timestamp kBooked = from_unix_ms(1'700'000'000'000);
const std::map<int, int> kDiscounts{{7, 100}, {30, 200}, {90, 350}};

model::Reservation term(int gpus, Millis length, model::ReservationPayment payment,
                        Millis starts_in = Millis(0)) {
  model::Reservation r{.id = "r-1",
                       .tenant_id = "t-1",
                       .gpu_type = "h100-80g",
                       .gpu_count = gpus,
                       .start = kBooked + starts_in,
                       .end = kBooked + starts_in + length,
                       .created_at = kBooked,
                       .payment = payment,
                       .price_per_gpu_hour = 18'000'000};
  r.discount_permille = term_discount_permille(kDiscounts, length);
  r.total = term_total(r.price_per_gpu_hour, gpus, r.discount_permille, length);
  return r;
}

Micros sum(const std::vector<model::Transfer>& transfers) {
  Micros total = 0;
  for (const auto& t : transfers) total += t.amount;
  return total;
}

TEST(ReservedTerms, DiscountIsTheLongestTermTheWindowReaches) {
  EXPECT_EQ(term_discount_permille(kDiscounts, days(6) + hours(23)), 0);
  EXPECT_EQ(term_discount_permille(kDiscounts, days(7)), 100);
  EXPECT_EQ(term_discount_permille(kDiscounts, days(29)), 100);
  EXPECT_EQ(term_discount_permille(kDiscounts, days(30)), 200);
  EXPECT_EQ(term_discount_permille(kDiscounts, days(366)), 350);
  EXPECT_EQ(term_discount_permille({}, days(90)), 0);
}

TEST(ReservedTerms, TotalIsDiscountedOnDemandForTheWindowWithOneRounding) {
  // 8 H100s x 30 days x 24 h x 18.0 x 0.8 = 82,944.0
  EXPECT_EQ(term_total(18'000'000, 8, 200, days(30)), int64_t{82'944} * kMicrosPerUnit);
  // A window of 1 ms: 18.0 / 3,600,000 = 5 micros; 0.9 of it is 4.5 -> 4 (toward zero).
  EXPECT_EQ(term_total(18'000'000, 1, 100, Millis(1)), 4);
  // 7 GPUs x 1 h at 1.000001 with 35 % off: 7 x 1,000,001 x 0.65 = 4,550,004.55 -> 4,550,004.
  EXPECT_EQ(term_total(1'000'001, 7, 350, hours(1)), 4'550'004);
}

TEST(ReservedTerms, UpfrontPaysTheWholeTermAtBooking) {
  auto r = term(2, days(7), model::ReservationPayment::kUpfront, hours(5));
  ASSERT_EQ(payment_count(r), 1);
  auto paid = collect_payments(r, kBooked);
  ASSERT_EQ(paid.size(), 1u);
  EXPECT_EQ(paid[0].id, "reservation:r-1:0");
  EXPECT_EQ(paid[0].from_account, model::tenant_cash_account("t-1"));
  EXPECT_EQ(paid[0].to_account, model::tenant_reservation_account("t-1", "r-1"));
  EXPECT_EQ(paid[0].kind, model::TransferKind::kPurchase);
  EXPECT_EQ(paid[0].amount, r.total);
  EXPECT_EQ(r.paid, r.total);
  EXPECT_TRUE(collect_payments(r, r.end + days(40)).empty());  // nothing more, ever
}

TEST(ReservedTerms, MonthlyPaymentsFallDueEachPeriodAndSumExactlyToTheTotal) {
  // 90 days and a bit: 4 started periods; the total does not divide evenly.
  auto r = term(3, days(90) + hours(7), model::ReservationPayment::kMonthly);
  r.total += 7;  // an awkward total: the last payment absorbs the remainder
  ASSERT_EQ(payment_count(r), 4);
  EXPECT_EQ(collect_payments(r, kBooked).size(), 1u);
  EXPECT_EQ(r.paid, payment_amount(r, 0));
  EXPECT_TRUE(collect_payments(r, r.start + days(30) - Millis(1)).empty());
  const auto second = collect_payments(r, r.start + days(30));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].id, "reservation:r-1:1");
  EXPECT_EQ(second[0].at, r.start + days(30));
  // A late tick posts every payment due since, each dated when it fell due.
  const auto rest = collect_payments(r, r.end);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[1].at, r.start + days(90));
  EXPECT_EQ(r.paid, r.total);
  EXPECT_EQ(r.periods_paid, 4);
  Micros payments = 0;
  for (int k = 0; k < 4; ++k) payments += payment_amount(r, k);
  EXPECT_EQ(payments, r.total);
}

TEST(ReservedTerms, RevenueIsEarnedByWholeHoursAndNeverAheadOfPayments) {
  auto r = term(1, days(60), model::ReservationPayment::kMonthly);
  collect_payments(r, kBooked);
  EXPECT_FALSE(recognise_revenue(r, r.start + Millis(3'599'999)));  // no whole hour yet
  auto first = recognise_revenue(r, r.start + hours(1) + Millis(5));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->amount, charge_pro_rata(r.total, 1, 3'600'000, days(60) / Millis(1)));
  EXPECT_EQ(first->id, fmt::format("reservation-use:r-1:{}", first->amount));
  EXPECT_EQ(first->kind, model::TransferKind::kRecognition);
  EXPECT_EQ(first->to_account, model::kRevenueAccount);
  // Half way, only the first month is paid: earning stops at what was paid.
  auto capped = recognise_revenue(r, r.start + days(31));
  ASSERT_TRUE(capped);
  EXPECT_EQ(r.recognised, r.paid);
  // Many small recognitions earn exactly what one big one does.
  auto one_shot = term(1, days(60), model::ReservationPayment::kUpfront);
  auto stepped = one_shot;
  collect_payments(one_shot, kBooked);
  collect_payments(stepped, kBooked);
  Micros stepped_total = 0;
  for (int h = 1; h <= 500; ++h) {
    if (auto t = recognise_revenue(stepped, stepped.start + hours(h))) stepped_total += t->amount;
  }
  const auto big = recognise_revenue(one_shot, one_shot.start + hours(500));
  ASSERT_TRUE(big);
  EXPECT_EQ(stepped_total, big->amount);
  // Over: everything paid is earned.
  auto last = recognise_revenue(one_shot, one_shot.end);
  ASSERT_TRUE(last);
  EXPECT_EQ(one_shot.recognised, one_shot.total);
  EXPECT_FALSE(recognise_revenue(one_shot, one_shot.end + days(1)));
}

TEST(ReservedTerms, CancelledBeforeItsWindowIsRefundedAndOwesNothingMore) {
  auto r = term(4, days(30), model::ReservationPayment::kMonthly, days(2));
  collect_payments(r, kBooked);
  const Micros paid = r.paid;
  ASSERT_GT(paid, 0);
  auto refund = refund_unstarted(r, kBooked + days(1));
  ASSERT_TRUE(refund);
  EXPECT_EQ(refund->id, "reservation-refund:r-1");
  EXPECT_EQ(refund->amount, paid);
  EXPECT_EQ(refund->to_account, model::tenant_cash_account("t-1"));
  EXPECT_EQ(refund->kind, model::TransferKind::kRefund);
  EXPECT_TRUE(r.refunded);
  EXPECT_FALSE(refund_unstarted(r, kBooked + days(1)));  // once
  EXPECT_TRUE(collect_payments(r, r.end).empty());
  EXPECT_FALSE(recognise_revenue(r, r.end));
}

TEST(ReservedTerms, CancelledAfterItsStartIsACommitment) {
  auto r = term(1, days(65), model::ReservationPayment::kMonthly);
  collect_payments(r, kBooked);
  EXPECT_FALSE(refund_unstarted(r, r.start + hours(2)));
  r.state = model::ReservationState::kCancelled;
  // What was paid is earned at once; the later payments still fall due, and are earned as paid.
  auto earned = recognise_revenue(r, r.start + hours(2));
  ASSERT_TRUE(earned);
  EXPECT_EQ(r.recognised, r.paid);
  const auto later = collect_payments(r, r.start + days(60));
  EXPECT_EQ(later.size(), 2u);
  EXPECT_EQ(r.paid, r.total);
  ASSERT_TRUE(recognise_revenue(r, r.start + days(60)));
  EXPECT_EQ(r.recognised, r.total);
  EXPECT_EQ(sum(later) + payment_amount(r, 0), r.total);
}

}  // namespace
}  // namespace gpurent::billing
