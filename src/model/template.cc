#include "model/template.h"

#include "model/benchmark.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "model/workload_fields.h"

namespace gpurent::model {
namespace {

constexpr size_t kMaxDescriptionLength = 1024;
constexpr size_t kMaxCommandArgs = 256;
constexpr size_t kMaxCommandArgLength = 16384;
constexpr size_t kMaxEnv = 128;
constexpr size_t kMaxEnvValueLength = 4096;
constexpr int kMaxRecommendedGpuMemoryGb = 4096;

std::vector<std::string> shell(std::string script) { return {"/bin/sh", "-c", std::move(script)}; }

// Keeps the instance up for `gpurent exec` and Jupyter until the tenant stops it.
std::vector<std::string> keep_alive() { return {"sleep", "infinity"}; }

// The ResNet-50 training benchmark (docs/node-benchmark.md): synthetic ImageNet-shaped data, a
// fixed batch, SGD with momentum; images a second over the timed steps, in FP32 and in mixed
// precision (FP16 with loss scaling on a GPU, BF16 on a CPU), each printed as one line
// "GPURENT_RESNET50 {json}" that model::resnet50_report reads from the log ("gpu" is the GPU the
// platform gave it). The batch, steps, warm-up steps and image size come from BENCH_BATCH, _STEPS,
// _WARMUP and _IMAGE_SIZE (GPURENT_ names are the platform's).
constexpr std::string_view kResnet50Script = R"py(
import json, os, time
import torch, torchvision

def setting(name, default):
    return int(os.environ.get("BENCH_" + name, default))

batch, steps, warmup = setting("BATCH", 64), setting("STEPS", 30), setting("WARMUP", 5)
size = setting("IMAGE_SIZE", 224)
device = "cuda" if torch.cuda.is_available() else "cpu"
name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
model = torchvision.models.resnet50(weights=None).to(device).train()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
images = torch.randn(batch, 3, size, size, device=device)
labels = torch.randint(0, 1000, (batch,), device=device)

def sync():
    if device == "cuda":
        torch.cuda.synchronize()

for precision in ("fp32", "amp"):
    amp = precision == "amp"
    dtype = torch.float16 if device == "cuda" else torch.bfloat16
    scaler = torch.cuda.amp.GradScaler(enabled=amp and device == "cuda")
    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=dtype, enabled=amp):
            loss = loss_fn(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    for _ in range(warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    seconds = time.perf_counter() - start
    print("GPURENT_RESNET50 " + json.dumps({
        "precision": precision, "images_per_s": batch * steps / seconds, "batch": batch,
        "steps": steps, "image_size": size, "device": name, "torch": torch.__version__,
        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES", "")}),
        flush=True)
)py";

Error invalid(std::string_view field, std::string message) {
  return Error::invalid("invalid_template", fmt::format("{}: {}", field, message));
}

bool valid_slug(std::string_view name, size_t max_length) {
  return !name.empty() && name.size() <= max_length && name[0] >= 'a' && name[0] <= 'z' &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
         });
}

Status validate_command(std::string_view field, const std::vector<std::string>& command) {
  if (command.size() > kMaxCommandArgs) {
    return fail(invalid(field, fmt::format("at most {} arguments", kMaxCommandArgs)));
  }
  if (!command.empty() && command[0].empty()) {
    return fail(invalid(field, "the program (first argument) is empty"));
  }
  for (const auto& arg : command) {
    if (arg.size() > kMaxCommandArgLength || arg.find('\0') != std::string::npos) {
      return fail(invalid(field, "an argument is too long or holds a NUL byte"));
    }
  }
  return {};
}

}  // namespace

std::vector<Template> builtin_templates() {
  // Jupyter listens on the loopback port the node gives its "jupyter" service, under the path
  // the server proxies (/i/{id}/jupyter/), with the node's per-run token: only the node's proxy,
  // which adds the token, reaches it.
  const std::string notebook =
      "exec jupyter notebook --no-browser --allow-root --ip=127.0.0.1 "
      "--port=\"$GPURENT_PORT_JUPYTER\" --NotebookApp.token=\"$GPURENT_SERVICE_TOKEN\" "
      "--NotebookApp.base_url=\"$GPURENT_BASE_URL_JUPYTER\" --notebook-dir=.";
  const std::string lab =
      "exec jupyter lab --no-browser --allow-root --ip=127.0.0.1 "
      "--port=\"$GPURENT_PORT_JUPYTER\" --ServerApp.token=\"$GPURENT_SERVICE_TOKEN\" "
      "--ServerApp.base_url=\"$GPURENT_BASE_URL_JUPYTER\" --ServerApp.root_dir=/workspace";
  // Python output unbuffered, so logs show training progress as it happens.
  const std::map<std::string, std::string> python_env = {{"PYTHONUNBUFFERED", "1"}};
  return {
      Template{.name = "base",
               .description = "A plain machine: Ubuntu in a container, the host as a process. "
                              "Runs until stopped; use `gpurent exec` or your own command.",
               .image = "docker.io/library/ubuntu:24.04",
               .command = keep_alive(),
               .process_command = keep_alive(),
               .builtin = true},
      Template{.name = "pytorch",
               .description = "PyTorch with CUDA (as a process: Debian's python3-torch and "
                              "python3-torchvision). Give your training command, or it waits "
                              "for `gpurent exec`.",
               .image = "docker.io/pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
               .command = keep_alive(),
               .process_command = keep_alive(),
               .env = python_env,
               .recommended_gpu_memory_gb = 16,
               .builtin = true},
      Template{.name = "tensorflow",
               .description = "TensorFlow with CUDA. Container only: Debian has no TensorFlow "
                              "package for the process runtime.",
               .image = "docker.io/tensorflow/tensorflow:2.18.0-gpu",
               .command = keep_alive(),
               .env = python_env,
               .recommended_gpu_memory_gb = 16,
               .builtin = true},
      Template{.name = std::string(kResnet50Template),
               .description = "ResNet-50 training throughput (images/s, FP32 and mixed "
                              "precision) on synthetic data; `gpurent bench resnet50` runs it "
                              "and reads the result. As a process: Debian's python3-torch.",
               .image = "docker.io/pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
               .command = {"python", "-c", std::string(kResnet50Script)},
               .process_command = {"python3", "-c", std::string(kResnet50Script)},
               .env = python_env,
               .recommended_gpu_memory_gb = 16,
               .builtin = true},
      Template{.name = "jupyter",
               .description = "Jupyter with PyTorch, opened through the server at "
                              "/i/{id}/jupyter/ (`gpurent jupyter ID`). As a process: Debian's "
                              "jupyter-notebook; in a container: JupyterLab.",
               .image = "quay.io/jupyter/pytorch-notebook:cuda12-latest",
               .command = shell(lab),
               .process_command = shell(notebook),
               .env = python_env,
               .services = {"jupyter"},
               .recommended_gpu_memory_gb = 16,
               .builtin = true},
  };
}

Status validate_template(const Template& t) {
  if (!valid_slug(t.name, kMaxTemplateNameLength)) {
    return fail(invalid("name", fmt::format("must be 1..{} of a-z, 0-9 and '-', starting with a "
                                            "letter",
                                            kMaxTemplateNameLength)));
  }
  if (t.description.size() > kMaxDescriptionLength) {
    return fail(invalid("description", fmt::format("at most {} bytes", kMaxDescriptionLength)));
  }
  if (!t.image.empty() && !valid_image(t.image)) {
    return fail(invalid("image", "must be an image reference such as pytorch/pytorch:2.5.1"));
  }
  if (!t.command.empty() && t.image.empty()) {
    return fail(invalid("command", "is the command in the image: give an image too"));
  }
  GPURENT_CHECK(validate_command("command", t.command));
  GPURENT_CHECK(validate_command("process_command", t.process_command));
  if (t.image.empty() && t.process_command.empty()) {
    return fail(invalid("image", "give an image, a process_command, or both"));
  }
  if (t.env.size() > kMaxEnv) return fail(invalid("env", fmt::format("at most {}", kMaxEnv)));
  for (const auto& [key, value] : t.env) {
    if (!valid_env_name(key)) {
      return fail(invalid("env", fmt::format("'{}' is not a variable name", key)));
    }
    if (set_by_platform(key)) {
      return fail(invalid("env", fmt::format("'{}' is set by the platform", key)));
    }
    if (value.size() > kMaxEnvValueLength || value.find('\0') != std::string::npos) {
      return fail(invalid("env", fmt::format("the value of '{}' is too long", key)));
    }
  }
  if (t.services.size() > kMaxServices) {
    return fail(invalid("services", fmt::format("at most {}", kMaxServices)));
  }
  std::set<std::string_view> seen;
  for (const auto& service : t.services) {
    if (!valid_service_name(service) || !seen.insert(service).second) {
      return fail(invalid("services", fmt::format("'{}' is not a unique service name "
                                                  "(a-z, 0-9 and '-', starting with a letter)",
                                                  service)));
    }
  }
  if (t.recommended_gpu_memory_gb < 0 || t.recommended_gpu_memory_gb > kMaxRecommendedGpuMemoryGb) {
    return fail(invalid("recommended_gpu_memory_gb",
                        fmt::format("must be 0..{}", kMaxRecommendedGpuMemoryGb)));
  }
  return {};
}

Status apply_template(const Template& t, RuntimeChoice choice, TemplateOverrides overrides,
                      InstanceSpec& spec) {
  const bool own_command = !overrides.command.empty();
  std::string image = std::move(overrides.image);
  if (image.empty()) image = t.image;
  std::vector<std::string> container_command = own_command ? overrides.command : t.command;
  std::vector<std::string> process_command = std::move(overrides.command);
  if (!own_command) process_command = t.process_command;
  const auto unavailable = [&](std::string_view runtime, std::string_view missing) {
    return Error::unprocessable(
        "template_runtime_unavailable",
        fmt::format("template '{}' has no {} for the {} runtime; give one, or choose runtime "
                    "'{}'",
                    t.name, missing, runtime, runtime == "container" ? "process" : "container"));
  };
  if (choice == RuntimeChoice::kAuto) {
    choice = image.empty() ? RuntimeChoice::kProcess : RuntimeChoice::kAuto;
  }
  switch (choice) {
    case RuntimeChoice::kProcess:
    case RuntimeChoice::kVm:
      if (process_command.empty()) return fail(unavailable(to_string(choice), "command"));
      spec.image.clear();
      spec.command = std::move(process_command);
      spec.process_command.clear();
      spec.vm = choice == RuntimeChoice::kVm;
      break;
    case RuntimeChoice::kContainer:
      if (image.empty()) return fail(unavailable("container", "image"));
      spec.image = std::move(image);
      spec.command = std::move(container_command);
      spec.process_command.clear();
      break;
    case RuntimeChoice::kAuto:
      spec.image = std::move(image);
      spec.command = std::move(container_command);
      spec.process_command = std::move(process_command);
      break;
  }
  spec.template_name = t.name;
  spec.services = std::move(overrides.services);
  if (spec.services.empty()) spec.services = t.services;
  std::map<std::string, std::string> env = t.env;
  for (auto& [key, value] : overrides.env) env[key] = std::move(value);
  spec.env = std::move(env);
  return {};
}

}  // namespace gpurent::model
