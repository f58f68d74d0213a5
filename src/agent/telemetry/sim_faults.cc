#include "agent/telemetry/sim_faults.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "agent/files.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

constexpr size_t kMaxFaults = 10'000;
constexpr size_t kMaxFaultsFileBytes = 1 << 20;

Error invalid(std::string why) { return Error::invalid("invalid_sim_faults", std::move(why)); }

// parse_sim_faults, with the errors of the JSON helpers as they come.
Result<std::vector<SimFault>> parse_faults(std::string_view text) {
  GPURENT_TRY(json, parse_json_object(text));
  const auto it = json.find("faults");
  if (it == json.end()) return std::vector<SimFault>();
  if (!it->is_array() || it->size() > kMaxFaults) {
    return fail(invalid("faults must be an array of at most 10000 objects"));
  }
  std::vector<SimFault> faults;
  for (const Json& entry : *it) {
    if (!entry.is_object()) return fail(invalid("each fault must be an object"));
    SimFault fault;
    GPURENT_TRY(node, optional_int(entry, "node", 0, INT32_MAX));
    fault.node = node;
    const auto gpu = entry.find("gpu");
    if (gpu != entry.end() && gpu->is_number_unsigned()) {
      fault.gpu = std::to_string(gpu->get<uint64_t>());
    } else if (gpu != entry.end() && gpu->is_string() && !gpu->get<std::string>().empty()) {
      fault.gpu = gpu->get<std::string>();
    } else {
      return fail(invalid("each fault needs a gpu: its index or its UUID"));
    }
    GPURENT_TRY(kind, required_string(entry, "kind", 16));
    if (kind == "overheat") {
      fault.kind = SimFaultKind::kOverheat;
    } else if (kind == "xid") {
      fault.kind = SimFaultKind::kXid;
      GPURENT_TRY(code, optional_int(entry, "code", 1, 1'000));
      fault.xid_code = code.value_or(kXidFellOffTheBus);
    } else if (kind == "ecc_dbe") {
      fault.kind = SimFaultKind::kEccDoubleBit;
    } else if (kind == "missing") {
      fault.kind = SimFaultKind::kMissing;
    } else {
      return fail(invalid("kind must be overheat, xid, ecc_dbe or missing, not '" + kind + "'"));
    }
    faults.push_back(std::move(fault));
  }
  return faults;
}

}  // namespace

Result<std::vector<SimFault>> parse_sim_faults(std::string_view text) {
  auto faults = parse_faults(text);
  if (!faults) return fail(invalid(faults.error().message));
  return faults;
}

bool SimFaultsFile::refresh() {
  struct stat info {};
  if (::stat(path_.c_str(), &info) != 0) {
    // No file: no faults.
    const bool changed = !faults_.empty();
    faults_.clear();
    seen_.reset();
    return changed;
  }
  const std::pair<int64_t, int64_t> version{
      int64_t{info.st_mtim.tv_sec} * 1'000'000'000 + info.st_mtim.tv_nsec, info.st_size};
  if (seen_ == version) return false;
  seen_ = version;
  auto text = read_file(path_, kMaxFaultsFileBytes);
  Result<std::vector<SimFault>> parsed =
      text ? parse_sim_faults(*text) : Result<std::vector<SimFault>>(fail(std::move(text).error()));
  if (!parsed) {
    spdlog::warn("sim_faults_ignored file={} error=\"{}\"", path_.string(), parsed.error().message);
    return false;
  }
  if (*parsed == faults_) return false;
  faults_ = std::move(*parsed);
  spdlog::info("sim_faults_loaded file={} faults={}", path_.string(), faults_.size());
  return true;
}

}  // namespace gpurent::agent
