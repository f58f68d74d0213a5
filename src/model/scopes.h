// API key scopes: what a key may reach, narrower than its role.
//
// The API is divided into areas (every route belongs to one: server/access.h says which), and a
// scope grants one area for reading or for writing, which includes reading:
//   "instances:read", "instances:write", "*:read" (every area, reading), "*" (everything).
// A key without scopes reaches everything its role allows; a key with scopes reaches only what
// they name, and never more than its role allows. A key made by another key may name only scopes
// its maker has (ScopeSet::includes).
//
// A ScopeSet is two bit masks, so checking one on every request costs nothing worth measuring.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::model {

enum class ScopeArea : uint8_t {
  kInstances,     // instances, their logs, exec, files, services, idle alerts
  kJobs,          // jobs and arrays
  kReservations,  // advance reservations and their quotes
  kVolumes,       // persistent volumes and their files
  kTemplates,     // the template catalog
  kUploads,       // workdir uploads
  kBilling,       // balance, usage, ledger, invoices, packages, top-ups, settings, estimates
  kKeys,          // API keys and join tokens
  kAudit,         // the audit log
  kEvents,        // the event log
  kMonitoring,    // GPU metrics and alerts
  kPrices,        // the price book and spot prices
  kTenants,       // tenants and their quotas
  kNodes,         // nodes and their GPUs
};
inline constexpr size_t kScopeAreaCount = 14;

// The areas by name, in enum order ("instances", "jobs", ...).
const std::array<std::string_view, kScopeAreaCount>& scope_area_names();
std::string_view to_string(ScopeArea area);

class ScopeSet {
 public:
  // Everything.
  ScopeSet() = default;

  // The scopes named, or 400-class kInvalidArgument "invalid_scope" naming the first unknown
  // one. An empty list is everything.
  static Result<ScopeSet> parse(const std::vector<std::string>& scopes);

  bool permits(ScopeArea area, bool writes) const {
    const uint32_t bit = 1U << static_cast<unsigned>(area);
    return ((writes ? write_ : read_) & bit) != 0;
  }
  // Whether everything `other` grants, this grants too.
  bool includes(const ScopeSet& other) const {
    return (other.read_ & ~read_) == 0 && (other.write_ & ~write_) == 0;
  }
  bool everything() const { return read_ == kAll && write_ == kAll; }
  // The canonical list: "*" for everything, else "area:write" or "area:read" per area granted,
  // in area order ("*:read" when every area is readable and none writable).
  std::vector<std::string> names() const;

  bool operator==(const ScopeSet&) const = default;

 private:
  static constexpr uint32_t kAll = (1U << kScopeAreaCount) - 1;
  uint32_t read_ = kAll;
  uint32_t write_ = kAll;
};

}  // namespace gpurent::model
