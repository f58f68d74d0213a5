#include "model/template.h"

#include <gtest/gtest.h>

#include "model/codec.h"

namespace gpurent::model {
namespace {

Template find_builtin(std::string_view name) {
  for (auto& t : builtin_templates()) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no built-in template " << name;
  return {};
}

TEST(TemplateTest, BuiltInTemplatesAreValidAndCoverTheIssuesCatalog) {
  std::vector<std::string> names;
  for (const auto& t : builtin_templates()) {
    EXPECT_TRUE(validate_template(t)) << t.name << ": " << validate_template(t).error().message;
    EXPECT_TRUE(t.builtin);
    names.push_back(t.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"base", "pytorch", "tensorflow", "resnet50-bench",
                                             "jupyter"}));
  // Debian has no TensorFlow package: that template is container only.
  EXPECT_TRUE(find_builtin("tensorflow").process_command.empty());
  // Jupyter serves its UI through the node's proxy on the port and path the node gives it.
  const Template jupyter = find_builtin("jupyter");
  EXPECT_EQ(jupyter.services, std::vector<std::string>{"jupyter"});
  ASSERT_EQ(jupyter.process_command.size(), 3u);
  EXPECT_NE(jupyter.process_command[2].find("$GPURENT_PORT_JUPYTER"), std::string::npos);
  EXPECT_NE(jupyter.process_command[2].find("$GPURENT_SERVICE_TOKEN"), std::string::npos);
  EXPECT_NE(jupyter.process_command[2].find("--ip=127.0.0.1"), std::string::npos);
}

TEST(TemplateTest, ValidationNamesTheFieldAtFault) {
  const auto error_of = [](const Template& t) {
    auto status = validate_template(t);
    EXPECT_FALSE(status) << t.name;
    return status ? std::string() : status.error().message;
  };
  Template good{.name = "my-env", .image = "ghcr.io/me/env:1", .process_command = {"true"}};
  ASSERT_TRUE(validate_template(good));

  Template t = good;
  t.name = "My_Env";
  EXPECT_NE(error_of(t).find("name"), std::string::npos);
  t = good;
  t.name = std::string(kMaxTemplateNameLength + 1, 'a');
  EXPECT_NE(error_of(t).find("name"), std::string::npos);
  t = good;
  t.image = "bad image";
  EXPECT_NE(error_of(t).find("image"), std::string::npos);
  t = good;
  t.image.clear();
  t.command = {"python3"};  // a command in no image
  EXPECT_NE(error_of(t).find("command"), std::string::npos);
  t = good;
  t.image.clear();
  t.process_command.clear();  // runs nowhere
  EXPECT_NE(error_of(t).find("image, a process_command, or both"), std::string::npos);
  t = good;
  t.env = {{"GPURENT_INSTANCE_ID", "forged"}};
  EXPECT_NE(error_of(t).find("set by the platform"), std::string::npos);
  t = good;
  t.env = {{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100"}};
  EXPECT_NE(error_of(t).find("set by the platform"), std::string::npos);
  t = good;
  t.env = {{"1X", "y"}};
  EXPECT_NE(error_of(t).find("not a variable name"), std::string::npos);
  t = good;
  t.services = {"web", "web"};
  EXPECT_NE(error_of(t).find("services"), std::string::npos);
  t = good;
  t.services = {"Web UI"};
  EXPECT_NE(error_of(t).find("services"), std::string::npos);
  t = good;
  t.process_command = {""};
  EXPECT_NE(error_of(t).find("process_command"), std::string::npos);
  t = good;
  t.recommended_gpu_memory_gb = -1;
  EXPECT_NE(error_of(t).find("recommended_gpu_memory_gb"), std::string::npos);
}

TEST(TemplateTest, AutoKeepsBothFormsAndTheRequestsOwnFieldsWin) {
  const Template pytorch = find_builtin("pytorch");
  InstanceSpec spec;
  ASSERT_TRUE(apply_template(pytorch, RuntimeChoice::kAuto, {}, spec));
  EXPECT_EQ(spec.template_name, "pytorch");
  EXPECT_EQ(spec.image, pytorch.image);
  EXPECT_EQ(spec.command, pytorch.command);
  EXPECT_EQ(spec.process_command, pytorch.process_command);
  EXPECT_EQ(runtime_of(spec), "auto");
  EXPECT_EQ(spec.env.at("PYTHONUNBUFFERED"), "1");
  InstanceSpec jupyter;
  ASSERT_TRUE(apply_template(find_builtin("jupyter"), RuntimeChoice::kAuto, {}, jupyter));
  EXPECT_EQ(jupyter.services, std::vector<std::string>{"jupyter"});
  InstanceSpec own_services;
  ASSERT_TRUE(apply_template(find_builtin("jupyter"), RuntimeChoice::kAuto,
                             {.services = {"lab", "tensorboard"}}, own_services));
  EXPECT_EQ(own_services.services, (std::vector<std::string>{"lab", "tensorboard"}));

  // The tenant's command runs in either form; its env is laid over the template's.
  InstanceSpec own;
  ASSERT_TRUE(apply_template(pytorch, RuntimeChoice::kAuto,
                             {.image = "ghcr.io/me/torch:2",
                              .command = {"python3", "train.py"},
                              .env = {{"PYTHONUNBUFFERED", "0"}, {"LR", "0.1"}}},
                             own));
  EXPECT_EQ(own.image, "ghcr.io/me/torch:2");
  EXPECT_EQ(own.command, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(own.process_command, own.command);
  EXPECT_EQ(own.env,
            (std::map<std::string, std::string>{{"LR", "0.1"}, {"PYTHONUNBUFFERED", "0"}}));
}

TEST(TemplateTest, AChosenRuntimeTakesThatFormOnlyOrSaysItHasNone) {
  const Template jupyter = find_builtin("jupyter");
  InstanceSpec process;
  ASSERT_TRUE(apply_template(jupyter, RuntimeChoice::kProcess, {}, process));
  EXPECT_TRUE(process.image.empty());
  EXPECT_EQ(process.command, jupyter.process_command);
  EXPECT_TRUE(process.process_command.empty());

  InstanceSpec container;
  ASSERT_TRUE(apply_template(jupyter, RuntimeChoice::kContainer, {}, container));
  EXPECT_EQ(container.image, jupyter.image);
  EXPECT_EQ(container.command, jupyter.command);
  EXPECT_TRUE(container.process_command.empty());  // so it is placed only where images run

  InstanceSpec tensorflow;
  auto refused =
      apply_template(find_builtin("tensorflow"), RuntimeChoice::kProcess, {}, tensorflow);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kUnprocessable);
  EXPECT_EQ(refused.error().code, "template_runtime_unavailable");
  // ... unless the tenant brings the command: then it is theirs to run on the host.
  ASSERT_TRUE(apply_template(find_builtin("tensorflow"), RuntimeChoice::kProcess,
                             {.command = {"python3", "-V"}}, tensorflow));
  EXPECT_EQ(tensorflow.command, (std::vector<std::string>{"python3", "-V"}));

  Template host_only{.name = "host", .process_command = {"true"}};
  InstanceSpec auto_spec;
  ASSERT_TRUE(apply_template(host_only, RuntimeChoice::kAuto, {}, auto_spec));
  EXPECT_TRUE(auto_spec.image.empty());
  EXPECT_EQ(auto_spec.command, std::vector<std::string>{"true"});
  InstanceSpec container_spec;
  EXPECT_EQ(apply_template(host_only, RuntimeChoice::kContainer, {}, container_spec).error().code,
            "template_runtime_unavailable");

  // A VM runs the process form's command in its guest; a template without one says so.
  InstanceSpec vm;
  ASSERT_TRUE(apply_template(jupyter, RuntimeChoice::kVm, {}, vm));
  EXPECT_TRUE(vm.vm);
  EXPECT_TRUE(vm.image.empty());
  EXPECT_EQ(vm.command, jupyter.process_command);
  EXPECT_EQ(runtime_of(vm), "vm");
  InstanceSpec no_vm;
  const auto vm_refused = apply_template(find_builtin("tensorflow"), RuntimeChoice::kVm, {}, no_vm);
  ASSERT_FALSE(vm_refused);
  EXPECT_NE(vm_refused.error().message.find("for the vm runtime"), std::string::npos)
      << vm_refused.error().message;
  EXPECT_FALSE(no_vm.vm);
  EXPECT_EQ(runtime_of(process), "process");
  EXPECT_EQ(runtime_of(container), "container");
  EXPECT_EQ(runtime_of(auto_spec), "process");
}

TEST(TemplateTest, RuntimeChoicesRoundTripAsText) {
  for (const auto choice : {RuntimeChoice::kAuto, RuntimeChoice::kProcess,
                            RuntimeChoice::kContainer, RuntimeChoice::kVm}) {
    RuntimeChoice parsed = RuntimeChoice::kAuto;
    ASSERT_TRUE(parse_runtime_choice(to_string(choice), &parsed));
    EXPECT_EQ(parsed, choice);
  }
  RuntimeChoice parsed = RuntimeChoice::kAuto;
  EXPECT_FALSE(parse_runtime_choice("docker", &parsed));
}

TEST(TemplateTest, TheStoredFormRoundTrips) {
  const Template jupyter = find_builtin("jupyter");
  const Template back = Json(jupyter).get<Template>();
  EXPECT_EQ(Json(back), Json(jupyter));
  EXPECT_EQ(back.services, jupyter.services);
  EXPECT_EQ(back.process_command, jupyter.process_command);
}

}  // namespace
}  // namespace gpurent::model
