#include "store/sqlite/metering_rows.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "billing/billing.h"
#include "common/json.h"
#include "common/random.h"
#include "model/codec.h"
#include "store/store.h"

namespace gpurent::store {
namespace {

using controller::ChangeSet;

class MeteringRowsTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpurent-metering-rows-test-" + std::to_string(os_random_seed()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Store> open(const std::string& name) {
    auto store = open_sqlite_store((dir_ / name).string());
    EXPECT_TRUE(store) << store.error().message;
    return std::move(*store);
  }

  std::filesystem::path dir_;
};

model::UsageRecord record(std::string instance, model::UsageKind kind) {
  model::UsageRecord usage;
  usage.instance_id = std::move(instance);
  usage.run = 3;
  usage.kind = kind;
  usage.id = usage.instance_id + "/3" + (kind == model::UsageKind::kRun ? "" : "/disk");
  usage.tenant_id = "t-tenant-with-a-long-id";
  usage.gpu_type = "h100-80g";
  usage.gpu_count = 2;
  usage.cpu = 8;
  usage.disk_gb = 100;
  usage.started_at = from_unix_ms(1'790'000'000'000);
  usage.metered_until = usage.started_at;
  return usage;
}

// What metering does to a record's fields: all of them move.
void advance(model::UsageRecord& usage, int64_t seconds, Micros due) {
  usage.metered_until += Millis(seconds * 1000 + 7);
  usage.billed_seconds += seconds;
  usage.charged += due;
  usage.price_per_gpu_hour = 18'000'000 + seconds;
  usage.segment_rate = 123'456 + seconds;
  usage.segment_seconds += seconds;
  usage.segment_charged += due;
  usage.package_seconds += 5;
}

void expect_same_transfers(const std::vector<model::Transfer>& a,
                           const std::vector<model::Transfer>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id) << i;
    EXPECT_EQ(a[i].at, b[i].at) << i;
    EXPECT_EQ(a[i].from_account, b[i].from_account) << i;
    EXPECT_EQ(a[i].to_account, b[i].to_account) << i;
    EXPECT_EQ(a[i].amount, b[i].amount) << i;
    EXPECT_EQ(a[i].kind, b[i].kind) << i;
    EXPECT_EQ(a[i].tenant_id, b[i].tenant_id) << i;
    EXPECT_EQ(a[i].reference, b[i].reference) << i;
  }
}

std::vector<Json> as_json(const std::vector<model::UsageRecord>& records) {
  std::vector<Json> out;
  for (const auto& usage : records) out.push_back(Json(usage));
  return out;
}

TEST_F(MeteringRowsTest, PackedChargesAndRecordsReadBackAsTheWholeFormsWrote) {
  auto whole = open("whole.db");
  auto packed = open("packed.db");
  std::vector<model::UsageRecord> records = {record("i-first-instance-id", model::UsageKind::kRun),
                                             record("i-second-instance", model::UsageKind::kRun),
                                             record("i-stopped", model::UsageKind::kStoppedDisk)};
  ChangeSet opened;
  opened.usage = records;
  ASSERT_TRUE(whole->commit(opened));
  ASSERT_TRUE(packed->commit(opened));

  for (int tick = 1; tick <= 2; ++tick) {
    ChangeSet old_path;
    ChangeSet new_path;
    for (auto& usage : records) {
      const Micros due = 1'000 * tick + usage.run;
      advance(usage, 60, due);
      old_path.usage.push_back(usage);
      old_path.transfers.push_back(billing::usage_transfer(usage, due));
      new_path.add_usage_charge(usage, due);
      new_path.add_metered_usage(usage);
    }
    expect_same_transfers(new_path.all_transfers(), old_path.transfers);
    ASSERT_TRUE(whole->commit(old_path));
    ASSERT_TRUE(packed->commit(new_path));
  }

  const auto a = whole->load();
  const auto b = packed->load();
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->transfers.size(), 6u);
  EXPECT_EQ(a->transfers[0].id, "usage:i-first-instance-id:3:60");
  EXPECT_EQ(a->transfers[2].id, "storage:i-stopped:3:60");
  expect_same_transfers(b->transfers, a->transfers);
  EXPECT_EQ(as_json(b->usage), as_json(a->usage));
  EXPECT_EQ(as_json(b->usage), as_json(records));
}

TEST_F(MeteringRowsTest, WholeAndPackedRowsKeepTheirOrderAcrossMergedBatches) {
  auto store = open("order.db");
  model::UsageRecord opened_earlier = record("i-earlier", model::UsageKind::kRun);
  ChangeSet setup;
  setup.usage.push_back(opened_earlier);
  ASSERT_TRUE(store->commit(setup));

  const auto topup = [](std::string id) {
    return model::Transfer{.id = std::move(id),
                           .at = from_unix_ms(1'000),
                           .from_account = "external:topups",
                           .to_account = "tenant:t-tenant-with-a-long-id:cash",
                           .amount = 10,
                           .kind = model::TransferKind::kTopup,
                           .tenant_id = "t-tenant-with-a-long-id",
                           .reference = ""};
  };
  // Batch 1: a top-up, a charge, a top-up; the earlier record only metered.
  ChangeSet batch;
  batch.transfers.push_back(topup("topup:1"));
  advance(opened_earlier, 60, 100);
  batch.add_usage_charge(opened_earlier, 100);
  batch.add_metered_usage(opened_earlier);
  batch.transfers.push_back(topup("topup:2"));
  // Batch 2: a record opens (whole); another charge, then a top-up; the earlier record closes
  // (whole), after batch 1 metered it.
  ChangeSet later;
  model::UsageRecord opened_now = record("i-now", model::UsageKind::kRun);
  later.usage.push_back(opened_now);
  advance(opened_earlier, 30, 50);
  later.add_usage_charge(opened_earlier, 50);
  opened_earlier.ended_at = opened_earlier.metered_until;
  later.usage.push_back(opened_earlier);
  later.transfers.push_back(topup("topup:3"));
  // Batch 3: the new record metered after it opened.
  ChangeSet last;
  advance(opened_now, 60, 70);
  last.add_metered_usage(opened_now);
  batch.merge(std::move(later));
  batch.merge(std::move(last));

  const auto posted = batch.all_transfers();
  std::vector<std::string> ids;
  for (const auto& t : posted) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"topup:1", "usage:i-earlier:3:60", "topup:2",
                                           "usage:i-earlier:3:90", "topup:3"}));
  ASSERT_TRUE(store->commit(batch));
  const auto snapshot = store->load();
  ASSERT_TRUE(snapshot);
  expect_same_transfers(snapshot->transfers, posted);
  ASSERT_EQ(snapshot->usage.size(), 2u);
  EXPECT_EQ(Json(snapshot->usage[0]), Json(opened_earlier));  // closed: the whole row won
  EXPECT_EQ(Json(snapshot->usage[1]), Json(opened_now));      // opened, then metered
}

TEST_F(MeteringRowsTest, APackedRowForARecordTheStoreLacksFailsTheCommit) {
  auto store = open("missing.db");
  ChangeSet changes;
  changes.tenants.push_back({"t-1", "alice", from_unix_ms(5)});
  changes.add_metered_usage(record("i-never-stored", model::UsageKind::kRun));
  EXPECT_FALSE(store->commit(changes));
  EXPECT_TRUE(store->load()->tenants.empty());  // nothing of it was written
}

TEST_F(MeteringRowsTest, ARepeatedPackedChargeFailsTheCommitAsAWholeOneDoes) {
  auto store = open("repeat.db");
  model::UsageRecord usage = record("i-1", model::UsageKind::kRun);
  ChangeSet opened;
  opened.usage.push_back(usage);
  ASSERT_TRUE(store->commit(opened));
  advance(usage, 60, 100);
  ChangeSet charged;
  charged.add_usage_charge(usage, 100);
  ASSERT_TRUE(store->commit(charged));
  EXPECT_FALSE(store->commit(charged));
  ChangeSet whole;
  whole.transfers.push_back(billing::usage_transfer(usage, 100));
  EXPECT_FALSE(store->commit(whole));
  EXPECT_EQ(store->load()->transfers.size(), 1u);
}

}  // namespace
}  // namespace gpurent::store
