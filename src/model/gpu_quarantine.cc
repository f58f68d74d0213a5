#include "model/gpu_quarantine.h"

#include <algorithm>
#include <array>

namespace gpurent::model {

bool is_fatal_xid(int64_t code) {
  static constexpr std::array<int64_t, 4> kFatal = {48, 79, 94, 95};
  return std::find(kFatal.begin(), kFatal.end(), code) != kFatal.end();
}

void to_json(Json& j, const GpuQuarantine& v) {
  j = {{"id", v.id},
       {"node_id", v.node_id},
       {"gpu_index", v.gpu_index},
       {"cause", v.cause},
       {"xid", v.xid ? Json(*v.xid) : Json(nullptr)},
       {"message", v.message},
       {"at", to_unix_ms(v.at)},
       {"released_at", v.released_at ? Json(to_unix_ms(*v.released_at)) : Json(nullptr)},
       {"released_by", v.released_by}};
}

void from_json(const Json& j, GpuQuarantine& v) {
  v.id = j.at("id").get<std::string>();
  v.node_id = j.at("node_id").get<std::string>();
  v.gpu_index = j.at("gpu_index").get<int>();
  v.cause = j.at("cause").get<std::string>();
  if (const auto xid = j.find("xid"); xid != j.end() && !xid->is_null()) {
    v.xid = xid->get<int64_t>();
  }
  v.message = j.at("message").get<std::string>();
  v.at = from_unix_ms(j.at("at").get<int64_t>());
  if (const auto released = j.find("released_at"); released != j.end() && !released->is_null()) {
    v.released_at = from_unix_ms(released->get<int64_t>());
  }
  v.released_by = j.at("released_by").get<std::string>();
}

}  // namespace gpurent::model
