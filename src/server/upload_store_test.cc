#include "server/upload_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/random.h"

namespace gpurent::server {
namespace {

class UploadStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpurent-uploads-test-" + std::to_string(os_random_seed()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<UploadStore> open() {
    auto store = UploadStore::open(dir_, clock_);
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }

  std::filesystem::path dir_;
  ManualClock clock_{Timestamp(Millis(1'800'000'000'000))};
};

TEST_F(UploadStoreTest, TakesPiecesInOrderChecksTheDigestAndSurvivesARestart) {
  const std::string data = "0123456789abcdef";
  auto store = open();
  auto upload = store->create("t-1", 16, sha256_hex(data));
  ASSERT_TRUE(upload);
  EXPECT_EQ(store->append("t-1", upload->id, 0, data.substr(0, 10))->received, 10);
  // A piece sent again, or one that skips ahead, says where to resume.
  const auto repeated = store->append("t-1", upload->id, 0, data.substr(0, 10));
  ASSERT_FALSE(repeated);
  EXPECT_EQ(repeated.error().code, "upload_offset_mismatch");
  EXPECT_EQ(store->append("t-1", upload->id, 12, "x").error().code, "upload_offset_mismatch");
  EXPECT_EQ(store->append("t-1", upload->id, 10, data.substr(10) + "!").error().code,
            "upload_too_long");
  // Another tenant learns nothing of it.
  EXPECT_EQ(store->get("t-2", upload->id).error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(store->append("t-2", upload->id, 10, "x").error().kind, ErrorKind::kNotFound);
  EXPECT_FALSE(store->read(upload->id));  // not complete

  // The store restarts between two pieces: what it acknowledged is there.
  store.reset();
  store = open();
  EXPECT_EQ(store->get("t-1", upload->id)->received, 10);
  const auto done = store->append("t-1", upload->id, 10, data.substr(10));
  ASSERT_TRUE(done);
  EXPECT_TRUE(done->complete);
  EXPECT_EQ(*store->read(upload->id), data);
}

TEST_F(UploadStoreTest, DiscardsBytesThatDoNotMatchTheDigest) {
  auto store = open();
  auto upload = store->create("t-1", 4, sha256_hex("abcd"));
  ASSERT_TRUE(upload);
  const auto wrong = store->append("t-1", upload->id, 0, "abce");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, "checksum_mismatch");
  EXPECT_EQ(store->get("t-1", upload->id)->received, 0);
  EXPECT_TRUE(store->append("t-1", upload->id, 0, "abcd")->complete);
}

TEST_F(UploadStoreTest, RefusesBadDeclarationsAndBoundsEachTenant) {
  auto store = open();
  const std::string digest = sha256_hex("x");
  EXPECT_EQ(store->create("t-1", 0, digest).error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(store->create("t-1", kMaxUploadBytes + 1, digest).error().code, "upload_too_large");
  EXPECT_EQ(store->create("t-1", 1, "ABC").error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(store->get("t-1", "../../etc").error().kind, ErrorKind::kNotFound);
  const auto size = [](size_t i) { return static_cast<int64_t>(i) + 1; };
  for (size_t i = 0; i < kMaxUploadsPerTenant; ++i) {
    ASSERT_TRUE(store->create("t-1", size(i), digest));
  }
  EXPECT_EQ(store->create("t-1", size(kMaxUploadsPerTenant), digest).error().code,
            "too_many_uploads");
  EXPECT_TRUE(store->create("t-2", 1, digest));
  // Incomplete uploads expire, which makes room again.
  clock_.advance(kIncompleteUploadTtl + std::chrono::seconds(1));
  EXPECT_TRUE(store->create("t-1", 1, digest));
}

TEST_F(UploadStoreTest, TheSameBytesDeclaredAgainAreTheSameUploadOfTheSameTenant) {
  const std::string data = "0123456789";
  auto store = open();
  auto first = store->create("t-1", 10, sha256_hex(data));
  ASSERT_TRUE(first);
  ASSERT_TRUE(store->append("t-1", first->id, 0, data.substr(0, 4)));
  EXPECT_EQ(store->get_complete("t-1", first->id).error().code, "upload_incomplete");
  // A client that lost the id declares the bytes again and goes on where they stopped.
  auto again = store->create("t-1", 10, sha256_hex(data));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(again->received, 4);
  ASSERT_TRUE(store->append("t-1", first->id, 4, data.substr(4)));
  EXPECT_TRUE(store->get_complete("t-1", first->id));
  EXPECT_TRUE(store->create("t-1", 10, sha256_hex(data))->complete);
  // Another tenant's same bytes are an upload of its own.
  EXPECT_NE(store->create("t-2", 10, sha256_hex(data))->id, first->id);
  EXPECT_EQ(store->get_complete("t-2", first->id).error().kind, ErrorKind::kNotFound);
}

}  // namespace
}  // namespace gpurent::server
