#include "agent/sim_workloads.h"
// Deterministic simulation of the accounts: weeks of virtual time with random launches, stops,
// package purchases, price changes, reserved terms (booked, used by reserved work, cancelled),
// silent nodes and controller restarts through a SQLite store round trip. After every step: the
// ledger sums to zero, every metered second is paid exactly once (to cash at the run's price, or
// from a package; reserved work's GPUs not at all), packages and reserved terms have earned
// exactly their share, nothing is charged past a down node's last good report, and (every few
// hundred steps) the invoices equal the ledger.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "billing/reserved.h"
#include "common/random.h"
#include "controller/controller.h"
#include "store/store.h"

namespace gpurent::controller {
namespace {

struct SimNode {
  std::string id;
  bool silent = false;
  agent::SimWorkloads workloads;
};

class BillingSimulation {
 public:
  BillingSimulation(uint64_t seed, const std::string& path)
      : rng_(seed), clock_(from_unix_ms(1'790'000'000'000)), seed_(seed) {
    store_ = std::move(*store::open_sqlite_store(path));
    ctl_ = std::make_unique<Controller>(clock_, ControllerOptions{.seed = seed});
    admin_ = *ctl_->accounts().credentials().authenticate(
        ctl_->accounts().bootstrap_admin(hash_secret("admin"), "", 0)->secret_hash);
    EXPECT_TRUE(ctl_->accounts().credentials().create_join_token(admin_, "", std::chrono::days(365),
                                                                 hash_secret("join")));
    for (int n = 0; n < 3; ++n) {
      model::NodeRegistration registration{.name = "node" + std::to_string(n),
                                           .cpu_count = 32,
                                           .memory_mb = 1 << 20,
                                           .simulated = true};
      for (int g = 0; g < 8; ++g) {
        registration.gpus.push_back(
            {fmt::format("GPU-{}-{}", n, g), g, n == 2 ? "a100-80g" : "h100-80g", "sim", 81920});
      }
      auto node = ctl_->register_node(hash_secret("join"), registration, "c",
                                      hash_secret(fmt::format("c{}", n)));
      EXPECT_TRUE(node);
      nodes_.push_back({node->node_id});
    }
    EXPECT_TRUE(ctl_->accounts().packages().set_product(
        admin_, {"small", "h100-80g", 2, 30 * kMicrosPerUnit + 7, /*validity_days=*/3}));
    EXPECT_TRUE(
        ctl_->accounts().packages().set_product(admin_, {"a100", "a100-80g", 5, 55'555'555, 10}));
    for (int t = 0; t < 3; ++t) {
      auto tenant = ctl_->accounts().create_tenant(admin_, "tenant" + std::to_string(t));
      EXPECT_TRUE(ctl_->accounts().credentials().create_api_key(
          admin_, {tenant->id, model::Role::kTenantAdmin, "", hash_secret(tenant->id), ""}));
      tenants_.push_back(*ctl_->accounts().credentials().authenticate(hash_secret(tenant->id)));
      topup(tenant->id, (t + 1) * 300 * kMicrosPerUnit);
    }
    commit();
  }

  void step() {
    const uint64_t action = rng_.uniform(12);
    switch (action) {
      case 0:
      case 1:
        launch();
        break;
      case 2:
        stop_or_start();
        break;
      case 3:
        (void)ctl_->accounts().packages().buy(
            random_tenant(), rng_.uniform(3) == 0 ? "a100" : "small", std::nullopt, "");
        break;
      case 4:
        nodes_[rng_.uniform(nodes_.size())].silent ^= true;
        break;
      case 5:
        if (rng_.uniform(20) == 0) topup(random_tenant().tenant_id, 200 * kMicrosPerUnit);
        break;
      case 6:
        if (rng_.uniform(10) == 0) change_price();
        break;
      default:
        break;
    }
    for (auto& node : nodes_) {
      if (!node.silent) converge_and_report(node);
    }
    // Booking counts the GPUs of nodes that report, so after the reports (a step's clock jump
    // leaves every node past its heartbeat timeout until it reports again).
    if (action == 7 && rng_.uniform(4) == 0) reserve_or_cancel();
    if (action == 8) launch_reserved();
    clock_.advance(Millis(1000 + rng_.uniform(600'000)));
    ctl_->tick();
    commit();
    if (rng_.uniform(200) == 0) restart();
    // The money check reads every transfer: every few steps, so that weeks stay quick.
    check_invariants(++steps_ % 20 == 0);
  }

  void check_invoices() {
    for (const auto& who : tenants_) {
      const auto months = ctl_->metering().invoice_months(who, who.tenant_id);
      ASSERT_TRUE(months);
      Micros closing = 0;
      for (const auto& month : *months) {
        const auto invoice = ctl_->metering().invoice(who, who.tenant_id, month);
        ASSERT_TRUE(invoice);
        ASSERT_EQ(invoice->opening_balance, closing);
        ASSERT_EQ(
            invoice->opening_balance - invoice->charges - invoice->credits - invoice->payments,
            invoice->closing_balance);
        closing = invoice->closing_balance;
      }
      ASSERT_EQ(closing, *ctl_->accounts().balance(who, who.tenant_id));
    }
  }

  int restarts() const { return restarts_; }
  int64_t package_seconds() const { return package_seconds_; }
  int64_t reserved_terms() const { return reserved_terms_; }
  int64_t reserved_runs() const { return reserved_runs_; }

 private:
  const model::Principal& random_tenant() { return tenants_[rng_.uniform(tenants_.size())]; }

  void topup(const std::string& tenant_id, Micros amount) {
    EXPECT_TRUE(ctl_->accounts().topup(admin_, tenant_id, amount, "", std::nullopt));
  }

  void launch() {
    model::InstanceSpec spec;
    spec.gpu_types = {rng_.uniform(3) == 0 ? "a100-80g" : "h100-80g"};
    spec.gpu_count = static_cast<int>(1 + rng_.uniform(4));
    spec.command = {"train"};
    (void)ctl_->create_instance(random_tenant(), spec, std::nullopt, "");
  }

  // A new H100 or A100 price, now or a few minutes ahead (never retroactive).
  void change_price() {
    billing::PriceChange change;
    const Micros price = 5 * kMicrosPerUnit + static_cast<Micros>(rng_.uniform(20'000'000));
    change.gpu_per_hour.emplace(rng_.uniform(2) == 0 ? "h100-80g" : "a100-80g", price);
    if (rng_.uniform(2) == 0) change.effective_at = clock_.now() + Millis(rng_.uniform(900'000));
    ASSERT_TRUE(ctl_->set_prices(admin_, change));
  }

  // Books one or two GPUs for hours or weeks (up front or monthly, now or later), or cancels one.
  void reserve_or_cancel() {
    const auto& who = random_tenant();
    const auto mine = ctl_->reservations().list(who);
    if (!mine.empty() && rng_.uniform(3) == 0) {
      (void)ctl_->cancel_reservation(who, mine[rng_.uniform(mine.size())]->id);
      return;
    }
    // One draw per statement: the order of draws is the seed's history.
    const bool later = rng_.uniform(2) == 0;
    const Millis wait(later ? rng_.uniform(7'200'000) : 0);
    NewReservation booking{.gpu_type = "h100-80g",
                           .gpu_count = static_cast<int>(1 + rng_.uniform(2)),
                           .start = clock_.now() + wait,
                           .payment = rng_.uniform(2) == 0 ? model::ReservationPayment::kUpfront
                                                           : model::ReservationPayment::kMonthly};
    if (rng_.uniform(3) == 0) {
      booking.term_days = static_cast<int>(1 + rng_.uniform(40));
    } else {
      booking.end = booking.start + Millis(3'600'000 + rng_.uniform(20 * 3'600'000));
    }
    (void)ctl_->create_reservation(who, booking);  // refused when overbooked or unaffordable
  }

  void launch_reserved() {
    const auto& who = random_tenant();
    for (const auto* reservation : ctl_->reservations().list(who)) {
      if (reservation->state != model::ReservationState::kActive) continue;
      model::InstanceSpec spec;
      spec.gpu_types = {reservation->gpu_type};
      spec.gpu_count = reservation->gpu_count;
      spec.pricing = model::PricingModel::kReserved;
      spec.reservation_id = reservation->id;
      spec.command = {"train"};
      (void)ctl_->create_instance(who, spec, std::nullopt, "");
      return;
    }
  }

  void stop_or_start() {
    const auto& who = random_tenant();
    const auto page = ctl_->instances().list(who, {}, "", 1000);
    if (page->items.empty()) return;
    const std::string id = page->items[rng_.uniform(page->items.size())]->id;
    if (rng_.uniform(2) == 0) {
      (void)ctl_->stop_instance(who, id);
    } else {
      (void)ctl_->start_instance(who, id);
    }
  }

  void converge_and_report(SimNode& node) {
    const auto desired = ctl_->fleet().desired_state(node.id);
    ASSERT_TRUE(desired);
    ASSERT_TRUE(ctl_->apply_report(
        node.id,
        agent::converge_and_report(node.workloads, *desired, agent::sim_time(clock_.now()))));
  }

  void commit() { ASSERT_TRUE(store_->commit(ctl_->take_changes(Controller::Form::kStoreRows))); }

  // A new controller from what the store holds, as a server restart does.
  void restart() {
    const std::vector<Micros> before = balances();
    auto snapshot = store_->load();
    ASSERT_TRUE(snapshot);
    ctl_ = std::make_unique<Controller>(clock_, ControllerOptions{.seed = seed_ + ++restarts_});
    ASSERT_TRUE(ctl_->restore(std::move(*snapshot)));
    ctl_->fleet().forgive_silence_until_now();
    ASSERT_EQ(balances(), before);
  }

  std::vector<Micros> balances() {
    std::vector<Micros> out;
    for (const auto& who : tenants_) out.push_back(*ctl_->accounts().balance(who, who.tenant_id));
    return out;
  }

  void check_invariants(bool money) {
    ASSERT_EQ(ctl_->accounts().ledger_total(), 0);
    std::map<std::string, const model::Node*> down;
    for (const auto* node : ctl_->fleet().nodes().list(admin_, "", SIZE_MAX).items) {
      if (node->state == model::NodeState::kDown) down[node->id] = node;
    }
    package_seconds_ = 0;
    reserved_runs_ = 0;
    for (const auto& who : tenants_) {
      // Money: the balance is what came in less what the usage records and packages cost.
      Micros in = 0;
      Micros package_prices = 0;
      for (const auto& t : money ? ctl_->accounts().transfers(who.tenant_id) : kNoTransfers) {
        // Top-ups and credits (SLA credits, from the month's end on) come in.
        // ... and so do refunds of reserved terms cancelled before their window.
        if (t.kind == model::TransferKind::kTopup || t.kind == model::TransferKind::kCredit ||
            t.kind == model::TransferKind::kRefund) {
          in += t.amount;
        }
        if (t.kind == model::TransferKind::kPurchase) package_prices += t.amount;
      }
      Micros charged = 0;
      std::map<std::string, int64_t> drawn;  // milli-GPU-seconds from packages, by GPU type
      for (const auto* usage : ctl_->metering().usage(who.tenant_id)) {
        const int64_t milli = int64_t{usage->gpu_count} * usage->gpu_milli;
        // One rounding per price segment (billing/billing.h): the open one is exact.
        ASSERT_EQ(usage->segment_charged,
                  charge_pro_rata(usage->segment_rate, 1, usage->segment_seconds,
                                  billing::rate_period(*usage)));
        ASSERT_LE(usage->segment_charged, usage->charged);
        // Each metered second is in exactly one of the two counts, and never ahead of time.
        ASSERT_LE((usage->billed_seconds + usage->package_seconds) * 1000,
                  (usage->metered_until - usage->started_at).count());
        ASSERT_LE(usage->metered_until, clock_.now());
        charged += usage->charged;
        // No CPU, memory or disk price is set here: reserved work costs nothing beyond its term.
        if (usage->pricing == model::PricingModel::kReserved) {
          ASSERT_EQ(usage->charged, 0);
          ++reserved_runs_;
        }
        if (usage->package_seconds > 0) drawn[usage->gpu_type] += usage->package_seconds * milli;
        package_seconds_ += usage->package_seconds;
        const auto* instance = *ctl_->instances().get(admin_, usage->instance_id);
        if (!usage->ended_at && down.contains(instance->node_id)) {
          ASSERT_LE(usage->metered_until, down.at(instance->node_id)->last_heartbeat)
              << "charged past a down node's last good report";
        }
      }
      if (money) {
        ASSERT_EQ(*ctl_->accounts().balance(who, who.tenant_id), in - charged - package_prices);
      }
      std::map<std::string, int64_t> used;
      for (const auto* package : ctl_->accounts().packages().of_tenant(who.tenant_id)) {
        ASSERT_LE(package->used, package->capacity);
        ASSERT_EQ(package->recognised,
                  package->expired
                      ? package->price
                      : charge_pro_rata(package->price, package->used, 1, package->capacity));
        if (package->used > 0) used[package->gpu_type] += package->used;
      }
      ASSERT_EQ(drawn, used) << "package draws and usage records disagree";
      for (const auto* r : ctl_->reservations().list(who)) {
        // Paid is k whole payments (billing/reserved.h); earned never runs ahead of paid; an
        // ended term is paid and earned in full; a refunded one earned nothing.
        ASSERT_GT(r->periods_paid, 0);
        ASSERT_EQ(r->paid, r->periods_paid >= billing::payment_count(*r)
                               ? r->total
                               : charge_pro_rata(r->total, r->periods_paid,
                                                 billing::kReservationPaymentPeriod.count(),
                                                 (r->end - r->start).count()));
        ASSERT_LE(r->recognised, r->paid);
        if (r->refunded) {
          ASSERT_EQ(r->recognised, 0);
        }
        if (r->state == model::ReservationState::kEnded) {
          ASSERT_EQ(r->paid, r->total);
          ASSERT_EQ(r->recognised, r->total);
        }
        reserved_terms_ += r->paid > 0;
      }
    }
  }

  Rng rng_;
  ManualClock clock_;
  uint64_t seed_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Controller> ctl_;
  model::Principal admin_;
  std::vector<SimNode> nodes_;
  std::vector<model::Principal> tenants_;
  inline static const std::vector<model::Transfer> kNoTransfers;
  int steps_ = 0;
  int restarts_ = 0;
  int64_t package_seconds_ = 0;
  int64_t reserved_terms_ = 0;  // paid terms seen by the checks (counted again at each)
  int64_t reserved_runs_ = 0;
};

TEST(BillingSimulation, AccountsStayExactOverWeeksOfRandomHistory) {
  // Every step commits (fsync): in memory where the machine has it.
  const std::filesystem::path base = std::filesystem::is_directory("/dev/shm")
                                         ? "/dev/shm"
                                         : std::filesystem::temp_directory_path();
  const auto dir = base / ("gpurent-billing-sim-" + std::to_string(os_random_seed()));
  std::filesystem::create_directories(dir);
  for (uint64_t seed = 1; seed <= 1; ++seed) {
    BillingSimulation sim(seed, (dir / fmt::format("{}.db", seed)).string());
    // About 300 s a step: some four weeks, across a month's end.
    for (int i = 0; i < 8'000; ++i) {
      sim.step();
      if (i % 1000 == 999) sim.check_invoices();
      if (testing::Test::HasFatalFailure()) {
        std::filesystem::remove_all(dir);
        FAIL() << "seed " << seed << " broke an invariant at step " << i;
      }
    }
    sim.check_invoices();
    EXPECT_GT(sim.restarts(), 10) << "seed " << seed;
    EXPECT_GT(sim.package_seconds(), 0) << "seed " << seed;  // packages really were drawn
    EXPECT_GT(sim.reserved_terms(), 0) << "seed " << seed;   // terms really were paid
    EXPECT_GT(sim.reserved_runs(), 0) << "seed " << seed;    // and reserved work ran on them
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpurent::controller
