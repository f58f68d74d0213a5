// The API's bodies for templates (docs/api.md "Templates"; docs/openapi.json components
// TemplateSet and Template): what an operator PUTs under a name and what everyone is shown, as
// api/workloads.h says of instances.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/json_form.h"
#include "api/workloads.h"
#include "common/field_table.h"

namespace gpurent::api {

// PUT /v1/templates/{name}: the whole template.
struct TemplateSet {
  std::optional<std::string> description;
  std::optional<std::string> image;
  std::optional<Command> command;
  std::optional<Command> process_command;
  std::optional<std::map<std::string, std::string>> env;
  std::optional<std::vector<std::string>> services;
  std::optional<int64_t> recommended_gpu_memory_gb;
};

template <class V, schema::Of<TemplateSet> S>
void fields(V& visit, S& x) {
  visit("description", x.description, schema::kOmitEmpty);
  visit("image", x.image, schema::kOmitEmpty);
  visit("command", x.command, schema::kOmitEmpty);
  visit("process_command", x.process_command, schema::kOmitEmpty);
  visit("env", x.env, schema::kOmitEmpty);
  visit("services", x.services, schema::kOmitEmpty);
  visit("recommended_gpu_memory_gb", x.recommended_gpu_memory_gb, schema::kOmitEmpty);
}

struct Template {
  std::string name;
  std::string description;
  std::optional<std::string> image;
  std::vector<std::string> command;
  std::vector<std::string> process_command;
  std::map<std::string, std::string> env;
  std::vector<std::string> services;
  int recommended_gpu_memory_gb = 0;
  std::vector<std::string> runtimes;  // the forms it has: "process", "container"
  bool builtin = false;
};

template <class V, schema::Of<Template> S>
void fields(V& visit, S& x) {
  visit("name", x.name);
  visit("description", x.description);
  visit("image", x.image);
  visit("command", x.command);
  visit("process_command", x.process_command);
  visit("env", x.env);
  visit("services", x.services);
  visit("recommended_gpu_memory_gb", x.recommended_gpu_memory_gb);
  visit("runtimes", x.runtimes);
  visit("builtin", x.builtin);
}

}  // namespace gpurent::api
