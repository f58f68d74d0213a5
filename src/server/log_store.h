// Workload logs, as uploaded by the agents: one file per instance run under <dir>/<instance>/.
//
// Agents upload at an offset; a repeated or overlapping upload is trimmed to what is new, and an
// upload past the end is refused with the current size so the agent resends from there. A run's
// log is capped at kMaxRunLogBytes: beyond it a single marker line is written and the rest is
// acknowledged but dropped, so a chatty workload cannot fill the server's disk.
// Threads: append() and size() from one thread at a time (the server's log thread); read() may
// run on another thread meanwhile (it only reads the files: a read racing an append sees the
// bytes written so far). Instance ids are validated by the caller.
// Cost per upload: a stat, and an open + write; the instance's directory is made on its first
// upload only (this store remembers which it made or found).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>

#include "common/result.h"

namespace gpurent::server {

inline constexpr int64_t kMaxRunLogBytes = 64 << 20;

class LogStore {
 public:
  explicit LogStore(std::string directory);

  // Appends data that starts at `offset` of the run's log; returns the run's log size afterwards
  // (as the agent counts it). Fails with a conflict carrying no write when offset is past the end.
  Result<int64_t> append(std::string_view instance_id, int64_t run, int64_t offset,
                         std::string_view data);
  // The agent-side size of a run's log so far.
  int64_t size(std::string_view instance_id, int64_t run) const;
  // Up to max_bytes of a run's stored log from offset ("" at its end).
  Result<std::string> read(std::string_view instance_id, int64_t run, int64_t offset,
                           size_t max_bytes) const;

 private:
  std::string path_of(std::string_view instance_id, int64_t run) const;
  std::string directory_;
  std::unordered_set<std::string> made_directories_;  // instance ids whose directory exists
};

}  // namespace gpurent::server
