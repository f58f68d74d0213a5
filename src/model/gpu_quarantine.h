// A GPU taken out of service after a fatal hardware error, until an operator releases it.
//
// The controller quarantines a GPU when its node's report carries a fatal XID event (is_fatal_xid)
// or a rise of its double-bit ECC count. A quarantined GPU gets no new work, the work on it is
// moved off (controller/quarantine.cc), and its node shows as `degraded`. The record is keyed by
// the GPU's UUID, not by node and index, so that it follows the card when its host registers
// again; it is kept after the release (released_at set) and overwritten by the next quarantine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/field_table.h"
#include "model/json_form.h"

namespace gpurent::model {

// The XID codes after which a GPU cannot be trusted with work until it is reset and checked
// (NVIDIA's catalog, docs.nvidia.com/deploy/xid-errors):
//   48  double-bit ECC error: uncorrectable memory corruption;
//   79  the GPU has fallen off the bus: it is gone until the node is reset;
//   94  contained ECC error: the work that touched the memory is lost; reset the GPU;
//   95  uncontained ECC error: every process on the GPU is affected, the GPU needs a reset.
// Other codes report application faults (13 graphics engine exception, 31 MMU fault, 43 a
// stopped channel) or information (63 a row remapping recorded, 92 a high single-bit rate): the
// GPU stays in service and the alert gpu_xid_error tells the operator.
bool is_fatal_xid(int64_t code);

struct GpuQuarantine {
  std::string id;  // the GPU's UUID
  std::string node_id;
  int gpu_index = 0;           // the device index on its node, when it was quarantined
  std::string cause;           // "xid" or "ecc_dbe"
  std::optional<int64_t> xid;  // the fatal XID code (cause "xid")
  std::string message;         // for people: what was seen
  Timestamp at{};              // when the report that carried the fault arrived
  std::optional<Timestamp> released_at;
  std::string released_by;  // the operator's key id

  bool active() const { return !released_at; }
};

template <class V, schema::Of<GpuQuarantine> S>
void fields(V& visit, S& x) {
  visit("at", x.at);
  visit("cause", x.cause);
  visit("gpu_index", x.gpu_index);
  visit("id", x.id);
  visit("message", x.message);
  visit("node_id", x.node_id);
  visit("released_at", x.released_at, schema::kOptional);
  visit("released_by", x.released_by);
  visit("xid", x.xid, schema::kOptional);
}

}  // namespace gpurent::model
