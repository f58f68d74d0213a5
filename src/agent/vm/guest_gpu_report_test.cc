#include "agent/vm/guest_gpu_report.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kOwn = {"GPU-a", "GPU-b"};

TEST(GuestGpuReport, ReadsTheRunsOwnGpusFromNvidiaSmisCsv) {
  const auto samples = parse_guest_gpu_report(
      "GPU-a, 87, 40, 1024, 80000, 61, 312.50\n"
      "GPU-b, 0, 0, 0, 81559, 33, 69.9\r\n",
      kOwn, 1000);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0], (model::GpuSample{.uuid = "GPU-a",
                                          .time_ms = 1000,
                                          .gpu_util_pct = 87,
                                          .mem_util_pct = 40,
                                          .fb_used_mib = 1024,
                                          .fb_free_mib = 80000,
                                          .temperature_c = 61,
                                          .power_w = 312.5}));
  EXPECT_EQ(samples[1].uuid, "GPU-b");
  EXPECT_EQ(samples[1].power_w, 69.9);
}

TEST(GuestGpuReport, AGuestCannotReportAnotherGpuTwiceOrOutOfRange) {
  const auto samples = parse_guest_gpu_report(
      "GPU-z, 50, 50, 50, 50, 50, 50\n"                 // not the run's
      "GPU-a, 101, -1, 99999999999, 12abc, 500, nan\n"  // every value out of range or not one
      "GPU-a, 10, 10, 10, 10, 10, 10\n"                 // its second line
      "GPU-b, [N/A], [Not Supported], 5, 6\n"           // too few fields
      "garbage without commas\n",
      kOwn, 1000);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0], (model::GpuSample{.uuid = "GPU-a", .time_ms = 1000}));
}

TEST(GuestGpuReport, ValuesTheDriverCannotGiveAreLeftOut) {
  const auto samples =
      parse_guest_gpu_report("GPU-b, 5, [N/A], 7, 8, [Not Supported], [N/A]", kOwn, 1000);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0], (model::GpuSample{.uuid = "GPU-b",
                                          .time_ms = 1000,
                                          .gpu_util_pct = 5,
                                          .fb_used_mib = 7,
                                          .fb_free_mib = 8}));
  EXPECT_TRUE(parse_guest_gpu_report("GPU-a, 1, 1, 1, 1, 1, 1", {}, 1000).empty());
}

TEST(GuestGpuReport, TheReporterWritesAsideThenRenames) {
  const std::string script = guest_gpu_reporter_script("/run/gpurent");
  EXPECT_NE(script.find(fmt::format("nvidia-smi --query-gpu={} --format=csv,noheader,nounits "
                                    ">/run/gpurent/gpus.csv.new",
                                    kGuestGpuQuery)),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("mv -f /run/gpurent/gpus.csv.new /run/gpurent/gpus.csv"),
            std::string::npos);
  EXPECT_TRUE(script.ends_with("&\n")) << "it runs beside the command";
}

class GuestGpuReportFileTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpurent-gpu-report-" + std::to_string(os_random_seed()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(GuestGpuReportFileTest, AReportIsReadOncePerWriteAndOnlyAsAPlainSmallFile) {
  const fs::path report = dir_ / "gpus.csv";
  EXPECT_FALSE(read_guest_gpu_report(report, {})) << "none yet";
  ASSERT_TRUE(write_file_atomic(report, "GPU-a, 1, 2, 3, 4, 5, 6\n"));
  const auto first = read_guest_gpu_report(report, {});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->text, "GPU-a, 1, 2, 3, 4, 5, 6\n");
  EXPECT_FALSE(read_guest_gpu_report(report, first->modified)) << "the same report";
  timespec later = first->modified;
  later.tv_sec += 1;
  const timespec times[2] = {later, later};
  ASSERT_EQ(::utimensat(AT_FDCWD, report.c_str(), times, 0), 0);
  EXPECT_TRUE(read_guest_gpu_report(report, first->modified)) << "a newer one";

  // A link (to a file the guest should not make the agent read), a FIFO, an oversized file.
  const fs::path secret = dir_ / "secret";
  ASSERT_TRUE(write_file_atomic(secret, "GPU-a, 1, 2, 3, 4, 5, 6\n"));
  fs::remove(report);
  fs::create_symlink(secret, report);
  EXPECT_FALSE(read_guest_gpu_report(report, {}));
  fs::remove(report);
  ASSERT_EQ(::mkfifo(report.c_str(), 0600), 0);
  EXPECT_FALSE(read_guest_gpu_report(report, {})) << "and it does not block";
  fs::remove(report);
  ASSERT_TRUE(write_file_atomic(report, std::string(kMaxGuestGpuReportBytes + 1, 'x')));
  EXPECT_FALSE(read_guest_gpu_report(report, {}));
}

}  // namespace
}  // namespace gpurent::agent
