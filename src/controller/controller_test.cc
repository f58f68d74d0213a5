#include "controller/controller.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "controller/controller_test_fixture.h"
#include "model/codec.h"

namespace gpurent::controller {
namespace {

TEST_F(ControllerTest, LaunchIsPlacedStartedAndBilledPerSecondExactly) {
  const auto instance = launch(alice_, 2);
  EXPECT_EQ(instance.state, InstanceState::kStarting);
  EXPECT_EQ(instance.node_id, node_);
  EXPECT_EQ(instance.gpus, (std::vector<std::string>{"GPU-a0", "GPU-a1"}));

  const auto desired = ctl_.fleet().desired_state(node_);
  ASSERT_EQ(desired->workloads.size(), 1u);
  EXPECT_TRUE(desired->workloads[0].should_run);
  EXPECT_EQ(desired->workloads[0].gpus, instance.gpus);

  const Micros before = balance(alice_);
  clock_.advance(Millis(300));
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  EXPECT_EQ(get(instance.id).state, InstanceState::kRunning);

  clock_.advance(Millis(90'500));  // crosses one billing interval
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  ctl_.tick();
  EXPECT_EQ(before - balance(alice_), 90 * 2 * kH100PerSecond);

  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopping);
  EXPECT_FALSE(ctl_.fleet().desired_state(node_)->workloads[0].should_run);
  clock_.advance(Millis(10'000));
  report(node_, {{instance.id, 1, model::WorkloadPhase::kExited, 143, ""}});
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopped);
  EXPECT_TRUE(ctl_.fleet().desired_state(node_)->workloads.empty());

  const auto usage = ctl_.metering().usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0]->billed_seconds, 100);  // 100.5 s running, whole seconds billed
  EXPECT_EQ(usage[0]->charged, 100 * 2 * kH100PerSecond);
  EXPECT_EQ(before - balance(alice_), usage[0]->charged);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

TEST_F(ControllerTest, AStartWhileStoppingStartsTheInstanceOnceItHasStopped) {
  const auto instance = launch(alice_, 1);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  const auto asked = ctl_.start_instance(alice_, instance.id);
  ASSERT_TRUE(asked) << asked.error().message;
  EXPECT_EQ(asked->state, InstanceState::kStopping);
  EXPECT_TRUE(asked->start_requested);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kExited, 143, ""}});
  const auto& again = get(instance.id);
  EXPECT_EQ(again.state, InstanceState::kStarting);  // placed again at once: the GPUs are free
  EXPECT_EQ(again.run, 2);
  EXPECT_FALSE(again.start_requested);

  // Going for good is final: a start cannot bring it back.
  ASSERT_TRUE(ctl_.delete_instance(alice_, instance.id));
  EXPECT_EQ(ctl_.start_instance(alice_, instance.id).error().kind, ErrorKind::kConflict);
}

TEST_F(ControllerTest, ATenantIsNamedByItsIdOrItsName) {
  const auto acme = ctl_.accounts().create_tenant(admin_, "acme");
  ASSERT_TRUE(acme);
  EXPECT_EQ(ctl_.accounts().tenant_id_for(admin_, acme->id), acme->id);
  EXPECT_EQ(ctl_.accounts().tenant_id_for(admin_, "acme"), acme->id);
  EXPECT_EQ(ctl_.accounts().tenant_id_for(admin_, "nobody"),
            "nobody");  // left for the caller's not-found answer
  EXPECT_EQ(ctl_.accounts().tenant_id_for(admin_, ""), "");
  // Another tenant's name stays a name: the not-found answer must not reveal its id.
  EXPECT_EQ(ctl_.accounts().tenant_id_for(alice_, "acme"), "acme");
}

TEST_F(ControllerTest, AnInstanceIsNamedByItsIdOrItsTenantsNameForIt) {
  auto named = spec(1);
  named.name = "train";
  const auto train = launch(alice_, named);
  ASSERT_TRUE(ctl_.instances().get(alice_, "train"));
  EXPECT_EQ((*ctl_.instances().get(alice_, "train"))->id, train.id);
  EXPECT_EQ(ctl_.stop_instance(alice_, "train")->id, train.id);
  // Another tenant's name means nothing to bob, and says nothing of it.
  EXPECT_EQ(ctl_.instances().get(bob_, "train").error().code, "instance_not_found");
  // A typo is answered with what was likely meant, among the caller's own.
  const auto typo = ctl_.instances().get(alice_, "trian");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("did you mean train?"), std::string::npos)
      << typo.error().message;
  // A name two instances share is refused with their ids.
  const auto twin = launch(alice_, named);
  const auto ambiguous = ctl_.instances().get(alice_, "train");
  ASSERT_FALSE(ambiguous);
  EXPECT_EQ(ambiguous.error().code, "ambiguous_name");
  EXPECT_NE(ambiguous.error().message.find(twin.id), std::string::npos);
  EXPECT_EQ((*ctl_.instances().get(alice_, twin.id))->id, twin.id);
}

TEST_F(ControllerTest, EachChangedObjectIsHandedToTheStoreOnceAtItsLatestState) {
  ctl_.take_changes();
  const auto a = launch(alice_, 1);  // created, then placed: two changes of a, two of the node
  const auto b = launch(bob_, 1);
  run(a.id);  // both report running
  auto changes = ctl_.take_changes();
  ASSERT_EQ(changes.instances.size(), 2u);
  EXPECT_EQ(changes.instances[0].id, a.id);  // in the order first changed
  for (const auto& instance : changes.instances) {
    EXPECT_EQ(instance.state, InstanceState::kRunning);
    EXPECT_EQ(instance.revision, get(instance.id).revision);
  }
  // Two new desired sets of the node: they move only its generation, which is not rewritten per
  // change (kGenerationsBetweenNodeWrites); the node's long-polls are woken after the commit.
  EXPECT_TRUE(changes.nodes.empty());
  EXPECT_EQ(changes.woken_nodes, std::set<std::string>{node_});
  EXPECT_EQ(*ctl_.fleet().desired_generation(node_), ctl_.fleet().desired_state(node_)->generation);
  EXPECT_EQ(ctl_.fleet().desired_generation("n-unknown").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(changes.usage.size(), 2u);
  EXPECT_EQ(changes.changed_instances, (std::vector<std::string>{a.id, b.id}));  // once each

  clock_.advance(Millis(61'000));
  run(a.id);
  ctl_.tick();  // meters both
  ASSERT_TRUE(ctl_.stop_instance(alice_, a.id));
  run(a.id, 143);  // a's usage ends: metered again and closed, still one copy
  changes = ctl_.take_changes();
  ASSERT_EQ(changes.usage.size(), 1u);  // a's record closed: whole
  EXPECT_EQ(changes.usage[0].instance_id, a.id);
  EXPECT_EQ(changes.usage[0].billed_seconds, 61);
  EXPECT_TRUE(changes.usage[0].ended_at.has_value());
  ASSERT_EQ(changes.metered_usage.size(), 1u);  // b's only metered: packed
  EXPECT_EQ(changes.usage_id(changes.metered_usage[0]), b.id + "/1");
  EXPECT_EQ(changes.metered_usage[0].billed_seconds, 61);
  EXPECT_EQ(changes.all_transfers().size(), 2u);
  EXPECT_TRUE(ctl_.take_changes().empty());
}

TEST_F(ControllerTest, ForTheStoreChangedInstancesComeSerializedOnce) {
  ctl_.take_changes(Controller::Form::kStoreRows);
  const auto a = launch(alice_, 1);
  run(a.id);
  auto changes = ctl_.take_changes(Controller::Form::kStoreRows);
  EXPECT_TRUE(changes.instances.empty());
  ASSERT_EQ(changes.instance_rows.size(), 1u);
  EXPECT_EQ(changes.instance_rows[0].id, a.id);
  EXPECT_EQ(changes.instance_rows[0].tenant_id, alice_.tenant_id);
  EXPECT_EQ(changes.instance_rows[0].body, model::instance_json(get(a.id)));
  EXPECT_EQ(changes.changed_instances, std::vector<std::string>{a.id});
  EXPECT_EQ(changes.usage.size(), 1u);  // the rest as take_changes() gives it
  EXPECT_TRUE(ctl_.take_changes(Controller::Form::kStoreRows).empty());
}

TEST_F(ControllerTest, NodesAreListedInIdOrderAPageAtATime) {
  add_node("node-b", "h100-80g", 8, "GPU-b");
  add_node("node-c", "a100-80g", 4, "GPU-c");
  std::vector<std::string> all;
  for (const auto* node : ctl_.fleet().nodes().list(admin_, "", 100).items) all.push_back(node->id);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  const auto first = ctl_.fleet().nodes().list(admin_, "", 2);
  ASSERT_EQ(first.items.size(), 2u);
  EXPECT_EQ(first.items[1]->id, all[1]);
  ASSERT_EQ(first.next_cursor, all[1]);
  const auto last = ctl_.fleet().nodes().list(admin_, *first.next_cursor, 2);
  ASSERT_EQ(last.items.size(), 1u);
  EXPECT_EQ(last.items[0]->id, all[2]);
  EXPECT_FALSE(last.next_cursor);
  // A cursor is a position: a node gone since the page that named it does not break the walk.
  const auto after_gone = ctl_.fleet().nodes().list(admin_, all[1] + "-gone", 2);
  ASSERT_EQ(after_gone.items.size(), 1u);
  EXPECT_EQ(after_gone.items[0]->id, all[2]);
  EXPECT_TRUE(ctl_.fleet().nodes().list(alice_, "", 100).items.empty());  // operators only
}

TEST_F(ControllerTest, TenantsCannotSeeOrTouchEachOthersInstances) {
  const auto instance = launch(alice_, 1);
  EXPECT_EQ(ctl_.instances().get(bob_, instance.id).error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(ctl_.stop_instance(bob_, instance.id).error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(ctl_.delete_instance(bob_, instance.id).error().kind, ErrorKind::kNotFound);
  EXPECT_TRUE(ctl_.instances().list(bob_, {}, "", 100)->items.empty());
  EXPECT_EQ(ctl_.instances().list(alice_, {}, "", 100)->items.size(), 1u);
  EXPECT_EQ(ctl_.instances().list(admin_, {}, "", 100)->items.size(), 1u);
  EXPECT_EQ(ctl_.accounts().balance(bob_, alice_.tenant_id).error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(ctl_.accounts().create_tenant(bob_, "mallory").error().kind,
            ErrorKind::kPermissionDenied);
  EXPECT_EQ(ctl_.accounts()
                .credentials()
                .create_api_key(bob_, {bob_.tenant_id, Role::kAdmin, "", "h", ""})
                .error()
                .kind,
            ErrorKind::kPermissionDenied);
}

TEST_F(ControllerTest, IdempotencyKeyReturnsTheSameInstance) {
  auto first = ctl_.create_instance(alice_, spec(1), "key-1", "fp");
  auto again = ctl_.create_instance(alice_, spec(1), "key-1", "fp");
  ASSERT_TRUE(first && again);
  EXPECT_FALSE(first->replayed);
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(first->instance.id, again->instance.id);
  EXPECT_EQ(ctl_.instances().list(alice_, {}, "", 100)->items.size(), 1u);
  EXPECT_EQ(ctl_.create_instance(alice_, spec(2), "key-1", "other").error().code,
            "idempotency_key_reused");
  // Keys are per tenant.
  EXPECT_FALSE(ctl_.create_instance(bob_, spec(1), "key-1", "fp")->replayed);
}

TEST_F(ControllerTest, RefusesUnknownTypesAndEmptyWallets) {
  auto bad = spec(1);
  bad.gpu_types = {"h100-81g"};
  EXPECT_EQ(ctl_.create_instance(alice_, bad, std::nullopt, "").error().code, "unknown_gpu_type");
  auto broke = tenant_principal("broke");
  // Spend the wallet down to almost nothing by topping up nothing more: use a fresh tenant.
  auto empty_tenant = ctl_.accounts().create_tenant(admin_, "empty");
  ASSERT_TRUE(ctl_.accounts().credentials().create_api_key(
      admin_, {empty_tenant->id, Role::kTenantAdmin, "", hash_secret("e"), ""}));
  const auto empty = *ctl_.accounts().credentials().authenticate(hash_secret("e"));
  const auto refused = ctl_.create_instance(empty, spec(1), std::nullopt, "");
  EXPECT_EQ(refused.error().kind, ErrorKind::kPaymentRequired);
  EXPECT_TRUE(ctl_.instances().list(empty, {}, "", 100)->items.empty());
  EXPECT_TRUE(ctl_.create_instance(broke, spec(1), std::nullopt, ""));
}

TEST_F(ControllerTest, QueuesWhenFullAndPlacesWhenCapacityFrees) {
  const auto big = launch(alice_, 8);
  const auto waiting = launch(bob_, 1);
  EXPECT_EQ(waiting.state, InstanceState::kPending);
  report(node_, {{big.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  report(node_, {{big.id, 1, model::WorkloadPhase::kExited, 1, "boom"}});
  EXPECT_EQ(get(big.id).state, InstanceState::kFailed);
  EXPECT_EQ(get(big.id).exit_code, 1);
  EXPECT_EQ(get(waiting.id).state, InstanceState::kStarting);
}

TEST_F(ControllerTest, BestFitKeepsTheBiggerNodeWhole) {
  const std::string small = add_node("node-b", "h100-80g", 2, "GPU-b");
  const auto instance = launch(alice_, 1);
  EXPECT_EQ(instance.node_id, small);
}

TEST_F(ControllerTest, LostWorkloadFailsAndStaleRunReportsAreIgnored) {
  const auto instance = launch(alice_, 1);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  report(node_, {{instance.id, 1, model::WorkloadPhase::kExited, 0, ""}});
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));
  EXPECT_EQ(get(instance.id).run, 2);
  // A late report about run 1 changes nothing for run 2 while the agent has not caught up.
  ASSERT_TRUE(
      ctl_.apply_report(node_, {0, {{instance.id, 1, model::WorkloadPhase::kExited, 9, ""}}}));
  EXPECT_EQ(get(instance.id).state, InstanceState::kStarting);
  // Once the agent has applied the generation and does not list run 2, the run is lost.
  report(node_, {});
  EXPECT_EQ(get(instance.id).state, InstanceState::kFailed);
  EXPECT_EQ(get(instance.id).reason, "the agent lost the workload");
}

TEST_F(ControllerTest, SilentNodeGoesDownAndItsDowntimeIsNotBilled) {
  // Seconds run, as they are billed without a minimum duration (prices_test.cc has that).
  ASSERT_TRUE(ctl_.set_prices(admin_, {.minimum_billed_seconds = 0}));
  auto waits = spec(1);
  waits.restart_policy = model::RestartPolicy::kNever;  // not moved: it waits for its node
  const auto instance = launch(alice_, waits);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  clock_.advance(Millis(5'000));
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  clock_.advance(Millis(120'000));  // silent for two minutes
  ctl_.tick();
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, node_))->state, model::NodeState::kDown);
  EXPECT_EQ(ctl_.metering().usage(alice_.tenant_id)[0]->billed_seconds,
            5);  // up to the last report
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, node_))->state, model::NodeState::kReady);
  clock_.advance(Millis(7'000));
  report(node_, {{instance.id, 1, model::WorkloadPhase::kExited, 0, ""}});
  EXPECT_EQ(ctl_.metering().usage(alice_.tenant_id)[0]->billed_seconds, 12);
  // Back up, it is watched again: ticks within the timeout leave it ready, silence past it
  // takes it down at the first tick after.
  const Millis timeout = ctl_.options().heartbeat_timeout;
  clock_.advance(timeout);
  ctl_.tick();
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, node_))->state, model::NodeState::kReady);
  clock_.advance(Millis(1));
  ctl_.tick();
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, node_))->state, model::NodeState::kDown);
}

TEST_F(ControllerTest, EventsSayWhatHappenedAndOnlyToTheirOwners) {
  auto spot_spec = spec(8);
  spot_spec.pricing = model::PricingModel::kSpot;
  const auto spot = launch(bob_, spot_spec);
  run(spot.id);
  launch(alice_, 1);  // on-demand: bob's spot work makes room
  EXPECT_EQ(get(spot.id).state, InstanceState::kStopping);
  const auto bobs = ctl_.events().list(bob_, {}, 10);
  ASSERT_EQ(bobs.size(), 1u);
  EXPECT_EQ(bobs[0]->kind, model::event_kind::kInstancePreempted);
  EXPECT_EQ(bobs[0]->object_id, spot.id);
  EXPECT_EQ(bobs[0]->message, "preempted by on_demand work");
  EXPECT_TRUE(ctl_.events().list(alice_, {}, 10).empty());

  clock_.advance(Millis(60'000));
  ctl_.tick();  // silent: down, a platform event that only operators see
  EXPECT_EQ(ctl_.events().list(bob_, {}, 10).size(), 1u);
  const auto all = ctl_.events().list(admin_, {}, 10);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1]->kind, model::event_kind::kNodeDown);
  EXPECT_EQ(all[1]->tenant_id, "");
  EXPECT_EQ(all[2]->kind, "alert.firing");  // node_heartbeat_lost (monitoring.h)
  EXPECT_EQ(all[2]->tenant_id, "");
  // The cursor and the filters.
  EXPECT_EQ(ctl_.events().list(admin_, {.after_seq = 1}, 10).size(), 2u);
  EXPECT_EQ(ctl_.events().list(admin_, {.after_seq = 3}, 10).size(), 0u);
  EXPECT_EQ(ctl_.events().list(admin_, {.object_id = node_}, 10).size(), 2u);
  EXPECT_EQ(ctl_.events().list(admin_, {.kind = "node.up"}, 10).size(), 0u);
  EXPECT_EQ(ctl_.events().list(admin_, {.tenant_id = bob_.tenant_id}, 10).size(), 1u);
  EXPECT_EQ(ctl_.events().list(admin_, {}, 1).size(), 1u);
}

TEST_F(ControllerTest, SilenceWhileTheHostWasStalledDoesNotMarkNodesDown) {
  const auto instance = launch(alice_, 1);
  run(instance.id);
  const Timestamp last_report = clock_.now();
  clock_.advance(Millis(9'000));
  ctl_.fleet().forgive_silence_until_now();  // the host's thread was stalled until now
  EXPECT_EQ(ctl_.fleet().silence_counted_from(), clock_.now());
  clock_.advance(Millis(9'000));  // 18 s since the report, 9 s since the host listened again
  ctl_.tick();
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, node_))->state, model::NodeState::kReady);
  clock_.advance(Millis(1'500));  // now silent for longer than the timeout while listened to
  ctl_.tick();
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, node_))->state, model::NodeState::kDown);
  // Billing still ends at the node's last report, not at the forgiven time.
  EXPECT_EQ(ctl_.metering().usage(alice_.tenant_id)[0]->metered_until, last_report);
}

TEST_F(ControllerTest, DeleteTerminatesThroughStopping) {
  const auto instance = launch(alice_, 1);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  ASSERT_TRUE(ctl_.delete_instance(alice_, instance.id));
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopping);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kExited, 143, ""}});
  EXPECT_EQ(get(instance.id).state, InstanceState::kTerminated);
  EXPECT_EQ(ctl_.start_instance(alice_, instance.id).error().code, "invalid_state");
}

TEST_F(ControllerTest, OverdrawnTenantsAreStopped) {
  auto poor_tenant = ctl_.accounts().create_tenant(admin_, "poor");
  ASSERT_TRUE(ctl_.accounts().credentials().create_api_key(
      admin_, {poor_tenant->id, Role::kTenantAdmin, "", hash_secret("p"), ""}));
  const auto poor = *ctl_.accounts().credentials().authenticate(hash_secret("p"));
  ASSERT_TRUE(ctl_.accounts().topup(admin_, poor.tenant_id, 61 * kH100PerSecond, "", std::nullopt));
  const auto instance = launch(poor, 1);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  clock_.advance(Millis(120'000));
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  ctl_.tick();
  EXPECT_LT(balance(poor), 0);
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopping);
  // A start while it stops would run it again: refused for the balance, which is the reason.
  EXPECT_EQ(ctl_.start_instance(poor, instance.id).error().kind, ErrorKind::kPaymentRequired);
}

TEST_F(ControllerTest, TopupIdempotencyAndPagination) {
  auto first = ctl_.accounts().topup(admin_, alice_.tenant_id, 500, "", "t-1");
  auto again = ctl_.accounts().topup(admin_, alice_.tenant_id, 500, "", "t-1");
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->transfer.id, again->transfer.id);
  EXPECT_EQ(first->balance, again->balance);
  EXPECT_EQ(ctl_.accounts().topup(admin_, alice_.tenant_id, 501, "", "t-1").error().code,
            "idempotency_key_reused");
  EXPECT_EQ(ctl_.accounts().topup(alice_, alice_.tenant_id, 500, "", std::nullopt).error().kind,
            ErrorKind::kPermissionDenied);

  for (int i = 0; i < 5; ++i) launch(alice_, 1);
  auto page = ctl_.instances().list(alice_, {}, "", 2);
  ASSERT_EQ(page->items.size(), 2u);
  ASSERT_TRUE(page->next_cursor);
  size_t seen = 2;
  while (page->next_cursor) {
    page = ctl_.instances().list(alice_, {}, *page->next_cursor, 2);
    seen += page->items.size();
  }
  EXPECT_EQ(seen, 5u);
}

TEST_F(ControllerTest, StoppingWorkOnADownNodeEndsItAndFreesTheGpus) {
  const auto instance = launch(alice_, 2);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  clock_.advance(Millis(30'000));  // the node goes silent
  ctl_.tick();
  ASSERT_EQ((*ctl_.fleet().nodes().get(admin_, node_))->state, model::NodeState::kDown);
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopped);
  EXPECT_TRUE(ctl_.fleet().placements().holders("GPU-a0").empty());
  EXPECT_EQ(ctl_.metering().usage(alice_.tenant_id)[0]->billed_seconds,
            0);                                           // billed to the last report
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));  // and it can be started again
  EXPECT_EQ(get(instance.id).state, InstanceState::kPending);
}

TEST_F(ControllerTest, AProcessStoppedBeforeItReportedRunningIsStillBilled) {
  // Seconds run, as they are billed without a minimum duration (prices_test.cc has that).
  ASSERT_TRUE(ctl_.set_prices(admin_, {.minimum_billed_seconds = 0}));
  const auto instance = launch(alice_, 1);
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));  // stop while still starting
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  clock_.advance(Millis(4'000));
  report(node_, {{instance.id, 1, model::WorkloadPhase::kExited, 143, ""}});
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopped);
  ASSERT_EQ(ctl_.metering().usage(alice_.tenant_id).size(), 1u);
  EXPECT_EQ(ctl_.metering().usage(alice_.tenant_id)[0]->billed_seconds, 4);
}

TEST_F(ControllerTest, TicksNeverBillPastTheLastGoodReport) {
  const auto instance = launch(alice_, 1);
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  clock_.advance(Millis(55'000));
  report(node_, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  clock_.advance(Millis(8'000));  // silent, not yet past the heartbeat timeout
  ctl_.tick();
  EXPECT_EQ(ctl_.metering().usage(alice_.tenant_id)[0]->billed_seconds, 55);
}

TEST_F(ControllerTest, AnotherTenantsInstanceIsNoCursor) {
  const auto theirs = launch(bob_, 1);
  launch(alice_, 1);
  EXPECT_EQ(ctl_.instances().list(alice_, {}, theirs.id, 10).error().code, "invalid_query");
  EXPECT_EQ(ctl_.instances().list(alice_, {}, "i-made-up", 10).error().code, "invalid_query");
  EXPECT_TRUE(ctl_.instances().list(bob_, {}, theirs.id, 10));
}

TEST_F(ControllerTest, AHostThatLostItsIdentityRegistersAgainButNoOneTakesBusyGpus) {
  model::NodeRegistration again{"node-a", {}, 64, 512 * 1024, true, "test"};
  for (int i = 0; i < 8; ++i)
    again.gpus.push_back({"GPU-a" + std::to_string(i), i, "h100-80g", "h100-80g", 81920});
  const auto result = ctl_.register_node(hash_secret("join"), again, "new", hash_secret("new"));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->node_id, node_);
  EXPECT_EQ(ctl_.fleet().nodes().authenticate(hash_secret("new")), node_);
  EXPECT_FALSE(ctl_.fleet().nodes().authenticate(hash_secret("cred-node-a")));

  launch(alice_, 1);  // now the node has work: its GPUs cannot be claimed again
  EXPECT_EQ(ctl_.register_node(hash_secret("join"), again, "x", hash_secret("x")).error().code,
            "gpu_already_registered");
  again.name = "impostor";
  EXPECT_EQ(ctl_.register_node(hash_secret("join"), again, "y", hash_secret("y")).error().code,
            "gpu_already_registered");
}

// Where instances' files live (DesiredState::instances): on the node of their last placement
// while they are not deleted, stopped ones too; a deletion or a move changes the node's
// generation, so its agent sees the list shrink; a restart gives the same lists back.
class InstanceFilesTest : public StoredControllerTest {
 protected:
  std::optional<std::vector<std::string>> files_on(const Controller& ctl, const std::string& node) {
    return ctl.fleet().desired_state(node)->instances;
  }
  int64_t generation(const std::string& node) {
    return ctl_.fleet().desired_state(node)->generation;
  }
  // Runs alice's instance and stops it, the stop confirmed: stopped, its files on its node.
  void run_then_stop(const std::string& id) {
    run(id);
    EXPECT_TRUE(ctl_.stop_instance(alice_, id));
    run(id, 0);
    EXPECT_EQ(get(id).state, model::InstanceState::kStopped);
  }
  // An instance of alice's with `gpus` GPUs, stopped on node_ (the node `other` cordoned
  // meanwhile, so that it lands there, and uncordoned again).
  model::Instance stopped_on_node_a(int gpus, const std::string& other) {
    EXPECT_TRUE(ctl_.manage_node(admin_, other, NodeAction::kCordon));
    const auto instance = launch(alice_, gpus);
    EXPECT_EQ(get(instance.id).node_id, node_);
    run_then_stop(instance.id);
    EXPECT_TRUE(ctl_.manage_node(admin_, other, NodeAction::kUncordon));
    return instance;
  }
};

TEST_F(InstanceFilesTest, ANodeListsTheInstancesWhoseFilesItKeepsUntilTheyAreDeletedOrMove) {
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  ASSERT_TRUE(ctl_.manage_node(admin_, other, NodeAction::kCordon));
  EXPECT_EQ(files_on(ctl_, node_), std::vector<std::string>{}) << "none has been placed yet";
  const auto kept = launch(alice_, 1);
  const auto deleted = launch(alice_, 1);
  const auto moved = launch(alice_, 1);
  for (const auto& instance : {kept, deleted, moved}) {
    ASSERT_EQ(get(instance.id).node_id, node_);
    run_then_stop(instance.id);
  }
  std::vector<std::string> all = {kept.id, deleted.id, moved.id};
  std::ranges::sort(all);
  EXPECT_EQ(files_on(ctl_, node_), all) << "stopped instances keep their files";

  int64_t before = generation(node_);
  ASSERT_TRUE(ctl_.delete_instance(alice_, deleted.id));
  EXPECT_GT(generation(node_), before);
  std::erase(all, deleted.id);
  EXPECT_EQ(files_on(ctl_, node_), all);

  // Started again anywhere, on the other node (this one cordoned): its files are the other
  // node's now.
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kCordon));
  ASSERT_TRUE(ctl_.manage_node(admin_, other, NodeAction::kUncordon));
  before = generation(node_);
  ASSERT_TRUE(ctl_.start_instance(alice_, moved.id, Controller::StartOn::kAnyNode));
  ctl_.tick();
  ASSERT_EQ(get(moved.id).node_id, other);
  EXPECT_GT(generation(node_), before);
  EXPECT_EQ(files_on(ctl_, node_), std::vector<std::string>{kept.id});
  EXPECT_EQ(files_on(ctl_, other), std::vector<std::string>{moved.id});

  commit(ctl_);
  const auto again = restarted(8);
  EXPECT_EQ(files_on(*again, node_), std::vector<std::string>{kept.id});
  EXPECT_EQ(files_on(*again, other), std::vector<std::string>{moved.id});

  // Deleted while it runs: its files go once its run has ended.
  ASSERT_TRUE(ctl_.delete_instance(alice_, moved.id));
  EXPECT_EQ(files_on(ctl_, other), std::vector<std::string>{moved.id}) << "still stopping";
  run(moved.id, 143);
  ASSERT_EQ(get(moved.id).state, model::InstanceState::kTerminated);
  EXPECT_EQ(files_on(ctl_, other), std::vector<std::string>{});
}

// A start goes back to the node that keeps the instance's files, and waits for it (full, down or
// cordoned) unless the tenant says it may go anywhere; a restart keeps it waiting there.
TEST_F(InstanceFilesTest, AStartWaitsForTheNodeThatKeepsItsFilesUnlessToldAnywhere) {
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto stopped = stopped_on_node_a(2, other);

  // With room on both nodes, it goes back to its own, although the other is fuller (best fit
  // takes the fuller one for new work, as for `filler`).
  const auto on_other = launch(bob_, 4);
  ASSERT_EQ(get(on_other.id).node_id, other);
  ASSERT_TRUE(ctl_.start_instance(alice_, stopped.id));
  ASSERT_EQ(get(stopped.id).state, InstanceState::kStarting);
  EXPECT_EQ(get(stopped.id).node_id, node_);
  EXPECT_EQ(get(stopped.id).start_on_node, "") << "cleared once placed";
  const auto filler = launch(bob_, 2);
  EXPECT_EQ(get(filler.id).node_id, other) << "new work takes the fuller node";
  run_then_stop(stopped.id);

  // Its node full: it waits for it and says why, though the other node has room.
  const auto full = launch(bob_, 8);
  ASSERT_EQ(get(full.id).node_id, node_);
  ASSERT_TRUE(ctl_.start_instance(alice_, stopped.id));
  ctl_.tick();
  EXPECT_EQ(get(stopped.id).state, InstanceState::kPending);
  EXPECT_EQ(get(stopped.id).start_on_node, node_);
  EXPECT_EQ(get(stopped.id).reason,
            fmt::format("waiting for capacity on node {}, which keeps its files; `gpurent start "
                        "{} --anywhere` starts it on another node without them",
                        node_, stopped.id));
  EXPECT_EQ(files_on(ctl_, node_), (std::vector<std::string>{full.id, stopped.id}));

  commit(ctl_);
  auto again = restarted(8);
  again->tick();
  const auto* restored = *again->instances().get(admin_, stopped.id);
  EXPECT_EQ(restored->state, InstanceState::kPending) << "still waiting for its node";
  EXPECT_EQ(restored->start_on_node, node_);

  // Its node cordoned: it says so.
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kCordon));
  ctl_.tick();
  const std::string& reason = get(stopped.id).reason;
  EXPECT_TRUE(reason.starts_with(fmt::format("waiting until it is uncordoned on node {},", node_)))
      << reason;

  // Told it may go anywhere: it is placed on the other node, and its old node's files go.
  const int64_t before = generation(node_);
  const auto freed = ctl_.start_instance(alice_, stopped.id, Controller::StartOn::kAnyNode);
  ASSERT_TRUE(freed);
  EXPECT_EQ(get(stopped.id).state, InstanceState::kStarting);
  EXPECT_EQ(get(stopped.id).node_id, other);
  EXPECT_GT(generation(node_), before);
  EXPECT_EQ(files_on(ctl_, node_), std::vector<std::string>{full.id});
  EXPECT_TRUE(ctl_.check_invariants());
}

// Spot work on its node makes room for it there, and spot work elsewhere is left alone (it could
// not take the instance's files).
TEST_F(InstanceFilesTest, AStartedOnDemandInstancePreemptsSpotWorkOnItsOwnNodeOnly) {
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto stopped = stopped_on_node_a(2, other);
  auto spot = spec(8);
  spot.pricing = model::PricingModel::kSpot;
  ASSERT_TRUE(ctl_.manage_node(admin_, other, NodeAction::kCordon));
  const auto on_its_node = launch(bob_, spot);
  ASSERT_EQ(get(on_its_node.id).node_id, node_);
  ASSERT_TRUE(ctl_.manage_node(admin_, other, NodeAction::kUncordon));
  spot.gpu_count = 2;
  const auto elsewhere = launch(bob_, spot);
  ASSERT_EQ(get(elsewhere.id).node_id, other);
  run(on_its_node.id);
  run(elsewhere.id);

  ASSERT_TRUE(ctl_.start_instance(alice_, stopped.id));
  EXPECT_EQ(get(on_its_node.id).state, InstanceState::kStopping);
  EXPECT_EQ(get(elsewhere.id).state, InstanceState::kRunning)
      << "the other node has room, but not the instance's files";
  run(on_its_node.id, 143);
  ctl_.tick();
  EXPECT_EQ(get(stopped.id).state, InstanceState::kStarting);
  EXPECT_EQ(get(stopped.id).node_id, node_);
  EXPECT_TRUE(ctl_.check_invariants());
}

TEST_F(InstanceFilesTest, AStartAskedForWhileStoppingWaitsForItsNodeUnlessTheInstanceMoves) {
  const auto instance = launch(alice_, 1);
  run(instance.id);
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));
  EXPECT_EQ(get(instance.id).start_on_node, node_);
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kCordon));
  run(instance.id, 0);
  ctl_.tick();
  EXPECT_EQ(get(instance.id).state, InstanceState::kPending);
  EXPECT_EQ(get(instance.id).start_on_node, node_);

  // Withdrawn by a stop: nothing holds it to the node.
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopped);
  EXPECT_EQ(get(instance.id).start_on_node, "");
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kUncordon));
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));
  run(instance.id);
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");

  // A start asked for while a drain moves it: the move wins, and it may go anywhere.
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kDrain));
  ASSERT_EQ(get(instance.id).state, InstanceState::kStopping);
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));
  run(instance.id, 143);
  ctl_.tick();
  EXPECT_EQ(get(instance.id).node_id, other);
  EXPECT_EQ(get(instance.id).start_on_node, "");

  // A stop after a start asked for while stopping wins: it stays stopped.
  run(instance.id);
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));
  EXPECT_EQ(get(instance.id).start_on_node, other);
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  EXPECT_FALSE(get(instance.id).start_requested);
  run(instance.id, 0);
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopped);
  EXPECT_EQ(get(instance.id).start_on_node, "");
  EXPECT_TRUE(ctl_.check_invariants());
}

}  // namespace
}  // namespace gpurent::controller
