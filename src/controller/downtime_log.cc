#include "controller/downtime_log.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "controller/internal.h"

namespace gpurent::controller {

void DowntimeLog::restore(Snapshot& snapshot) {
  for (auto& record : snapshot.downtime) {
    of_[record.instance_id].push_back(record.id);
    if (!record.end) open_[record.instance_id] = record.id;
    records_.emplace(record.id, std::move(record));
  }
}

void DowntimeLog::start(const model::Instance& instance, Timestamp at, std::string_view cause) {
  if (open_.contains(instance.id)) return;
  model::Downtime record{.id = fmt::format("dt:{}:{}", instance.id, to_unix_ms(at)),
                         .tenant_id = instance.tenant_id,
                         .instance_id = instance.id,
                         .cause = std::string(cause),
                         .start = at};
  changes_.downtime.push_back(record);
  open_.emplace(instance.id, record.id);
  of_[instance.id].push_back(record.id);
  records_.emplace(record.id, std::move(record));
}

void DowntimeLog::end(const model::Instance& instance, Timestamp at) {
  const auto open = open_.find(instance.id);
  if (open == open_.end()) return;
  model::Downtime& record = records_.at(open->second);
  record.end = std::max(at, record.start);
  changes_.downtime.push_back(record);
  open_.erase(open);
}

std::vector<const model::Downtime*> DowntimeLog::of_instance(std::string_view instance_id) const {
  return listed_under(of_, instance_id, records_);
}

std::map<std::string, int64_t> DowntimeLog::seconds_down(Timestamp from, Timestamp to) const {
  std::map<std::string, int64_t> down;
  for (const auto& [id, record] : records_) {
    const Timestamp begins = std::max(record.start, from);
    const Timestamp ends = std::min(record.end.value_or(to), to);
    if (ends > begins) down[record.instance_id] += (ends - begins).count() / 1000;
  }
  return down;
}

}  // namespace gpurent::controller
