#include "agent/janitor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <vector>

#include "agent/runtime/runtime.h"
#include "agent/runtime/volumes.h"
#include "agent/runtime/workdir.h"
#include "common/files.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

constexpr std::string_view kRecordFile = "volumes.json";

// What the next listing of one kind is: the ids listed now (those that could name a directory),
// and as doomed every id of the one before (listed or doomed) that is not listed now.
template <class Listed>
Listed next_listing(const Listed* before, const std::vector<std::string>& now,
                    bool (*valid)(std::string_view)) {
  Listed next;
  for (const auto& id : now) {
    if (valid(id)) next.listed.insert(id);
  }
  if (before == nullptr) return next;
  for (const auto* ids : {&before->listed, &before->doomed}) {
    for (const auto& id : *ids) {
      if (!next.listed.contains(id)) next.doomed.insert(id);
    }
  }
  return next;
}

// Deletes what it can of the doomed; whether any was. A failure is logged once per id, and a
// conflict (an instance's run has not ended yet) not at all: the next pass tries again.
bool sweep(std::set<std::string>& doomed, std::set<std::string>& failed, std::string_view kind,
           const std::function<Status(const std::string&)>& remove) {
  bool changed = false;
  for (auto it = doomed.begin(); it != doomed.end();) {
    const auto removed = remove(*it);
    if (removed) {
      spdlog::info("{}_files_deleted id={}", kind, *it);
      failed.erase(*it);
      it = doomed.erase(it);
      changed = true;
      continue;
    }
    if (removed.error().kind != ErrorKind::kConflict && failed.insert(*it).second) {
      spdlog::error("{}_files_not_deleted id={} error=\"{}\"", kind, *it, removed.error().message);
    }
    ++it;
  }
  return changed;
}

}  // namespace

NodeJanitor::NodeJanitor(std::filesystem::path data_dir, RemoveInstance remove_instance)
    : data_dir_(std::move(data_dir)), remove_instance_(std::move(remove_instance)) {}

Result<std::optional<NodeJanitor::Record>> NodeJanitor::load() const {
  auto text = read_file(data_dir_ / kRecordFile);
  if (!text) {
    if (text.error().code == "file_not_found") return std::optional<Record>();
    return fail(text.error());
  }
  try {  // nlohmann reports a corrupt record by throwing
    const Json j = Json::parse(*text);
    Record record;
    record.node_id = j.at("node_id").get<std::string>();
    record.generation = j.at("generation").get<int64_t>();
    record.volumes.listed = j.at("volumes").get<std::set<std::string>>();
    record.volumes.doomed = j.value("doomed_volumes", std::set<std::string>());
    if (j.contains("instances")) {
      record.instances = Listed{j.at("instances").get<std::set<std::string>>(),
                                j.value("doomed_instances", std::set<std::string>())};
    }
    return std::optional<Record>(std::move(record));
  } catch (const std::exception& e) {
    return fail(Error::internal(
        fmt::format("corrupt record {}: {}", (data_dir_ / kRecordFile).string(), e.what())));
  }
}

Status NodeJanitor::save() const {
  Json j = {{"node_id", record_->node_id},
            {"generation", record_->generation},
            {"volumes", record_->volumes.listed},
            {"doomed_volumes", record_->volumes.doomed}};
  if (record_->instances) {
    j["instances"] = record_->instances->listed;
    j["doomed_instances"] = record_->instances->doomed;
  }
  return write_file_atomic(data_dir_ / kRecordFile, j.dump());
}

Status NodeJanitor::converge(const model::DesiredState& desired) {
  if (!loaded_) {
    GPURENT_TRY(record, load());
    record_ = std::move(record);
    loaded_ = true;
  }
  const bool same_node = record_ && record_->node_id == desired.node_id;
  bool changed = false;
  if (!same_node || desired.generation > record_->generation) {
    // Another node's record (registered anew) dooms nothing: its ids say nothing of this one's.
    const Record* before = same_node ? &*record_ : nullptr;
    Record next{.node_id = desired.node_id, .generation = desired.generation};
    next.volumes =
        next_listing(before ? &before->volumes : nullptr, desired.volumes, model::valid_volume_id);
    if (desired.instances) {
      next.instances = next_listing(before && before->instances ? &*before->instances : nullptr,
                                    *desired.instances, valid_instance_id);
    }
    record_ = std::move(next);
    changed = true;
  }
  changed |= sweep(record_->volumes.doomed, failed_, "volume", [&](const std::string& id) {
    std::error_code ec;
    std::filesystem::remove_all(volume_dir(data_dir_, id), ec);
    return ec ? fail(Error::internal(ec.message())) : Status();
  });
  if (record_->instances) {
    changed |= sweep(record_->instances->doomed, failed_, "instance",
                     [&](const std::string& id) -> Status {
                       GPURENT_CHECK(remove_instance_(id));
                       // Its home is gone: a later run of it here (a job's task, a stopped instance
                       // started here again) gets its workdir unpacked anew.
                       return forget_unpacked_workdir(data_dir_, id);
                     });
  }
  return changed ? save() : Status();
}

}  // namespace gpurent::agent
