// Ledger throughput: transfers posted per second in memory (billing::Ledger), and durably through
// the SQLite store with group commit (many transfers per commit, as the server's committer merges
// consecutive batches). Targets (issue 4): 1,000,000/s in memory, 100,000/s durable.
//
// Usage: gpurent_ledger_bench [transfers] [transfers per commit] [database path]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "billing/billing.h"
#include "store/store.h"

using namespace gpurent;

namespace {

// A metering transfer as the controller posts them: one tenant of 1,000 per transfer.
model::Transfer usage_transfer(int64_t i) {
  const std::string tenant = fmt::format("t-{}", i % 1000);
  return model::Transfer{.id = fmt::format("usage:i-{}:1:{}", i % 100'000, i),
                         .at = from_unix_ms(1'800'000'000'000 + i),
                         .from_account = model::tenant_cash_account(tenant),
                         .to_account = std::string(model::kRevenueAccount),
                         .amount = 5000 + i % 7,
                         .kind = model::TransferKind::kUsage,
                         .tenant_id = tenant,
                         .reference = fmt::format("i-{}", i % 100'000)};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// This thread's CPU time: on a shared machine, wall time also counts other processes' turns.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t count = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  const int64_t per_commit = argc > 2 ? std::atoll(argv[2]) : 10'000;
  const std::string path = argc > 3 ? argv[3] : "/tmp/gpurent_ledger_bench.db";
  if (count <= 0 || per_commit <= 0) {
    std::fprintf(stderr, "usage: gpurent_ledger_bench [transfers] [per commit] [db path]\n");
    return 2;
  }
  // Built outside the timed part in both cases: the figures are of posting, not of formatting ids.
  std::vector<model::Transfer> transfers;
  transfers.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) transfers.push_back(usage_transfer(i));

  billing::Ledger ledger;
  auto start = std::chrono::steady_clock::now();
  double cpu_start = thread_cpu_seconds();
  for (const auto& t : transfers) {
    if (!ledger.post(t)) return 1;
  }
  const double memory_s = seconds_since(start);
  const double memory_cpu_s = thread_cpu_seconds() - cpu_start;
  if (ledger.total() != 0) return 1;
  fmt::print("in memory: {} transfers in {:.3f} s = {:.0f}/s (CPU {:.3f} s = {:.0f}/s)\n", count,
             memory_s, static_cast<double>(count) / memory_s, memory_cpu_s,
             static_cast<double>(count) / memory_cpu_s);

  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  auto store = store::open_sqlite_store(path);
  if (!store) {
    std::fprintf(stderr, "open %s: %s\n", path.c_str(), store.error().message.c_str());
    return 1;
  }
  start = std::chrono::steady_clock::now();
  cpu_start = thread_cpu_seconds();
  for (int64_t first = 0; first < count; first += per_commit) {
    controller::ChangeSet batch;
    const int64_t last = std::min(count, first + per_commit);
    batch.transfers.assign(transfers.begin() + first, transfers.begin() + last);
    if (auto committed = (*store)->commit(batch); !committed) {
      std::fprintf(stderr, "commit: %s\n", committed.error().message.c_str());
      return 1;
    }
  }
  const double durable_s = seconds_since(start);
  const double durable_cpu_s = thread_cpu_seconds() - cpu_start;
  fmt::print(
      "durable (SQLite WAL, synchronous=FULL, {} per commit): {} transfers in {:.3f} s = "
      "{:.0f}/s (CPU {:.3f} s = {:.0f}/s)\n",
      per_commit, count, durable_s, static_cast<double>(count) / durable_s, durable_cpu_s,
      static_cast<double>(count) / durable_cpu_s);
  // A replayed batch must be refused whole: the store is what makes ids deterministic in effect.
  controller::ChangeSet replay;
  replay.transfers.push_back(transfers.front());
  if ((*store)->commit(replay)) {
    std::fprintf(stderr, "a repeated transfer id was accepted\n");
    return 1;
  }
  return 0;
}
