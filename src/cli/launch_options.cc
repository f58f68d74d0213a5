#include "cli/launch_options.h"

#include <fmt/format.h>

#include <CLI/App.hpp>

#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/files.h"

namespace gpurent::cli {

void add_queueing_options(CLI::App& command, QueueingOptions& options) {
  command.add_flag("--no-queue", options.no_queue,
                   "fail at once, with the reason, if it cannot be placed now");
  command.add_flag("--wait-for-capacity", options.wait_for_capacity,
                   "queue even if no node of the cluster could ever hold it (for nodes that may "
                   "join); without it such a request is refused, saying why");
}

Status apply_queueing(const QueueingOptions& options, model::InstanceSpec& spec) {
  if (options.no_queue && options.wait_for_capacity) {
    return fail(usage_error("--no-queue and --wait-for-capacity exclude each other"));
  }
  spec.queue = !options.no_queue;
  spec.wait_for_capacity = options.wait_for_capacity;
  return {};
}

void add_launch_options(CLI::App& command, LaunchOptions& options) {
  command.add_option("--gpu", options.gpu, "GPU type (see `gpurent offers`), a,b,... or any")
      ->required();
  command.add_option("--count", options.count, "number of GPUs (1..8)")->capture_default_str();
  command.add_option("--gpu-milli", options.gpu_milli,
                     "share of one GPU in 1/1000 (1..999: the shared tier)");
  command.add_option("--gpu-memory", options.gpu_memory_gb,
                     "GPU memory in GB needed by a GPU share");
  command.add_option("--min-gpu-memory", options.min_gpu_memory_gb,
                     "with --gpu any: only GPUs with at least this many GB");
  command.add_option("--disk", options.disk_gb, "disk in GB");
  command.add_option("--selector", options.selector, "label=value the node must carry; repeat");
  command.add_flag("--spot", options.spot,
                   "spot pricing: cheaper, may be preempted by on-demand work");
  command.add_option("--max-price", options.max_price,
                     "with --spot: the most to pay per GPU-hour (e.g. 9.5); above it the "
                     "instance is interrupted");
  command.add_option("--reservation", options.reservation,
                     "reserved pricing: run on this reservation's GPUs (gpurent reserve), no GPU "
                     "charge");
  command.add_option("--priority", options.priority,
                     "-100..100: order among your own queued instances");
  add_queueing_options(command, options.queueing);
  command.add_option("--name", options.name, "a name for the instance");
  command.add_option("--image", options.image,
                     "run in this container image (nodes with a container engine); without a "
                     "command, the image's own");
  add_template_options(command, options.template_name, options.runtime);
  command
      .add_option("--service", options.services,
                  "an HTTP service the command serves on $GPURENT_PORT_<NAME>, reached through "
                  "the server at /i/<id>/<name>/ (gpurent jupyter); repeat")
      ->allow_extra_args(false);
  command
      .add_option("--ssh-key", options.ssh_keys,
                  "with --runtime vm on a cloud image: an OpenSSH public key, or a file of them "
                  "(~/.ssh/id_ed25519.pub), for the VM's user gpurent; repeat")
      ->allow_extra_args(false);
  command.add_option("--cpu", options.cpu, "CPU cores");
  command.add_option("--memory", options.memory_gb, "memory in GB");
  command.add_option("--env", options.env, "NAME=value for the process; repeat")
      ->allow_extra_args(false);
  command
      .add_option("--volume", options.volumes,
                  "VOLUME_ID:/mount/path: mount one of your volumes (gpurent volumes); repeat")
      ->allow_extra_args(false);
  command.add_option("command", options.command, "the command and its arguments, after --");
}

Result<std::vector<std::string>> read_ssh_keys(const std::vector<std::string>& arguments) {
  std::vector<std::string> keys;
  for (const auto& argument : arguments) {
    if (model::valid_ssh_public_key(argument)) {
      keys.push_back(argument);
      continue;
    }
    const auto text = read_file(argument, 1 << 20);
    if (!text) {
      return fail(usage_error(fmt::format(
          "--ssh-key {}: neither an OpenSSH public key nor a file that can be read ({})", argument,
          text.error().message)));
    }
    std::istringstream lines(*text);
    const size_t before = keys.size();
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line.front() == '#') continue;
      if (!model::valid_ssh_public_key(line)) {
        return fail(usage_error(fmt::format(
            "--ssh-key {}: a line that is not an OpenSSH public key (give the .pub file, not the "
            "private key)",
            argument)));
      }
      keys.push_back(std::move(line));
    }
    if (keys.size() == before) {
      return fail(usage_error(fmt::format("--ssh-key {}: the file holds no key", argument)));
    }
  }
  return keys;
}

Result<LaunchRequest> launch_request(const LaunchOptions& options) {
  LaunchRequest request;
  model::InstanceSpec& spec = request.spec;
  spec.name = options.name;
  spec.template_name = options.template_name;
  spec.image = options.image;
  spec.services = options.services;
  spec.gpu_types = parse_gpu_types(options.gpu);
  spec.gpu_count = options.count;
  spec.gpu_milli = options.gpu_milli;
  spec.gpu_memory_gb = options.gpu_memory_gb;
  spec.min_gpu_memory_gb = options.min_gpu_memory_gb;
  spec.cpu = options.cpu;
  spec.memory_gb = options.memory_gb;
  spec.disk_gb = options.disk_gb;
  for (const auto& label : options.selector) {
    const auto equals = label.find('=');
    if (equals == 0 || equals == std::string::npos) {
      return fail(
          Error::invalid("invalid_selector", fmt::format("'{}' is not label=value", label)));
    }
    spec.node_selector.insert_or_assign(label.substr(0, equals), label.substr(equals + 1));
  }
  if (options.spot) spec.pricing = model::PricingModel::kSpot;
  if (!options.reservation.empty()) {
    if (options.spot) return fail(usage_error("--reservation and --spot exclude each other"));
    spec.pricing = model::PricingModel::kReserved;
    spec.reservation_id = options.reservation;
  }
  if (!options.max_price.empty()) {
    if (!options.spot) return fail(usage_error("--max-price applies only with --spot"));
    GPURENT_TRY(max_price, parse_amount(options.max_price, false));
    spec.max_price = max_price;
  }
  spec.priority = options.priority;
  GPURENT_CHECK(apply_queueing(options.queueing, spec));
  spec.command = options.command;
  for (const auto& assignment : options.env) {
    GPURENT_TRY(variable, parse_env_assignment(assignment));
    spec.env.insert_or_assign(std::move(variable.first), std::move(variable.second));
  }
  GPURENT_TRY(volumes, parse_volume_mounts(options.volumes));
  spec.volumes = std::move(volumes);
  GPURENT_TRY(ssh_keys, read_ssh_keys(options.ssh_keys));
  spec.ssh_keys = std::move(ssh_keys);
  GPURENT_TRY(runtime, parse_runtime(options.runtime, options.template_name));
  request.runtime = runtime;
  return request;
}

}  // namespace gpurent::cli
