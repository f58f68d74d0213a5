#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

class TemplatesTest : public ControllerTest {
 protected:
  model::InstanceSpec from_template(std::string_view name, model::RuntimeChoice choice) {
    model::InstanceSpec s;
    s.gpu_types = {"h100-80g"};
    auto t = ctl_.templates().find(name);
    EXPECT_TRUE(t);
    EXPECT_TRUE(model::apply_template(**t, choice, {}, s));
    return s;
  }

  std::string add_container_node(const std::string& name, const std::string& uuid_prefix) {
    return add_node(name, uuid_prefix, true, std::nullopt);
  }
  std::string add_node(const std::string& name, const std::string& uuid_prefix,
                       bool container_runtime, std::optional<model::VmCapability> vm) {
    model::NodeRegistration registration{.name = name,
                                         .cpu_count = 64,
                                         .memory_mb = 512 * 1024,
                                         .simulated = true,
                                         .container_runtime = container_runtime,
                                         .vm = std::move(vm),
                                         .agent_version = "test"};
    for (int i = 0; i < 8; ++i) {
      registration.gpus.push_back({uuid_prefix + std::to_string(i), i, "h100-80g", "H100", 81920});
    }
    auto result = ctl_.register_node(hash_secret("join"), registration, "cred-" + name,
                                     hash_secret("cred-" + name));
    EXPECT_TRUE(result) << result.error().message;
    return result->node_id;
  }

  const model::WorkloadSpec& workload_of(const model::Instance& instance) {
    desired_ = *ctl_.fleet().desired_state(get(instance.id).node_id);
    for (const auto& w : desired_.workloads) {
      if (w.instance_id == instance.id) return w;
    }
    ADD_FAILURE() << instance.id << " is not in its node's desired set";
    return desired_.workloads.at(0);
  }

  model::DesiredState desired_;
};

TEST_F(TemplatesTest, OperatorsManageTheirOwnTemplatesAndTheBuiltInOnesAreFixed) {
  ASSERT_EQ(ctl_.templates().all().size(), model::builtin_templates().size());
  model::Template own{.name = "vllm", .image = "vllm/vllm-openai:v0.6", .services = {"api"}};
  EXPECT_EQ(ctl_.templates().put(alice_, own).error().kind, ErrorKind::kPermissionDenied);
  auto saved = ctl_.templates().put(admin_, own);
  ASSERT_TRUE(saved) << saved.error().message;
  EXPECT_FALSE(saved->builtin);
  ASSERT_EQ(ctl_.templates().all().size(), model::builtin_templates().size() + 1);
  EXPECT_EQ((*ctl_.templates().find("vllm"))->services, std::vector<std::string>{"api"});

  model::Template forged = own;
  forged.name = "pytorch";
  forged.builtin = true;  // the caller cannot make its own template built in
  EXPECT_EQ(ctl_.templates().put(admin_, forged).error().code, "builtin_template");
  EXPECT_EQ(ctl_.templates().remove(admin_, "jupyter").error().code, "builtin_template");
  EXPECT_EQ(ctl_.templates().remove(alice_, "vllm").error().kind, ErrorKind::kPermissionDenied);
  model::Template invalid = own;
  invalid.env = {{"CUDA_VISIBLE_DEVICES", "0"}};
  EXPECT_EQ(ctl_.templates().put(admin_, invalid).error().kind, ErrorKind::kInvalidArgument);

  ASSERT_TRUE(ctl_.templates().remove(admin_, "vllm"));
  EXPECT_EQ(ctl_.templates().find("vllm").error().code, "template_not_found");
  EXPECT_EQ(ctl_.templates().remove(admin_, "vllm").error().code, "template_not_found");
  // The store gets the changes in order: set, then deleted.
  const auto changes = ctl_.take_changes();
  ASSERT_EQ(changes.template_changes.size(), 2u);
  EXPECT_TRUE(changes.template_changes[0].template_);
  EXPECT_FALSE(changes.template_changes[1].template_);
}

TEST_F(TemplatesTest, OperatorTemplatesSurviveARestartBesideTheBuiltInOnes) {
  ASSERT_TRUE(ctl_.templates().put(admin_, {.name = "mine", .process_command = {"true"}}));
  Snapshot snapshot;
  snapshot.templates.push_back(
      *ctl_.templates().put(admin_, {.name = "mine", .process_command = {"false"}}));
  Controller restarted(clock_, {.seed = 7});
  ASSERT_TRUE(restarted.restore(std::move(snapshot)));
  ASSERT_EQ(restarted.templates().all().size(), model::builtin_templates().size() + 1);
  EXPECT_EQ((*restarted.templates().find("mine"))->process_command,
            std::vector<std::string>{"false"});
  EXPECT_TRUE((*restarted.templates().find("base"))->builtin);
}

TEST_F(TemplatesTest, ANodeWithoutAnEngineRunsTheProcessFormAndOneWithAnEngineTheImage) {
  // The fixture's node has no container engine: the auto form runs as a process there.
  const auto on_host = launch(alice_, from_template("pytorch", model::RuntimeChoice::kAuto));
  ASSERT_EQ(get(on_host.id).node_id, node_);
  const auto& host_workload = workload_of(on_host);
  EXPECT_TRUE(host_workload.image.empty());
  EXPECT_EQ(host_workload.command, (*ctl_.templates().find("pytorch"))->process_command);

  const std::string engine_node = add_container_node("node-c", "GPU-c");
  model::InstanceSpec wide = from_template("pytorch", model::RuntimeChoice::kAuto);
  wide.gpu_count = 8;  // only the new node has 8 free GPUs now
  const auto in_container = launch(alice_, wide);
  ASSERT_EQ(get(in_container.id).node_id, engine_node);
  const auto& container_workload = workload_of(in_container);
  EXPECT_EQ(container_workload.image, (*ctl_.templates().find("pytorch"))->image);
  EXPECT_EQ(container_workload.command, (*ctl_.templates().find("pytorch"))->command);
}

TEST_F(TemplatesTest, ImageOnlyWorkGoesOnlyToNodesWithAnEngine) {
  model::InstanceSpec tensorflow = from_template("tensorflow", model::RuntimeChoice::kAuto);
  tensorflow.queue = false;
  // Only the fixture's process-only node exists: refused at once, naming the capability.
  auto refused = ctl_.create_instance(alice_, tensorflow, std::nullopt, "");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("gpurent.io/container-runtime=true"), std::string::npos)
      << refused.error().message;

  const std::string engine_node = add_container_node("node-c", "GPU-c");
  const auto placed = launch(alice_, tensorflow);
  EXPECT_EQ(get(placed.id).node_id, engine_node);
  EXPECT_EQ(workload_of(placed).image, (*ctl_.templates().find("tensorflow"))->image);
}

TEST_F(TemplatesTest, ANodeThatGainsAnEngineSaysSoInItsReportsAndGetsImageWork) {
  model::InstanceSpec tensorflow = from_template("tensorflow", model::RuntimeChoice::kAuto);
  // No node has an engine: refused, saying which label is missing, unless it waits for one.
  const auto refused = ctl_.create_instance(alice_, tensorflow, std::nullopt, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "never_fits");
  EXPECT_NE(refused.error().message.find("gpurent.io/container-runtime=true"), std::string::npos);
  tensorflow.wait_for_capacity = true;
  const auto waiting = launch(alice_, tensorflow);
  ASSERT_EQ(get(waiting.id).state, InstanceState::kPending);
  EXPECT_TRUE(get(waiting.id).reason.starts_with("waiting for a node that can hold it to join"))
      << get(waiting.id).reason;
  model::NodeReport report{.applied_generation = ctl_.fleet().desired_state(node_)->generation};
  report.container_runtime = true;
  ASSERT_TRUE(ctl_.apply_report(node_, report));
  ctl_.tick();
  EXPECT_EQ(get(waiting.id).node_id, node_);
  EXPECT_TRUE((*ctl_.fleet().nodes().get(admin_, node_))->container_runtime);
  // A report that does not say leaves it as it is.
  ASSERT_TRUE(ctl_.apply_report(node_, {.applied_generation = report.applied_generation}));
  EXPECT_TRUE((*ctl_.fleet().nodes().get(admin_, node_))->container_runtime);
}

// An agent whose NVIDIA Container Toolkit it does not trust reports no container runtime, and why:
// image work goes elsewhere, the auto form runs there as a process.
TEST_F(TemplatesTest, ANodeWhoseToolkitIsRefusedGetsNoImageWorkAndKeepsTheReason) {
  const std::string engine_node = add_container_node("node-c", "GPU-c");
  const model::ContainerToolkit old{
      .version = "1.17.7", .gpu_containers = false, .note = "containers get no GPUs here: old"};
  model::NodeReport report{.applied_generation =
                               ctl_.fleet().desired_state(engine_node)->generation};
  report.container_runtime = false;
  report.container_toolkit = old;
  ASSERT_TRUE(ctl_.apply_report(engine_node, report));
  const model::Node& node = **ctl_.fleet().nodes().get(admin_, engine_node);
  EXPECT_FALSE(node.container_runtime);
  EXPECT_EQ(node.container_toolkit, old);

  model::InstanceSpec tensorflow = from_template("tensorflow", model::RuntimeChoice::kAuto);
  tensorflow.queue = false;
  EXPECT_FALSE(ctl_.create_instance(alice_, tensorflow, std::nullopt, ""));
  model::InstanceSpec wide = from_template("pytorch", model::RuntimeChoice::kAuto);
  wide.gpu_count = 8;  // only node-c has 8 free GPUs
  const auto placed = launch(alice_, wide);
  ASSERT_EQ(get(placed.id).node_id, engine_node);
  EXPECT_TRUE(workload_of(placed).image.empty());

  // Upgraded: the next report says so, and image work may go there again.
  report.container_runtime = true;
  report.container_toolkit = model::ContainerToolkit{.version = "1.17.8", .gpu_containers = true};
  ASSERT_TRUE(ctl_.apply_report(engine_node, report));
  EXPECT_TRUE((*ctl_.fleet().nodes().get(admin_, engine_node))->container_runtime);
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, engine_node))->container_toolkit->version, "1.17.8");
}

// VM work (runtime vm) goes only to nodes that run VMs and pass their GPUs; a node's reports keep
// that up to date.
TEST_F(TemplatesTest, VmWorkGoesOnlyToNodesThatPassGpusToVms) {
  model::InstanceSpec vm_work = from_template("base", model::RuntimeChoice::kVm);
  ASSERT_TRUE(vm_work.vm);
  EXPECT_EQ(model::runtime_of(vm_work), "vm");
  EXPECT_EQ(vm_work.command, (*ctl_.templates().find("base"))->process_command);
  const auto refused = ctl_.create_instance(alice_, vm_work, std::nullopt, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "never_fits");
  EXPECT_NE(refused.error().message.find("gpurent.io/vm-runtime=true"), std::string::npos)
      << refused.error().message;

  // A node whose GPUs cannot be passed (TCG, real GPUs) takes none either.
  const model::VmCapability no_gpus{
      .accelerator = "tcg", .gpu_passthrough = false, .note = "GPUs pass through only under KVM"};
  const std::string tcg_node = add_node("node-tcg", "GPU-t", false, no_gpus);
  EXPECT_EQ(ctl_.create_instance(alice_, vm_work, std::nullopt, "").error().code, "never_fits");
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, tcg_node))->vm, no_gpus);

  const model::VmCapability kvm{.accelerator = "kvm", .gpu_passthrough = true};
  const std::string vm_node = add_node("node-vm", "GPU-v", false, kvm);
  const auto placed = launch(alice_, vm_work);
  ASSERT_EQ(get(placed.id).node_id, vm_node);
  const auto& workload = workload_of(placed);
  EXPECT_TRUE(workload.vm);
  EXPECT_TRUE(workload.image.empty());
  // Other work still lands anywhere, the VM node included: it is a node like the others.
  EXPECT_FALSE(
      workload_of(launch(alice_, from_template("base", model::RuntimeChoice::kProcess))).vm);

  // Restarted without --vm-kernel: its next report says so, and VM work no longer goes there.
  model::NodeReport report{.applied_generation = ctl_.fleet().desired_state(vm_node)->generation};
  report.container_runtime = false;
  ASSERT_TRUE(ctl_.apply_report(vm_node, report));
  EXPECT_FALSE((*ctl_.fleet().nodes().get(admin_, vm_node))->vm);
  vm_work.queue = false;
  EXPECT_FALSE(ctl_.create_instance(alice_, vm_work, std::nullopt, ""));
  report.vm = kvm;
  ASSERT_TRUE(ctl_.apply_report(vm_node, report));
  EXPECT_EQ(get(launch(alice_, vm_work).id).node_id, vm_node);

  // What a VM cannot take is refused whatever the nodes.
  model::InstanceSpec shared = vm_work;
  shared.gpu_milli = 500;
  EXPECT_EQ(ctl_.create_instance(alice_, shared, std::nullopt, "").error().code,
            "vm_gpu_share_unsupported");
  model::InstanceSpec imaged = vm_work;
  imaged.image = "docker.io/library/busybox:1";
  EXPECT_EQ(ctl_.create_instance(alice_, imaged, std::nullopt, "").error().code,
            "vm_image_unsupported");
  // SSH keys go to a VM's cloud-init user, and must be keys.
  model::InstanceSpec keyed = vm_work;
  keyed.ssh_keys = {
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICwa4sBUcPlIif1WN+56sNJou2Z1eM/g65b0pLsYOSty"};
  EXPECT_EQ(get(launch(alice_, keyed).id).spec.ssh_keys, keyed.ssh_keys);
  model::InstanceSpec not_vm = keyed;
  not_vm.vm = false;
  EXPECT_EQ(ctl_.create_instance(alice_, not_vm, std::nullopt, "").error().code,
            "ssh_keys_need_vm");
  keyed.ssh_keys.push_back("ssh-ed25519 AAAA\nruncmd: [reboot]");
  const auto bad_key = ctl_.create_instance(alice_, keyed, std::nullopt, "");
  ASSERT_FALSE(bad_key);
  EXPECT_EQ(bad_key.error().code, "invalid_field");
  EXPECT_NE(bad_key.error().message.find("ssh_keys[1]"), std::string::npos);
}

TEST_F(TemplatesTest, AgentsCannotClaimThePlatformsLabels) {
  model::NodeRegistration registration{.name = "liar", .cpu_count = 8, .agent_version = "test"};
  registration.labels = {{"gpurent.io/container-runtime", "true"}};
  auto refused =
      ctl_.register_node(hash_secret("join"), registration, "cred-liar", hash_secret("cred-liar"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace gpurent::controller
