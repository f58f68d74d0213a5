// The flags that describe a launch, shared by `gpurent launch` and `gpurent estimate` (which
// prices the same request without creating anything).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "model/instance.h"
#include "model/template.h"

namespace CLI {
class App;
}

namespace gpurent::cli {

// Whether work waits in the queue: shared by launch and job submit.
struct QueueingOptions {
  bool no_queue = false;           // refuse at once unless it can be placed now
  bool wait_for_capacity = false;  // queue even what no node of the cluster could hold
};
void add_queueing_options(CLI::App& command, QueueingOptions& options);
Status apply_queueing(const QueueingOptions& options, model::InstanceSpec& spec);

struct LaunchOptions {
  std::string gpu;
  int count = 1;
  int gpu_milli = model::kMilliPerGpu;
  int gpu_memory_gb = 0;
  int min_gpu_memory_gb = 0;
  int disk_gb = 0;
  std::vector<std::string> selector;
  bool spot = false;
  std::string max_price;    // spot: per GPU-hour, in currency units
  std::string reservation;  // reserved pricing on this reservation
  int priority = 0;
  QueueingOptions queueing;
  std::string name;
  std::string template_name;
  std::string runtime = "auto";
  std::string image;
  std::vector<std::string> services;
  std::vector<std::string> ssh_keys;  // key lines, or files of them (--ssh-key)
  int cpu = 0;
  int memory_gb = 0;
  std::vector<std::string> env;
  std::vector<std::string> volumes;  // VOLUME_ID:/mount/path
  std::vector<std::string> command;
};

// Registers the launch flags (and the trailing command) on `command`.
void add_launch_options(CLI::App& command, LaunchOptions& options);
// The request the flags describe, and the runtime choice (--runtime with --template).
struct LaunchRequest {
  model::InstanceSpec spec;
  model::RuntimeChoice runtime = model::RuntimeChoice::kAuto;
};
Result<LaunchRequest> launch_request(const LaunchOptions& options);

// --ssh-key's arguments as key lines: a key as it is, else a file of keys (one a line, blank and
// # lines skipped). A usage error names an argument that is neither, or a file with another line.
Result<std::vector<std::string>> read_ssh_keys(const std::vector<std::string>& arguments);

}  // namespace gpurent::cli
