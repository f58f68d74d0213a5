// The node's files of what the server deleted: a volume's data (<data_dir>/volumes/<id>,
// runtime/volumes.h), and an instance's files (its directory in each runtime, a VM's root disk:
// Runtime::remove_instance), of an instance deleted or placed on another node.
//
// Level-triggered and deliberately conservative, because a mistake loses a tenant's data. What a
// desired state lists (DesiredState::volumes, ::instances) is recorded with its node and
// generation in <data_dir>/volumes.json (named when it held volumes alone). An id that the record
// lists and a newer desired state of the same node does not is doomed: deleted at that pass, and
// at every pass after until the deletion succeeds (an instance with a run that has not ended
// waits: remove_instance refuses it). An id listed again is no longer doomed. The doomed ids are
// in the record too, so that what the server deleted while the agent was down is still deleted
// after its restart. Nothing that no desired state of this node listed is ever touched (a
// stranger's directory, the data of a node registered under another id), and no instance's files
// are deleted while the server sends no list of them (an older server).
//
// Thread-safety: none; the reconcile thread owns the janitor and the runtimes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

class NodeJanitor {
 public:
  // Deletes an instance's files (Runtime::remove_instance).
  using RemoveInstance = std::function<Status(std::string_view instance_id)>;
  NodeJanitor(std::filesystem::path data_dir, RemoveInstance remove_instance);

  // Records a desired state newer than the recorded one (or the first of this node), dooming what
  // it no longer lists, then deletes what is doomed. Errors: the record could not be read (a
  // corrupt one: nothing is deleted until someone looks at it) or written.
  Status converge(const model::DesiredState& desired);

 private:
  // The ids of one kind that the last desired state listed, and those waiting to be deleted.
  struct Listed {
    std::set<std::string> listed;
    std::set<std::string> doomed;
  };
  struct Record {
    std::string node_id;
    int64_t generation = 0;
    Listed volumes;
    std::optional<Listed> instances;  // nullopt: the server lists none
  };
  Result<std::optional<Record>> load() const;
  Status save() const;

  std::filesystem::path data_dir_;
  RemoveInstance remove_instance_;
  std::optional<Record> record_;  // cached after the first converge
  bool loaded_ = false;
  std::set<std::string> failed_;  // doomed ids whose failed deletion was logged
};

}  // namespace gpurent::agent
