#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

class AccountsTest : public ControllerTest {
 protected:
  AccountsTest() {
    EXPECT_TRUE(ctl_.accounts().packages().set_product(admin_, {.name = "h100-1h",
                                                                .gpu_type = "h100-80g",
                                                                .gpu_hours = 1,
                                                                .price = 10 * kMicrosPerUnit,
                                                                .validity_days = 30}));
  }

  model::Package buy(const Principal& who, const std::optional<std::string>& key = std::nullopt) {
    auto bought = ctl_.accounts().packages().buy(who, "h100-1h", key, "fingerprint");
    EXPECT_TRUE(bought) << bought.error().message;
    return bought->package;
  }

  // Runs the instance for `seconds`, reporting every 30 s, ticking as it goes.
  void keep_running(const std::string& id, int seconds) {
    for (int s = 0; s < seconds; s += 30) {
      clock_.advance(Millis(std::min(30, seconds - s) * 1000));
      run(id);
      ctl_.tick();
    }
  }

  void stop(const Principal& who, const std::string& id) {
    ASSERT_TRUE(ctl_.stop_instance(who, id));
    run(id, 143);
  }

  std::vector<std::string> event_kinds(const Principal& who) {
    std::vector<std::string> out;
    for (const auto* event : ctl_.events().list(who, {}, 1000)) out.push_back(event->kind);
    return out;
  }
};

TEST_F(AccountsTest, APackageIsPaidAtOnceAndCoversUsageBeforeTheBalance) {
  const Micros before = balance(alice_);
  const auto package = buy(alice_);
  EXPECT_EQ(balance(alice_), before - 10 * kMicrosPerUnit);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);

  const auto instance = launch(alice_, 1);
  run(instance.id);
  keep_running(instance.id, 3700);
  stop(alice_, instance.id);

  const auto usage = ctl_.metering().usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0]->package_seconds, 3600);
  EXPECT_EQ(usage[0]->billed_seconds, 100);
  EXPECT_EQ(balance(alice_), before - 10 * kMicrosPerUnit - 100 * kH100PerSecond);
  const auto packages = ctl_.accounts().packages().of_tenant(alice_.tenant_id);
  ASSERT_EQ(packages.size(), 1u);
  EXPECT_EQ(packages[0]->used, packages[0]->capacity);
  EXPECT_EQ(packages[0]->recognised, 10 * kMicrosPerUnit);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
  // Bob's usage of the same type is his own: Alice's package does not cover it.
  EXPECT_TRUE(ctl_.accounts().packages().of_tenant(bob_.tenant_id).empty());
  (void)package;
}

TEST_F(AccountsTest, AMinimumDurationDrawsFromAPackageBeforeTheBalance) {
  ASSERT_TRUE(ctl_.set_prices(admin_, {.minimum_billed_seconds = 600}));
  buy(alice_);
  const Micros before = balance(alice_);
  const auto instance = launch(alice_, 1);
  run(instance.id);
  const Timestamp started = clock_.now();
  keep_running(instance.id, 60);
  stop(alice_, instance.id);

  const auto usage = ctl_.metering().usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  // 60 s run and 540 s of minimum, all from the package: nothing from the balance.
  EXPECT_EQ(usage[0]->package_seconds, 600);
  EXPECT_EQ(usage[0]->billed_seconds, 0);
  EXPECT_EQ(balance(alice_), before);
  // The run still ended when it did.
  EXPECT_EQ(usage[0]->ended_at, started + Millis(60'000));
  const auto packages = ctl_.accounts().packages().of_tenant(alice_.tenant_id);
  ASSERT_EQ(packages.size(), 1u);
  EXPECT_EQ(packages[0]->used, 600 * model::kMilliPerGpu);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

TEST_F(AccountsTest, AMinimumDurationBeyondThePackageIsPaidFromTheBalance) {
  ASSERT_TRUE(ctl_.set_prices(admin_, {.minimum_billed_seconds = 3700}));
  buy(alice_);  // one GPU-hour: 3,600 s of one GPU
  const Micros before = balance(alice_);
  const auto instance = launch(alice_, 1);
  run(instance.id);
  keep_running(instance.id, 60);
  stop(alice_, instance.id);

  const auto usage = ctl_.metering().usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0]->package_seconds, 3600);
  EXPECT_EQ(usage[0]->billed_seconds, 100);
  EXPECT_EQ(balance(alice_), before - 100 * kH100PerSecond);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

TEST_F(AccountsTest, ARetriedPurchaseIsChargedOnce) {
  const Micros before = balance(alice_);
  const auto first = buy(alice_, "key-1");
  auto again = ctl_.accounts().packages().buy(alice_, "h100-1h", "key-1", "fingerprint");
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->package.id, first.id);
  EXPECT_EQ(balance(alice_), before - 10 * kMicrosPerUnit);
  EXPECT_EQ(ctl_.accounts().packages().buy(alice_, "h100-1h", "key-1", "another body").error().code,
            "idempotency_key_reused");
  EXPECT_EQ(ctl_.accounts().packages().of_tenant(alice_.tenant_id).size(), 1u);
}

TEST_F(AccountsTest, APurchaseTheBalanceDoesNotCoverIs402) {
  ASSERT_TRUE(ctl_.accounts().packages().set_product(admin_, {.name = "big",
                                                              .gpu_type = "h100-80g",
                                                              .gpu_hours = 1000,
                                                              .price = 5000 * kMicrosPerUnit,
                                                              .validity_days = 30}));
  const Micros before = balance(alice_);
  const auto refused = ctl_.accounts().packages().buy(alice_, "big", std::nullopt, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kPaymentRequired);
  EXPECT_EQ(refused.error().code, "insufficient_funds");
  EXPECT_EQ(balance(alice_), before);
  EXPECT_EQ(ctl_.accounts().packages().buy(alice_, "nope", std::nullopt, "").error().code,
            "package_product_not_found");
  EXPECT_EQ(ctl_.accounts().packages().set_product(alice_, {.name = "mine"}).error().kind,
            ErrorKind::kPermissionDenied);
  EXPECT_EQ(ctl_.accounts()
                .packages()
                .set_product(admin_, {.name = "x", .gpu_type = "h100-80g"})
                .error()
                .code,
            "invalid_field");
}

TEST_F(AccountsTest, AnExpiredPackageIsEarnedAtExpiryAndCoversNothingAfter) {
  const auto package = buy(alice_);
  const auto instance = launch(alice_, 1);
  run(instance.id);
  keep_running(instance.id, 600);  // a sixth of the package
  stop(alice_, instance.id);
  clock_.set(package.expires_at);
  ctl_.tick();
  const auto* expired = ctl_.accounts().packages().of_tenant(alice_.tenant_id)[0];
  EXPECT_TRUE(expired->expired);
  EXPECT_EQ(expired->recognised, expired->price);
  EXPECT_EQ(expired->used, 600'000);
  // The package's account is empty: it was all earned, a sixth by use, the rest at expiry.
  Micros earned_by_use = 0;
  Micros earned_at_expiry = 0;
  for (const auto& t : ctl_.accounts().transfers(alice_.tenant_id)) {
    if (t.kind != model::TransferKind::kRecognition) continue;
    (t.id.starts_with("package-expiry:") ? earned_at_expiry : earned_by_use) += t.amount;
  }
  EXPECT_EQ(earned_by_use, 10 * kMicrosPerUnit / 6);
  EXPECT_EQ(earned_by_use + earned_at_expiry, 10 * kMicrosPerUnit);

  const Micros before = balance(alice_);
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));
  keep_running(instance.id, 300);
  const auto* second = ctl_.metering().usage(alice_.tenant_id).back();
  EXPECT_EQ(second->run, 2);
  EXPECT_EQ(second->package_seconds, 0);
  EXPECT_GT(second->billed_seconds, 0);
  EXPECT_EQ(before - balance(alice_), second->billed_seconds * kH100PerSecond);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

TEST_F(AccountsTest, LowBalanceWarnsOncePerCrossing) {
  ASSERT_TRUE(ctl_.accounts().set_balance_settings(
      admin_, {.tenant_id = alice_.tenant_id, .warning_threshold = balance(alice_) - 1}));
  const auto instance = launch(alice_, 1);
  run(instance.id);
  keep_running(instance.id, 300);
  keep_running(instance.id, 300);
  const auto kinds = event_kinds(alice_);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "balance.low"), 1);
  // Back above, then below again: a second warning.
  ASSERT_TRUE(
      ctl_.accounts().topup(admin_, alice_.tenant_id, 10 * kMicrosPerUnit, "", std::nullopt));
  keep_running(instance.id, 60);
  ASSERT_TRUE(ctl_.accounts().set_balance_settings(
      admin_, {.tenant_id = alice_.tenant_id, .warning_threshold = balance(alice_) + 1}));
  const auto after = event_kinds(alice_);
  EXPECT_EQ(std::count(after.begin(), after.end(), "balance.low"), 2);
  EXPECT_TRUE(event_kinds(bob_).empty());  // Bob sees none of Alice's
}

TEST_F(AccountsTest, ANewTenantIsWarnedFromItsFirstTopUpWithoutATick) {
  auto tenant = ctl_.accounts().create_tenant(admin_, "fresh");
  ASSERT_TRUE(tenant);
  const Principal fresh{.tenant_id = tenant->id, .key_id = "k-fresh", .role = Role::kTenantAdmin};
  ASSERT_TRUE(ctl_.accounts().topup(admin_, tenant->id, 100 * kMicrosPerUnit, "", std::nullopt));
  EXPECT_TRUE(event_kinds(fresh).empty());  // funded above the default threshold: no warning
  // The operator raises the threshold above the balance: that is a crossing, at once.
  ASSERT_TRUE(ctl_.accounts().set_balance_settings(
      admin_, {.tenant_id = tenant->id, .warning_threshold = 150 * kMicrosPerUnit}));
  EXPECT_EQ(event_kinds(fresh), std::vector<std::string>{"balance.low"});
}

TEST_F(AccountsTest, ACreditLimitLetsWorkRunBelowZeroUntilItIsReached) {
  auto poor_tenant = ctl_.accounts().create_tenant(admin_, "poor");
  ASSERT_TRUE(ctl_.accounts().credentials().create_api_key(
      admin_, {poor_tenant->id, Role::kTenantAdmin, "", hash_secret("p"), ""}));
  const auto poor = *ctl_.accounts().credentials().authenticate(hash_secret("p"));
  ASSERT_TRUE(ctl_.accounts().set_balance_settings(
      admin_, {.tenant_id = poor.tenant_id, .credit_limit = 120 * kH100PerSecond}));
  // No balance at all, but the credit limit covers a minute.
  const auto instance = launch(poor, 1);
  run(instance.id);
  keep_running(instance.id, 90);
  EXPECT_LT(balance(poor), 0);
  EXPECT_EQ(get(instance.id).state, InstanceState::kRunning);
  keep_running(instance.id, 90);  // past -credit_limit at a billing tick
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopping);
  run(instance.id, 143);
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopped);  // stopped, not deleted
  const auto refused = ctl_.start_instance(poor, instance.id);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "insufficient_funds");
  EXPECT_EQ(ctl_.create_instance(poor, spec(1), std::nullopt, "").error().code,
            "insufficient_funds");
  ASSERT_TRUE(
      ctl_.accounts().topup(admin_, poor.tenant_id, 1000 * kMicrosPerUnit, "", std::nullopt));
  EXPECT_TRUE(ctl_.start_instance(poor, instance.id));
}

TEST_F(AccountsTest, TheInvoiceEqualsTheLedger) {
  buy(alice_);
  const auto instance = launch(alice_, 2);
  run(instance.id);
  keep_running(instance.id, 3000);
  stop(alice_, instance.id);
  const auto months = ctl_.metering().invoice_months(alice_, alice_.tenant_id);
  ASSERT_TRUE(months);
  ASSERT_FALSE(months->empty());
  Micros closing = 0;
  for (const auto& month : *months) {
    const auto invoice = ctl_.metering().invoice(alice_, alice_.tenant_id, month);
    ASSERT_TRUE(invoice);
    EXPECT_EQ(invoice->opening_balance, closing);
    EXPECT_EQ(invoice->opening_balance - invoice->charges - invoice->credits - invoice->payments,
              invoice->closing_balance);
    closing = invoice->closing_balance;
  }
  EXPECT_EQ(closing, balance(alice_));
  const auto last = *ctl_.metering().invoice(alice_, alice_.tenant_id, months->back());
  const auto gpu = std::find_if(last.lines.begin(), last.lines.end(),
                                [](const auto& line) { return line.category == "gpu_time"; });
  ASSERT_NE(gpu, last.lines.end());
  EXPECT_EQ(gpu->description, "h100-80g on_demand");
  EXPECT_EQ(gpu->quantity, 3000 - 1800);  // the package covered 1800 s of two GPUs
  EXPECT_EQ(ctl_.metering().invoice(bob_, alice_.tenant_id, months->back()).error().kind,
            ErrorKind::kNotFound);
}

TEST_F(AccountsTest, NodeDowntimeEarnsAnSlaCreditOnceAtMonthEnd) {
  const auto instance = launch(alice_, 1);
  run(instance.id);
  keep_running(instance.id, 3000);
  const Timestamp last_report = clock_.now();
  for (int s = 0; s < 600; s += 30) {  // the node goes silent; the controller marks it down
    clock_.advance(Millis(30'000));
    ctl_.tick();
  }
  // The node reports again; the instance, moved off it while it was down, was queued and is now
  // placed there again as run 2, and is down until that run reports running.
  run(instance.id);
  run(instance.id);
  const auto records = ctl_.metering().downtime().of_instance(instance.id);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]->start, last_report);
  EXPECT_EQ(records[0]->end, clock_.now());
  EXPECT_EQ(records[0]->cause, "node_down");
  keep_running(instance.id, 600);
  stop(alice_, instance.id);
  Micros charges = 0;  // both runs: the month's GPU charges of the instance
  for (const auto* usage : ctl_.metering().usage(alice_.tenant_id)) charges += usage->charged;
  const Micros before = balance(alice_);

  // The first billing tick of the next month judges the month: 3600 s up, 600 s down is below
  // 95 %: half the month's GPU charges.
  const billing::Month month = billing::month_of(clock_.now());
  clock_.set(month.end() + Millis(1000));
  ctl_.tick();
  EXPECT_EQ(balance(alice_) - before, charges / 2);
  clock_.advance(Millis(120'000));
  ctl_.tick();
  EXPECT_EQ(balance(alice_) - before, charges / 2);  // once
  const auto kinds = event_kinds(alice_);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "sla.credit"), 1);
  const auto invoice = *ctl_.metering().invoice(alice_, alice_.tenant_id, month);
  const auto credit = std::find_if(invoice.lines.begin(), invoice.lines.end(),
                                   [](const auto& line) { return line.category == "credits"; });
  ASSERT_NE(credit, invoice.lines.end());
  EXPECT_EQ(credit->amount, -(charges / 2));
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

// --- Reserved terms ---------------------------------------------------------------------------

class ReservedTermsTest : public AccountsTest {
 protected:
  // One H100 for a week at 18.0 an hour less 10 %: 2,721.6.
  static constexpr Micros kWeekOfOneH100 = 2'721'600'000;

  model::Reservation book(NewReservation request) {
    auto booked = ctl_.create_reservation(alice_, std::move(request));
    EXPECT_TRUE(booked) << booked.error().message;
    return booked ? booked->reservation : model::Reservation{};
  }
  NewReservation term(int gpus, int days, model::ReservationPayment payment,
                      Millis starts_in = Millis(0)) {
    return NewReservation{.gpu_type = "h100-80g",
                          .gpu_count = gpus,
                          .start = clock_.now() + starts_in,
                          .term_days = days,
                          .payment = payment};
  }
  const model::Reservation& current(const std::string& id) {
    for (const auto* r : ctl_.reservations().list(admin_)) {
      if (r->id == id) return *r;
    }
    ADD_FAILURE() << "no reservation " << id;
    static const model::Reservation none;
    return none;
  }
  void top_up(Micros amount) {
    ASSERT_TRUE(ctl_.accounts().topup(admin_, alice_.tenant_id, amount, "", std::nullopt));
  }
};

TEST_F(ReservedTermsTest, ATermIsPaidUpFrontAtItsDiscountAndItsWorkPaysNoGpuPrice) {
  top_up(3'000 * kMicrosPerUnit);
  const Micros before = balance(alice_);
  const auto r = book(term(1, 7, model::ReservationPayment::kUpfront));
  EXPECT_EQ(r.state, model::ReservationState::kActive);
  EXPECT_EQ(r.discount_permille, 100);
  EXPECT_EQ(r.total, kWeekOfOneH100);
  EXPECT_EQ(r.paid, kWeekOfOneH100);
  EXPECT_EQ(balance(alice_), before - kWeekOfOneH100);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);

  auto reserved = spec(1);
  reserved.pricing = model::PricingModel::kReserved;
  reserved.reservation_id = r.id;
  const auto instance = launch(alice_, reserved);
  run(instance.id);
  keep_running(instance.id, 3700);
  stop(alice_, instance.id);
  const auto usage = ctl_.metering().usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_GE(usage[0]->billed_seconds, 3600);
  EXPECT_EQ(usage[0]->charged, 0);  // no CPU, memory or disk price is set: nothing at all
  EXPECT_EQ(balance(alice_), before - kWeekOfOneH100);
  // An hour of the week is earned; the rest of the prepayment waits.
  EXPECT_EQ(current(r.id).recognised, charge_pro_rata(kWeekOfOneH100, 1, 1, 7 * 24));

  clock_.advance(std::chrono::days(7));
  ctl_.tick();
  EXPECT_EQ(current(r.id).state, model::ReservationState::kEnded);
  EXPECT_EQ(current(r.id).recognised, kWeekOfOneH100);
  EXPECT_EQ(balance(alice_), before - kWeekOfOneH100);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

TEST_F(ReservedTermsTest, ATermTheBalanceDoesNotCoverIsRefusedWithNothingBooked) {
  const auto refused =
      ctl_.create_reservation(alice_, term(1, 7, model::ReservationPayment::kUpfront));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kPaymentRequired);
  EXPECT_EQ(refused.error().code, "insufficient_funds");
  EXPECT_TRUE(ctl_.reservations().list(alice_).empty());
  EXPECT_EQ(balance(alice_), 1'000 * kMicrosPerUnit);
}

TEST_F(ReservedTermsTest, MonthlyPaymentsFallDueEachThirtyDaysAndAddUpToTheTotal) {
  top_up(20'000 * kMicrosPerUnit);
  const Micros before = balance(alice_);
  const auto r = book(term(1, 40, model::ReservationPayment::kMonthly));
  EXPECT_EQ(r.discount_permille, 200);
  const Micros total = r.total;
  EXPECT_EQ(total, 18 * kMicrosPerUnit * 24 * 40 * 8 / 10);
  EXPECT_EQ(r.paid, charge_pro_rata(total, 30, 1, 40));
  EXPECT_EQ(balance(alice_), before - r.paid);
  clock_.advance(std::chrono::days(30));
  ctl_.tick();
  EXPECT_EQ(current(r.id).paid, total);
  EXPECT_EQ(current(r.id).periods_paid, 2);
  EXPECT_EQ(balance(alice_), before - total);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

TEST_F(ReservedTermsTest, CancellingBeforeTheWindowRefundsAndAfterItStartsDoesNot) {
  top_up(3'000 * kMicrosPerUnit);
  const Micros before = balance(alice_);
  const auto later = book(term(1, 7, model::ReservationPayment::kUpfront, std::chrono::hours(2)));
  EXPECT_EQ(later.state, model::ReservationState::kBooked);
  EXPECT_EQ(balance(alice_), before - kWeekOfOneH100);
  ASSERT_TRUE(ctl_.cancel_reservation(alice_, later.id));
  EXPECT_TRUE(current(later.id).refunded);
  EXPECT_EQ(balance(alice_), before);

  const auto now = book(term(1, 7, model::ReservationPayment::kUpfront));
  clock_.advance(std::chrono::hours(2));
  ASSERT_TRUE(ctl_.cancel_reservation(alice_, now.id));
  EXPECT_FALSE(current(now.id).refunded);
  EXPECT_EQ(current(now.id).recognised, kWeekOfOneH100);  // a commitment, earned at once
  EXPECT_EQ(balance(alice_), before - kWeekOfOneH100);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);

  // The invoice lists both payments and the refund; its totals are the ledger's.
  const auto invoice =
      ctl_.metering().invoice(alice_, alice_.tenant_id, billing::month_of(clock_.now()));
  ASSERT_TRUE(invoice);
  Micros reserved = 0, refunds = 0;
  for (const auto& line : invoice->lines) {
    if (line.category == "reserved_terms") reserved += line.amount;
    if (line.category == "refunds") refunds += line.amount;
  }
  EXPECT_EQ(reserved, 2 * kWeekOfOneH100);
  EXPECT_EQ(refunds, -kWeekOfOneH100);
  EXPECT_EQ(invoice->closing_balance, balance(alice_));
}

}  // namespace
}  // namespace gpurent::controller
