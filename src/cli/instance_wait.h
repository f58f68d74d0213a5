// Waiting for an instance to reach a state (`launch --wait`, `stop --wait`, `bench resnet50`):
// polled once a second, progress on stderr so that stdout carries only the final object.
#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "api/workloads.h"
#include "cli/context.h"
#include "client/api_client.h"

namespace gpurent::cli {

// Where a waited-for action ends: the states it is done in, and those in which it never will be
// (an Error "instance_not_<goal>").
struct Goal {
  std::string_view name;  // "running", "stopped", "terminated"
  std::vector<std::string_view> done;
  std::vector<std::string_view> unreachable;
};
inline const Goal kRunning{
    "running", {"running"}, {"failed", "stopped", "preempted", "terminated"}};
inline const Goal kStopped{"stopped", {"stopped", "failed", "preempted", "terminated"}, {}};
inline const Goal kTerminated{"terminated", {"terminated"}, {}};

// Polls until the instance reaches the goal, or cannot, at most for the timeout.
Result<client::Answer<api::Instance>> wait_until(Context& ctx, client::ApiClient& api,
                                                 client::Answer<api::Instance> instance,
                                                 const Goal& goal, std::chrono::seconds timeout);

}  // namespace gpurent::cli
