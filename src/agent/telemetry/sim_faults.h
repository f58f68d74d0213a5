// Faults injected into simulated GPUs at run time, for tests and demos of the monitoring path.
//
// The faults are read from a JSON file, <data_dir>/sim_faults.json for `gpurent agent` and
// `gpurent dev` (whose agent keeps its data under the server's data directory: <data_dir>/agent),
// and <data_dir>/sim_faults.json of a `--sim-nodes` fleet (for all its nodes). The file is
// re-read whenever its modification time or size changes (checked once per telemetry tick, one
// stat() call), so a test injects a fault by writing the file and clears it by writing it again
// without the fault (or deleting it):
//
//   {"faults": [{"gpu": 0, "kind": "overheat"},
//               {"gpu": "GPU-1c2f...", "kind": "xid", "code": 79},
//               {"node": 12, "gpu": 3, "kind": "ecc_dbe"},
//               {"gpu": 5, "kind": "missing"}]}
//
// gpu: the GPU's index on its node, or its UUID. node: in a fleet, the node's index (absent: every
// node of the fleet); a single agent ignores entries that name a node. Kinds:
//   overheat  the cooling fails: the temperature climbs toward 96 C within seconds; past 87 C the
//             clocks throttle (thermal slowdown reasons set) and power drops;
//   xid       one XID event with `code` (default 79) when the fault appears; XID 79 ("fell off
//             the bus") also makes the GPU stop answering while the fault stays;
//   ecc_dbe   a double-bit ECC error when the fault appears: the double-bit total rises by one
//             and XID 48 is raised;
//   missing   the GPU stops answering (no samples) while the fault stays.
// A fault takes effect once when it appears; removing it and adding it again repeats it.
// A malformed file is logged and ignored (the faults in force stay as they were).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::agent {

inline constexpr std::string_view kSimFaultsFile = "sim_faults.json";
inline constexpr int64_t kXidFellOffTheBus = 79;
inline constexpr int64_t kXidDoubleBitEcc = 48;

enum class SimFaultKind { kOverheat, kXid, kEccDoubleBit, kMissing };

struct SimFault {
  std::optional<int64_t> node;  // a fleet's node index; nullopt: every node
  std::string gpu;              // a UUID, or the decimal index
  SimFaultKind kind = SimFaultKind::kOverheat;
  int64_t xid_code = kXidFellOffTheBus;

  bool operator==(const SimFault&) const = default;
};

// Error code "invalid_sim_faults".
Result<std::vector<SimFault>> parse_sim_faults(std::string_view text);

// The faults file, re-read when it changes.
class SimFaultsFile {
 public:
  explicit SimFaultsFile(std::filesystem::path path) : path_(std::move(path)) {}
  // Re-reads the file if it changed since the last call; returns whether faults() changed.
  bool refresh();
  const std::vector<SimFault>& faults() const { return faults_; }

 private:
  std::filesystem::path path_;
  std::optional<std::pair<int64_t, int64_t>> seen_;  // mtime ns and size of the file read last
  std::vector<SimFault> faults_;
};

}  // namespace gpurent::agent
