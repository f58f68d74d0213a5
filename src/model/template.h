// Templates: named starting points for instances and jobs ("pytorch", "jupyter", ...), so that a
// tenant writes `gpurent launch --template pytorch` instead of an image, a command and its env.
//
// A template describes one environment for both runtimes a node may have: an image (and the
// command to run in it) for nodes with a container engine, and a command for the process runtime,
// which runs on the host's own software (on Debian: python3-torch, jupyter-notebook). Either may
// be absent; a launch picks one (`runtime`) or leaves the choice to the node it lands on.
//
// A launch copies what it takes from the template into the instance's spec (apply_template), so
// editing or deleting a template never changes work that already exists.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/instance.h"

namespace gpurent::model {

inline constexpr size_t kMaxTemplates = 256;
inline constexpr size_t kMaxTemplateNameLength = 40;

struct Template {
  std::string name;  // [a-z][a-z0-9-]*, the key
  std::string description;
  // Container runtime: the image, and the command in it (empty: the image's own).
  std::string image;
  std::vector<std::string> command;
  // Process runtime: the command on the host; empty: the template needs a container engine.
  std::vector<std::string> process_command;
  std::map<std::string, std::string> env;
  // HTTP services the workload serves, reachable through the server at /i/{id}/{service}/.
  std::vector<std::string> services;
  int recommended_gpu_memory_gb = 0;  // advice shown in the catalog; 0: any GPU
  bool builtin = false;               // shipped with gpurent: operators cannot change it
};

template <class V, schema::Of<Template> S>
void fields(V& visit, S& x) {
  visit("builtin", x.builtin);
  visit("command", x.command);
  visit("description", x.description);
  visit("env", x.env);
  visit("image", x.image);
  visit("name", x.name);
  visit("process_command", x.process_command);
  visit("recommended_gpu_memory_gb", x.recommended_gpu_memory_gb);
  visit("services", x.services);
}

// The templates every installation has: base, pytorch, tensorflow, jupyter.
std::vector<Template> builtin_templates();

// Names, commands, env and services in range; at least one runtime. kInvalidArgument with the
// field at fault otherwise.
Status validate_template(const Template& t);

// How a launch chooses between a template's two forms, or asks for a virtual machine.
enum class RuntimeChoice {
  kAuto,       // both forms kept: the node runs the image if it has an engine, else the process
  kProcess,    // the process form only (runs on every node)
  kContainer,  // the image only (runs on nodes with a container engine)
  kVm,         // the process form's command in a VM (InstanceSpec::vm; nodes that run VMs)
};
std::string_view to_string(RuntimeChoice choice);
bool parse_runtime_choice(std::string_view text, RuntimeChoice* out);
inline bool from_string(std::string_view text, RuntimeChoice* out) {
  return parse_runtime_choice(text, out);
}

// What the launch request said beside the template: its own image, command and services, if any,
// win over the template's; its env is laid over the template's.
struct TemplateOverrides {
  std::string image;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::vector<std::string> services;
};

// Fills spec's runtime fields (template_name, image, command, process_command, env, services)
// from the template and the overrides. kUnprocessable "template_runtime_unavailable" when the
// chosen runtime is one the template has no form for (e.g. tensorflow as a process on Debian).
// kVm takes the process form (the command) and sets spec.vm.
Status apply_template(const Template& t, RuntimeChoice choice, TemplateOverrides overrides,
                      InstanceSpec& spec);

}  // namespace gpurent::model
