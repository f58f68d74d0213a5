#include "controller/reservations.h"

#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

using model::PricingModel;
using model::ReservationState;

class ReservationsTest : public ControllerTest {
 protected:
  const Reservations& reservations() { return ctl_.reservations(); }
  Timestamp in(int64_t seconds) { return clock_.now() + Millis(seconds * 1000); }

  model::InstanceSpec reserved_spec(const std::string& reservation_id, int gpus) {
    auto s = spec(gpus);
    s.pricing = PricingModel::kReserved;
    s.reservation_id = reservation_id;
    return s;
  }
};

TEST_F(ReservationsTest, AQuoteIsPricedAndCheckedButBooksAndChargesNothing) {
  ctl_.take_changes();
  const Micros before = balance(alice_);
  const auto quote = reservations().quote(alice_, {"", "h100-80g", 4, in(3600), in(7200)});
  ASSERT_TRUE(quote) << quote.error().message;
  EXPECT_GT(quote->total, 0);
  EXPECT_EQ(quote->state, ReservationState::kBooked);
  EXPECT_TRUE(reservations().list(alice_).empty());
  EXPECT_EQ(balance(alice_), before);
  EXPECT_TRUE(ctl_.take_changes().reservations.empty());
  // The checks of a booking: more GPUs than the node has, another tenant (not an operator).
  EXPECT_EQ(reservations().quote(alice_, {"", "h100-80g", 9, in(3600), in(7200)}).error().code,
            "overbooked");
  EXPECT_EQ(reservations()
                .quote(alice_, {bob_.tenant_id, "h100-80g", 1, in(3600), in(7200)})
                .error()
                .code,
            "forbidden");
}

TEST_F(ReservationsTest, BookingsHoldBackWhatTheirWorkDoesNotUseUntilTheirWindowEnds) {
  auto booked = ctl_.create_reservation(alice_, {"", "h100-80g", 6, in(3600), in(7200)});
  ASSERT_TRUE(booked) << booked.error().message;
  const std::string id = booked->reservation.id;
  // Work that would end before the window takes nothing the booking holds.
  EXPECT_EQ(reservations().held_back("h100-80g", in(1800)), 0);
  EXPECT_EQ(reservations().held_back("h100-80g", std::nullopt), 6);
  EXPECT_EQ(reservations().held_back("a100-80g", std::nullopt), 0);

  // Reserved work waits for the window, then takes the booking's share.
  const auto early = launch(alice_, reserved_spec(id, 4));
  EXPECT_EQ(get(early.id).state, model::InstanceState::kPending);
  EXPECT_NE(get(early.id).reason.find("waiting for reservation"), std::string::npos);
  clock_.advance(Millis(3'600'000));
  report(node_, {});
  ctl_.tick();
  EXPECT_EQ(get(early.id).state, model::InstanceState::kStarting);
  run(early.id);
  EXPECT_EQ(reservations().held_back("h100-80g", std::nullopt), 2);  // 6 booked, 4 in use
  // More than the share waits, with why.
  const auto more = launch(alice_, reserved_spec(id, 4));
  EXPECT_EQ(get(more.id).state, model::InstanceState::kPending);
  EXPECT_NE(get(more.id).reason.find("is in use"), std::string::npos);
  EXPECT_TRUE(ctl_.check_invariants());

  // The window ends: its work is asked to stop, and nothing is held back any more.
  clock_.advance(Millis(3'600'000));
  run(early.id);
  ctl_.tick();
  EXPECT_EQ(reservations().list(alice_)[0]->state, ReservationState::kEnded);
  EXPECT_EQ(get(early.id).state, model::InstanceState::kStopping);
  EXPECT_EQ(reservations().held_back("h100-80g", std::nullopt), 0);
}

TEST_F(ReservationsTest, QuotasDefaultToNoLimitsAndRefuseBadValues) {
  const auto none = ctl_.accounts().quotas().get(alice_, alice_.tenant_id);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->weight, 1);
  EXPECT_FALSE(none->max_instances);
  EXPECT_EQ(ctl_.accounts().quotas().of(alice_.tenant_id), nullptr);
  EXPECT_EQ(ctl_.accounts().quotas().get(alice_, bob_.tenant_id).error().code, "tenant_not_found");

  EXPECT_EQ(ctl_.set_quota(alice_, {alice_.tenant_id, {}, std::nullopt, 2}).error().code,
            "forbidden");
  EXPECT_EQ(ctl_.set_quota(admin_, {alice_.tenant_id, {}, std::nullopt, 0}).error().code,
            "invalid_field");
  EXPECT_EQ(ctl_.set_quota(admin_, {alice_.tenant_id, {{"no-such-gpu", 1}}, std::nullopt, 1})
                .error()
                .code,
            "invalid_field");
  ASSERT_TRUE(ctl_.set_quota(admin_, {alice_.tenant_id, {{"h100-80g", 2}}, 3, 5}));
  EXPECT_EQ(ctl_.accounts().quotas().weight(alice_.tenant_id), 5);
  EXPECT_EQ(ctl_.accounts().quotas().of(alice_.tenant_id)->max_instances, 3);
}

}  // namespace
}  // namespace gpurent::controller
