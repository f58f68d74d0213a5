// Deterministic simulation of the controller: seeded random tenants and agents drive it through
// launches, stops, restarts, deletions, workload exits, silent nodes, GPU XIDs (fatal ones
// quarantine the GPU; operators release it again) and billing ticks, and after
// every step the invariants that money, placement and self-healing rely on are checked. The same
// seed always gives the same history, so a failing seed is a reproducible bug report.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "agent/sim_workloads.h"
#include "common/random.h"
#include "controller/controller.h"

namespace gpurent::controller {
namespace {

struct SimNode {
  std::string id;
  bool silent = false;
  Timestamp last_report{};
  // The simulated agent's runs.
  agent::SimWorkloads workloads;
  // XID events its next report carries (a silent node's wait until it reports again).
  std::vector<model::XidEvent> xids;
};

class Simulation {
 public:
  explicit Simulation(uint64_t seed)
      : rng_(seed), clock_(from_unix_ms(1'790'000'000'000)), ctl_(clock_, {.seed = seed}) {
    admin_ = *ctl_.accounts().credentials().authenticate(
        ctl_.accounts().bootstrap_admin(hash_secret("admin"), "", 0)->secret_hash);
    EXPECT_TRUE(ctl_.accounts().credentials().create_join_token(admin_, "", std::chrono::hours(24),
                                                                hash_secret("join")));
    for (int n = 0; n < 4; ++n) {
      model::NodeRegistration registration{.name = "node" + std::to_string(n),
                                           .cpu_count = 32,
                                           .memory_mb = 1 << 20,
                                           .simulated = true};
      const int gpus = n == 0 ? 2 : 8;
      for (int g = 0; g < gpus; ++g) {
        registration.gpus.push_back(
            {fmt::format("GPU-{}-{}", n, g), g, n == 3 ? "a100-80g" : "h100-80g", "sim", 81920});
      }
      auto node = ctl_.register_node(hash_secret("join"), registration, "c",
                                     hash_secret(fmt::format("c{}", n)));
      EXPECT_TRUE(node);
      nodes_.push_back({node->node_id, false, clock_.now(), {}});
    }
    for (int t = 0; t < 3; ++t) {
      auto tenant = ctl_.accounts().create_tenant(admin_, "tenant" + std::to_string(t));
      EXPECT_TRUE(ctl_.accounts().credentials().create_api_key(
          admin_, {tenant->id, model::Role::kTenantAdmin, "", hash_secret(tenant->id), ""}));
      const Micros topup = (t + 1) * 20 * kMicrosPerUnit;  // tenant0 runs out of money sometimes
      EXPECT_TRUE(ctl_.accounts().topup(admin_, tenant->id, topup, "", std::nullopt));
      tenants_.push_back(*ctl_.accounts().credentials().authenticate(hash_secret(tenant->id)));
      topped_up_[tenant->id] = topup;
    }
  }

  void step() {
    switch (rng_.uniform(10)) {
      case 0:
      case 1:
        launch();
        break;
      case 2:
        act_on_random_instance();
        break;
      case 3:
        exit_random_workload();
        break;
      case 4:
        toggle_silence();
        break;
      case 5:
        if (rng_.uniform(8) == 0) gpu_fault_or_release();
        break;
      default:
        break;
    }
    for (auto& node : nodes_) {
      if (!node.silent && rng_.uniform(3) != 0) converge_and_report(node);
    }
    clock_.advance(Millis(rng_.uniform(4000)));
    ctl_.tick();
    ctl_.take_changes();
    check_invariants();
  }

  std::string fingerprint() {
    std::string out = std::to_string(ctl_.accounts().ledger_total());
    for (const auto& who : tenants_) {
      out += "|" + std::to_string(*ctl_.accounts().balance(who, who.tenant_id));
      const auto page = ctl_.instances().list(who, {}, "", 1000);
      for (const auto* instance : page->items) {
        out += fmt::format(",{}:{}:{}", instance->id, model::to_string(instance->state),
                           instance->run);
      }
    }
    return out;
  }

  int launched() const { return launched_; }
  size_t moves() const {
    return ctl_.events()
        .list(admin_, {.kind = std::string(model::event_kind::kInstanceMoved)}, 100'000)
        .size();
  }
  int quarantines() const { return quarantines_; }
  Micros charged_total() const {
    Micros total = 0;
    for (const auto& who : tenants_) {
      for (const auto* usage : ctl_.metering().usage(who.tenant_id)) total += usage->charged;
    }
    return total;
  }

 private:
  const model::Principal& random_tenant() { return tenants_[rng_.uniform(tenants_.size())]; }

  void launch() {
    model::InstanceSpec spec;
    spec.gpu_types = {rng_.uniform(4) == 0 ? "a100-80g" : "h100-80g"};
    spec.gpu_count = static_cast<int>(1 + rng_.uniform(8));
    spec.command = {"train"};
    // Spot work waits for a failed node (restart policy never); the rest moves off it.
    if (rng_.uniform(4) == 0) spec.pricing = model::PricingModel::kSpot;
    spec.restart_policy = model::default_restart_policy(spec.pricing);
    if (ctl_.create_instance(random_tenant(), spec, std::nullopt, "")) ++launched_;
  }

  void act_on_random_instance() {
    const auto& who = random_tenant();
    const auto page = ctl_.instances().list(who, {}, "", 1000);
    if (page->items.empty()) return;
    const std::string id = page->items[rng_.uniform(page->items.size())]->id;
    switch (rng_.uniform(3)) {
      case 0:
        (void)ctl_.stop_instance(who, id);
        break;  // refusals are legitimate outcomes
      case 1:
        (void)ctl_.start_instance(who, id);
        break;
      default:
        (void)ctl_.delete_instance(who, id);
        break;
    }
  }

  void exit_random_workload() {
    auto& node = nodes_[rng_.uniform(nodes_.size())];
    const auto running = node.workloads.running();
    if (!running.empty()) node.workloads.end(running.front(), static_cast<int>(rng_.uniform(3)));
  }

  void toggle_silence() {
    auto& node = nodes_[rng_.uniform(nodes_.size())];
    node.silent = !node.silent;
  }

  // A GPU raises an XID (fatal or not) with its node's next report, or an operator releases a
  // quarantined GPU.
  void gpu_fault_or_release() {
    auto& node = nodes_[rng_.uniform(nodes_.size())];
    const auto quarantined = ctl_.fleet().quarantines().on_node(node.id);
    if (!quarantined.empty() && rng_.uniform(2) == 0) {
      const int index = quarantined[rng_.uniform(quarantined.size())]->gpu_index;
      ASSERT_TRUE(ctl_.release_gpu(admin_, node.id, index));
      return;
    }
    const auto& gpus = (*ctl_.fleet().nodes().get(admin_, node.id))->gpus;
    constexpr int64_t kCodes[] = {79, 48, 94, 95, 13, 31};
    node.xids.push_back({gpus[rng_.uniform(gpus.size())].uuid, to_unix_ms(clock_.now()),
                         kCodes[rng_.uniform(std::size(kCodes))]});
  }

  // The agent: starts what should run, stops what should not, reports.
  void converge_and_report(SimNode& node) {
    const auto desired = ctl_.fleet().desired_state(node.id);
    ASSERT_TRUE(desired);
    auto report =
        agent::converge_and_report(node.workloads, *desired, agent::sim_time(clock_.now()));
    report.telemetry.xids = std::move(node.xids);
    node.xids.clear();
    // The runs on each failing GPU as the report arrives.
    std::map<std::string, std::vector<std::pair<std::string, int64_t>>> hit;
    for (const auto& xid : report.telemetry.xids) {
      for (const auto& id : ctl_.fleet().placements().holders(xid.uuid)) {
        hit[xid.uuid].emplace_back(id, (*ctl_.instances().get(admin_, id))->run);
      }
    }
    const bool was_ready =
        (*ctl_.fleet().nodes().get(admin_, node.id))->state == model::NodeState::kReady;
    ASSERT_TRUE(ctl_.apply_report(node.id, report));
    node.last_report = clock_.now();
    for (const auto& xid : report.telemetry.xids) {
      std::set<std::string> out;
      for (const auto* q : ctl_.fleet().quarantines().on_node(node.id)) out.insert(q->id);
      if (!model::is_fatal_xid(xid.code)) continue;
      ++quarantines_;
      // Detected at the report that carried it; nothing runs on the GPU any more, and the node's
      // desired set holds nothing on it (its agent stops the old runs).
      ASSERT_TRUE(out.contains(xid.uuid)) << xid.uuid;
      ASSERT_TRUE(ctl_.fleet().placements().holders(xid.uuid).empty()) << xid.uuid;
      const auto desired = ctl_.fleet().desired_state(node.id);
      for (const auto& workload : desired->workloads) {
        ASSERT_EQ(std::count(workload.gpus.begin(), workload.gpus.end(), xid.uuid), 0);
      }
      if (was_ready) {
        ASSERT_EQ(ctl_.fleet().node_status(**ctl_.fleet().nodes().get(admin_, node.id)),
                  "degraded");
      }
      for (const auto& [id, run] : hit[xid.uuid]) {
        const model::Instance& instance = **ctl_.instances().get(admin_, id);
        // Moved (a new run, or waiting for one) or stopped; its old run billed no further.
        ASSERT_TRUE(instance.run > run || !model::holds_gpus(instance.state)) << id;
        for (const auto* usage : ctl_.metering().usage(instance.tenant_id)) {
          if (usage->instance_id == id && usage->run == run) {
            ASSERT_TRUE(usage->ended_at) << id;
            ASSERT_LE(*usage->ended_at, clock_.now());
          }
        }
      }
    }
  }

  void check_invariants() {
    ASSERT_EQ(ctl_.accounts().ledger_total(), 0);
    // A node silent past the heartbeat timeout is found down by the next tick.
    for (const auto& node : nodes_) {
      if (clock_.now() - node.last_report > ctl_.options().heartbeat_timeout) {
        ASSERT_EQ((*ctl_.fleet().nodes().get(admin_, node.id))->state, model::NodeState::kDown)
            << node.id;
      }
    }
    std::set<std::string> held;
    for (const auto& who : tenants_) {
      Micros charged = 0;
      for (const auto* usage : ctl_.metering().usage(who.tenant_id)) {
        // One rounding per price segment (billing/billing.h): the open one is exact.
        ASSERT_EQ(usage->segment_charged,
                  charge_pro_rata(usage->segment_rate, 1, usage->segment_seconds,
                                  billing::rate_period(*usage)));
        ASSERT_LE(usage->segment_charged, usage->charged);
        // No second charged twice: at most the seconds metered, or the minimum for a run that
        // ended sooner.
        const int64_t metered_s = (usage->metered_until - usage->started_at).count() / 1000;
        const int64_t minimum =
            usage->ended_at ? ctl_.pricing().book().at(usage->started_at).minimum_billed_seconds
                            : 0;
        ASSERT_LE(usage->billed_seconds, std::max(metered_s, minimum));
        ASSERT_LE(usage->metered_until, clock_.now());
        charged += usage->charged;
      }
      ASSERT_EQ(*ctl_.accounts().balance(who, who.tenant_id), topped_up_[who.tenant_id] - charged);
      std::map<std::string, int> open_runs;  // every second is billed to one run at most
      for (const auto* usage : ctl_.metering().usage(who.tenant_id)) {
        if (!usage->ended_at) {
          ASSERT_EQ(++open_runs[usage->instance_id], 1) << usage->instance_id;
        }
      }
      const auto page = ctl_.instances().list(who, {}, "", 1000);
      for (const auto* instance : page->items) {
        if (model::holds_gpus(instance->state)) {
          const model::Node& node = **ctl_.fleet().nodes().get(admin_, instance->node_id);
          if (node.state == model::NodeState::kDown) {
            // Moved at once, unless it waits for its node; never billed past the last report.
            ASSERT_EQ(instance->spec.restart_policy, model::RestartPolicy::kNever) << instance->id;
            for (const auto* usage : ctl_.metering().usage(who.tenant_id)) {
              if (usage->instance_id == instance->id && !usage->ended_at) {
                ASSERT_LE(usage->metered_until, node.last_heartbeat);
              }
            }
          }
        }
        if (!model::holds_gpus(instance->state)) {
          ASSERT_TRUE(instance->gpus.empty()) << instance->id;
          continue;
        }
        ASSERT_EQ(static_cast<int>(instance->gpus.size()), instance->spec.gpu_count);
        std::set<std::string> out;  // no work on a quarantined GPU, ever
        for (const auto* q : ctl_.fleet().quarantines().on_node(instance->node_id))
          out.insert(q->id);
        for (const auto& gpu : instance->gpus) {
          ASSERT_FALSE(out.contains(gpu)) << instance->id << " is on quarantined GPU " << gpu;
          ASSERT_TRUE(held.insert(gpu).second) << "GPU " << gpu << " is held twice";
          ASSERT_EQ(ctl_.fleet().placements().holders(gpu), std::set<std::string>{instance->id});
        }
      }
    }
  }

  Rng rng_;
  ManualClock clock_;
  Controller ctl_;
  model::Principal admin_;
  std::vector<SimNode> nodes_;
  std::vector<model::Principal> tenants_;
  std::map<std::string, Micros> topped_up_;
  int launched_ = 0;
  int quarantines_ = 0;
};

TEST(ControllerSimulation, InvariantsHoldAcrossRandomHistories) {
  int total_quarantines = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Simulation sim(seed);
    for (int i = 0; i < 2000; ++i) {
      sim.step();
      if (testing::Test::HasFatalFailure()) {
        FAIL() << "seed " << seed << " broke an invariant at step " << i;
      }
    }
    EXPECT_GT(sim.launched(), 100) << "seed " << seed;
    EXPECT_GT(sim.charged_total(), 0) << "seed " << seed;  // the histories really ran and billed
    EXPECT_GT(sim.moves(), 0u) << "seed " << seed;         // and nodes failed under running work
    total_quarantines += sim.quarantines();
  }
  EXPECT_GT(total_quarantines, 20);  // and GPUs failed
}

TEST(ControllerSimulation, TheSameSeedReplaysTheSameHistory) {
  Simulation a(42), b(42), c(43);
  for (int i = 0; i < 1000; ++i) {
    a.step();
    b.step();
    c.step();
  }
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_NE(a.fingerprint(), c.fingerprint());
}

}  // namespace
}  // namespace gpurent::controller
