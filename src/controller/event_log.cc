#include "controller/event_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace gpurent::controller {

Status EventLog::restore(std::vector<model::Event> events) {
  for (auto& event : events) {
    if (event.seq != last_seq_ + 1 && !events_.empty()) {
      return fail(Error::internal(fmt::format("event log has a gap before seq {}", event.seq)));
    }
    last_seq_ = event.seq;
    events_.push_back(std::move(event));
    if (events_.size() > model::kMaxEventsInMemory) events_.pop_front();
  }
  return {};
}

void EventLog::record(std::string_view tenant_id, std::string_view object_id, std::string_view kind,
                      std::string message) {
  if (message.size() > model::kMaxEventMessageLength) message.resize(model::kMaxEventMessageLength);
  model::Event event{.seq = ++last_seq_,
                     .at = clock_.now(),
                     .tenant_id = std::string(tenant_id),
                     .object_id = std::string(object_id),
                     .kind = std::string(kind),
                     .message = std::move(message)};
  spdlog::info("event seq={} kind={} object={} tenant={}: {}", event.seq, event.kind,
               event.object_id, event.tenant_id, event.message);
  changes_.events.push_back(event);
  events_.push_back(std::move(event));
  if (events_.size() > model::kMaxEventsInMemory) events_.pop_front();
}

std::vector<const model::Event*> EventLog::list(const model::Principal& caller,
                                                const EventFilter& filter, size_t limit) const {
  std::vector<const model::Event*> out;
  // seq is dense, so the first event after the cursor is found by arithmetic, not by a scan.
  size_t first = 0;
  if (!events_.empty() && filter.after_seq >= events_.front().seq) {
    first = static_cast<size_t>(filter.after_seq - events_.front().seq + 1);
  }
  for (size_t i = first; i < events_.size() && out.size() < limit; ++i) {
    const model::Event& event = events_[i];
    if (caller.is_operator()) {
      if (filter.tenant_id && event.tenant_id != *filter.tenant_id) continue;
    } else if (event.tenant_id != caller.tenant_id) {
      continue;
    }
    if (filter.object_id && event.object_id != *filter.object_id) continue;
    if (filter.kind && event.kind != *filter.kind) continue;
    out.push_back(&event);
  }
  return out;
}

}  // namespace gpurent::controller
