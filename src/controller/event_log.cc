#include "controller/event_log.h"

#include <spdlog/spdlog.h>

namespace gpurent::controller {

Status EventLog::restore(std::vector<model::Event> events) {
  return events_.restore(std::move(events), "event log");
}

void EventLog::record(std::string_view tenant_id, std::string_view object_id, std::string_view kind,
                      std::string message) {
  if (message.size() > model::kMaxEventMessageLength) message.resize(model::kMaxEventMessageLength);
  const model::Event& event = events_.append({.at = clock_.now(),
                                              .tenant_id = std::string(tenant_id),
                                              .object_id = std::string(object_id),
                                              .kind = std::string(kind),
                                              .message = std::move(message)});
  spdlog::info("event seq={} kind={} object={} tenant={}: {}", event.seq, event.kind,
               event.object_id, event.tenant_id, event.message);
  changes_.events.push_back(event);
}

std::vector<const model::Event*> EventLog::list(const model::Principal& caller,
                                                const EventFilter& filter, size_t limit) const {
  return events_.list(filter.after_seq, limit, [&](const model::Event& event) {
    if (caller.is_operator()) {
      if (filter.tenant_id && event.tenant_id != *filter.tenant_id) return false;
    } else if (event.tenant_id != caller.tenant_id) {
      return false;
    }
    return (!filter.object_id || event.object_id == *filter.object_id) &&
           (!filter.kind || event.kind == *filter.kind);
  });
}

}  // namespace gpurent::controller
