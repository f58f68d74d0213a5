#include "agent/runtime/docker_api.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <thread>
#include <utility>

#include "common/json.h"
#include "common/url.h"

namespace gpurent::agent {
namespace {

constexpr std::string_view kApiPrefix = "/v1.41";
// A large image over a slow link.
constexpr std::chrono::minutes kPullTimeout{30};
constexpr size_t kFrameHeaderBytes = 8;
// After an exec's output ends, the engine may take a moment to record its exit code.
constexpr int kExitCodePolls = 100;
constexpr std::chrono::milliseconds kExitCodePollInterval{20};

std::string container_path(std::string_view container, std::string_view action = {}) {
  std::string path = fmt::format("{}/containers/{}", kApiPrefix, percent_encode(container));
  if (!action.empty()) fmt::format_to(std::back_inserter(path), "/{}", action);
  return path;
}

// The engine's explanation of an error answer: its JSON "message", else the raw body.
std::string engine_message(const client::HttpResponse& response) {
  const Json parsed = Json::parse(response.body, nullptr, false);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    return parsed["message"].get<std::string>();
  }
  return response.body.empty() ? fmt::format("HTTP {}", response.status) : response.body;
}

Error status_error(const client::HttpResponse& response, std::string_view what,
                   std::string_view not_found_code) {
  const std::string message = fmt::format("{}: {}", what, engine_message(response));
  // Podman 4 answers 500 where Docker answers 409: a name in use, a running container removed.
  const bool podman_conflict =
      response.status == 500 && (message.find("already in use") != std::string::npos ||
                                 message.find("state improper") != std::string::npos);
  if (response.status == 404) return {ErrorKind::kNotFound, std::string(not_found_code), message};
  if (response.status == 409 || podman_conflict) {
    return {ErrorKind::kConflict, "engine_conflict", message};
  }
  return {ErrorKind::kInternal, "engine_error", message};
}

Status expect(const client::HttpResponse& response, std::string_view what,
              std::initializer_list<int> ok,
              std::string_view not_found_code = "no_such_container") {
  for (int status : ok) {
    if (response.status == status) return {};
  }
  return fail(status_error(response, what, not_found_code));
}

Result<Json> json_body(const client::HttpResponse& response, std::string_view what) {
  Json parsed = Json::parse(response.body, nullptr, false);
  if (parsed.is_discarded()) {
    return fail(Error{ErrorKind::kInternal, "engine_error",
                      fmt::format("{}: the engine answered with invalid JSON", what)});
  }
  return parsed;
}

std::string text_or_empty(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Host directories no container may see any part of (check_bind_source).
constexpr std::array<std::string_view, 8> kForbiddenHostDirs = {"/proc",
                                                                "/sys",
                                                                "/dev",
                                                                "/run",
                                                                "/var/run",
                                                                "/var/lib/docker",
                                                                "/var/lib/containers",
                                                                "/var/lib/containerd"};

// Whether `path` is `dir` or lies under it; both absolute and normal.
bool within(const std::filesystem::path& path, const std::filesystem::path& dir) {
  return std::mismatch(dir.begin(), dir.end(), path.begin(), path.end()).first == dir.end();
}

// Absolute, normal, links followed as far as the path exists.
std::filesystem::path resolved(const std::filesystem::path& path) {
  std::error_code ec;
  auto out = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  return ec ? std::filesystem::absolute(path).lexically_normal() : out;
}

std::map<std::string, std::string> labels_of(const Json& object) {
  std::map<std::string, std::string> labels;
  if (object.is_object()) {
    for (const auto& [key, value] : object.items()) {
      if (value.is_string()) labels.emplace(key, value.get<std::string>());
    }
  }
  return labels;
}

}  // namespace

std::string create_body(const ContainerSpec& spec) {
  Json env = Json::array();
  for (const auto& [key, value] : spec.env) env.push_back(key + "=" + value);
  Json host = Json::object();
  if (!spec.network_mode.empty()) host["NetworkMode"] = spec.network_mode;
  if (spec.nano_cpus > 0) host["NanoCpus"] = spec.nano_cpus;
  if (spec.memory_bytes > 0) host["Memory"] = spec.memory_bytes;
  if (spec.pids_limit > 0) host["PidsLimit"] = spec.pids_limit;
  if (spec.shm_bytes > 0) host["ShmSize"] = spec.shm_bytes;
  Json binds = Json::array();
  for (const auto& mount : spec.mounts) {
    binds.push_back(mount.host_path + ":" + mount.container_path + (mount.read_only ? ":ro" : ""));
  }
  if (!binds.empty()) host["Binds"] = std::move(binds);
  Json ulimits = Json::array();
  for (const auto& limit : spec.ulimits) {
    ulimits.push_back({{"Name", limit.name}, {"Soft", limit.soft}, {"Hard", limit.hard}});
  }
  if (!ulimits.empty()) host["Ulimits"] = std::move(ulimits);
  if (!spec.gpu_uuids.empty()) {
    if (spec.gpu_access == GpuAccess::kNvidiaDeviceRequest) {
      host["DeviceRequests"] = Json::array(
          {{{"Driver", "nvidia"}, {"DeviceIDs", spec.gpu_uuids}, {"Capabilities", {{"gpu"}}}}});
    } else {
      Json devices = Json::array();
      for (const auto& uuid : spec.gpu_uuids) {
        devices.push_back({{"PathOnHost", "nvidia.com/gpu=" + uuid},
                           {"PathInContainer", ""},
                           {"CgroupPermissions", "rwm"}});
      }
      host["Devices"] = std::move(devices);
    }
  }
  host["Privileged"] = false;
  host["SecurityOpt"] = Json::array({"no-new-privileges"});
  host["CapDrop"] = Json::array({"ALL"});
  host["CapAdd"] =
      Json(std::vector<std::string>(kContainerCapabilities.begin(), kContainerCapabilities.end()));
  Json body = {{"Image", spec.image},
               {"Env", std::move(env)},
               {"Labels", spec.labels},
               {"HostConfig", std::move(host)}};
  if (!spec.command.empty()) body["Cmd"] = spec.command;
  if (!spec.working_dir.empty()) body["WorkingDir"] = spec.working_dir;
  return body.dump();
}

Status check_bind_source(const std::filesystem::path& host_path,
                         const std::filesystem::path& engine_socket) {
  const std::filesystem::path path = resolved(host_path);
  const auto refuse = [&](std::string_view why) {
    return fail(Error::invalid("forbidden_mount", fmt::format("{} cannot be mounted into a "
                                                              "container: {}",
                                                              host_path.string(), why)));
  };
  for (std::string_view name : kForbiddenHostDirs) {
    // Resolved too: /var/run is usually a link to /run.
    const std::filesystem::path dir = resolved(std::filesystem::path(name));
    if (within(path, dir) || within(dir, path)) {
      return refuse(fmt::format("it is, lies under or holds {}", name));
    }
  }
  if (within(resolved(engine_socket), path)) {
    return refuse(fmt::format("it is or holds the engine's socket {}", engine_socket.string()));
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode)) return refuse("it is a socket");
  return {};
}

bool StreamDemultiplexer::feed(std::string_view piece, const OutputSink& output) {
  pending_.append(piece);
  std::string_view rest = pending_;
  bool wanted = true;
  while (wanted && rest.size() >= kFrameHeaderBytes) {
    const uint32_t size = (uint32_t{static_cast<unsigned char>(rest[4])} << 24) |
                          (uint32_t{static_cast<unsigned char>(rest[5])} << 16) |
                          (uint32_t{static_cast<unsigned char>(rest[6])} << 8) |
                          uint32_t{static_cast<unsigned char>(rest[7])};
    if (rest.size() - kFrameHeaderBytes < size) break;
    wanted = output(static_cast<unsigned char>(rest[0]), rest.substr(kFrameHeaderBytes, size));
    rest.remove_prefix(kFrameHeaderBytes + size);
  }
  pending_.erase(0, pending_.size() - rest.size());
  return wanted;
}

std::string_view StreamDemultiplexer::unfinished() const {
  return pending_.size() > kFrameHeaderBytes ? std::string_view(pending_).substr(kFrameHeaderBytes)
                                             : std::string_view();
}

std::string demultiplex_logs(std::string_view raw) {
  // A frame header starts with the stream (0 stdin, 1 stdout, 2 stderr) and three zero bytes.
  const bool framed = raw.size() >= kFrameHeaderBytes && static_cast<unsigned char>(raw[0]) <= 2 &&
                      raw[1] == 0 && raw[2] == 0 && raw[3] == 0;
  if (!framed) return std::string(raw);
  std::string out;
  StreamDemultiplexer frames;
  frames.feed(raw, [&](int, std::string_view bytes) {
    out.append(bytes);
    return true;
  });
  out.append(frames.unfinished());  // a frame cut short keeps what arrived
  return out;
}

DockerClient::DockerClient(std::string socket_path, client::HttpClient http,
                           std::chrono::milliseconds timeout)
    : socket_path_(std::move(socket_path)), http_(std::move(http)), timeout_(timeout) {}

Result<DockerClient> DockerClient::open(std::string socket_path,
                                        std::chrono::milliseconds timeout) {
  GPURENT_TRY(http, client::HttpClient::create("unix://" + socket_path));
  return DockerClient(std::move(socket_path), std::move(http), timeout);
}

Result<client::HttpResponse> DockerClient::call(std::string method, std::string target,
                                                std::string body,
                                                std::optional<std::chrono::milliseconds> timeout) {
  auto response = http_.send(
      {.method = std::move(method), .target = std::move(target), .body = std::move(body)},
      timeout.value_or(timeout_));
  if (!response) {
    return fail(Error{ErrorKind::kUnavailable, "engine_unavailable",
                      fmt::format("the container engine at {} cannot be reached: {}", socket_path_,
                                  response.error().message)});
  }
  return response;
}

Result<std::string> DockerClient::version() {
  GPURENT_TRY(response, call("GET", fmt::format("{}/version", kApiPrefix)));
  GPURENT_CHECK(expect(response, "version", {200}));
  GPURENT_TRY(parsed, json_body(response, "version"));
  return text_or_empty(parsed, "Version");
}

Status DockerClient::ping() {
  GPURENT_TRY(response, call("GET", "/_ping"));
  return expect(response, "ping", {200});
}

Result<std::string> DockerClient::create(const ContainerSpec& spec) {
  for (const auto& mount : spec.mounts) {
    GPURENT_CHECK(check_bind_source(mount.host_path, socket_path_));
  }
  GPURENT_TRY(response, call("POST",
                             fmt::format("{}/containers/create?name={}", kApiPrefix,
                                         percent_encode(spec.name)),
                             create_body(spec)));
  const std::string what = fmt::format("create container {} from {}", spec.name, spec.image);
  GPURENT_CHECK(expect(response, what, {201}, "no_such_image"));
  GPURENT_TRY(parsed, json_body(response, what));
  std::string id = text_or_empty(parsed, "Id");
  if (id.empty()) {
    return fail(Error{ErrorKind::kInternal, "engine_error", what + ": the answer has no Id"});
  }
  return id;
}

Status DockerClient::start(std::string_view container) {
  GPURENT_TRY(response, call("POST", container_path(container, "start")));
  return expect(response, fmt::format("start container {}", container), {204, 304});
}

Status DockerClient::stop(std::string_view container, std::chrono::seconds grace) {
  // The engine waits out the grace period before answering: allow for it.
  GPURENT_TRY(response,
              call("POST", fmt::format("{}?t={}", container_path(container, "stop"), grace.count()),
                   {}, timeout_ + grace));
  return expect(response, fmt::format("stop container {}", container), {204, 304});
}

Status DockerClient::kill(std::string_view container, std::string_view signal) {
  GPURENT_TRY(response, call("POST", fmt::format("{}?signal={}", container_path(container, "kill"),
                                                 percent_encode(signal))));
  return expect(response, fmt::format("kill container {}", container), {204});
}

Result<int> DockerClient::wait(std::string_view container, std::chrono::milliseconds timeout) {
  const std::string what = fmt::format("wait for container {}", container);
  auto response = http_.send(
      {.method = "POST",
       .target = fmt::format("{}?condition=not-running", container_path(container, "wait"))},
      timeout);
  if (!response) {
    if (response.error().code == "timeout") {
      return fail(Error{ErrorKind::kUnavailable, "timeout",
                        fmt::format("{}: still running after {} ms", what, timeout.count())});
    }
    return fail(Error{ErrorKind::kUnavailable, "engine_unavailable",
                      fmt::format("{}: {}", what, response.error().message)});
  }
  GPURENT_CHECK(expect(*response, what, {200}));
  GPURENT_TRY(parsed, json_body(*response, what));
  const auto code = parsed.find("StatusCode");
  if (code == parsed.end() || !code->is_number_integer()) {
    return fail(
        Error{ErrorKind::kInternal, "engine_error", what + ": the answer has no StatusCode"});
  }
  return code->get<int>();
}

Status DockerClient::remove(std::string_view container, bool force) {
  GPURENT_TRY(response, call("DELETE", fmt::format("{}?force={}", container_path(container),
                                                   force ? "true" : "false")));
  return expect(response, fmt::format("remove container {}", container), {204});
}

Result<ContainerInfo> DockerClient::inspect(std::string_view container) {
  GPURENT_TRY(response, call("GET", container_path(container, "json")));
  const std::string what = fmt::format("inspect container {}", container);
  GPURENT_CHECK(expect(response, what, {200}));
  GPURENT_TRY(parsed, json_body(response, what));
  ContainerInfo info;
  info.id = text_or_empty(parsed, "Id");
  info.name = text_or_empty(parsed, "Name");
  if (info.name.starts_with('/')) info.name.erase(0, 1);
  const Json state = parsed.value("State", Json::object());
  info.state = text_or_empty(state, "Status");
  info.running = state.value("Running", false);
  info.exit_code = state.value("ExitCode", 0);
  info.started_at = text_or_empty(state, "StartedAt");
  info.finished_at = text_or_empty(state, "FinishedAt");
  const Json config = parsed.value("Config", Json::object());
  info.image = text_or_empty(config, "Image");
  info.labels = labels_of(config.value("Labels", Json::object()));
  return info;
}

Result<std::vector<ContainerInfo>> DockerClient::list(std::string_view label) {
  const Json filters = {{"label", {std::string(label)}}};
  GPURENT_TRY(response, call("GET", fmt::format("{}/containers/json?all=true&filters={}",
                                                kApiPrefix, percent_encode(filters.dump()))));
  GPURENT_CHECK(expect(response, "list containers", {200}));
  GPURENT_TRY(parsed, json_body(response, "list containers"));
  std::vector<ContainerInfo> out;
  if (!parsed.is_array()) return out;
  for (const auto& item : parsed) {
    ContainerInfo info;
    info.id = text_or_empty(item, "Id");
    if (const auto names = item.value("Names", Json::array());
        !names.empty() && names[0].is_string()) {
      info.name = names[0].get<std::string>();
      if (info.name.starts_with('/')) info.name.erase(0, 1);
    }
    info.image = text_or_empty(item, "Image");
    info.state = text_or_empty(item, "State");
    info.running = info.state == "running";
    info.labels = labels_of(item.value("Labels", Json::object()));
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::string> DockerClient::logs(std::string_view container, const LogQuery& query) {
  const std::string tail = query.tail < 0 ? "all" : std::to_string(query.tail);
  GPURENT_TRY(response, call("GET", fmt::format("{}?stdout=true&stderr=true&tail={}&since={}&"
                                                "timestamps={}",
                                                container_path(container, "logs"), tail,
                                                query.since, query.timestamps)));
  GPURENT_CHECK(expect(response, fmt::format("logs of container {}", container), {200}));
  return demultiplex_logs(response.body);
}

Result<ContainerStats> DockerClient::stats(std::string_view container) {
  GPURENT_TRY(response,
              call("GET", fmt::format("{}?stream=false", container_path(container, "stats"))));
  const std::string what = fmt::format("stats of container {}", container);
  GPURENT_CHECK(expect(response, what, {200}));
  GPURENT_TRY(parsed, json_body(response, what));
  ContainerStats stats;
  const Json memory = parsed.value("memory_stats", Json::object());
  stats.memory_bytes = memory.value("usage", int64_t{0});
  const Json cpu = parsed.value("cpu_stats", Json::object()).value("cpu_usage", Json::object());
  stats.cpu_total_ns = cpu.value("total_usage", uint64_t{0});
  stats.pids = parsed.value("pids_stats", Json::object()).value("current", int64_t{0});
  return stats;
}

Result<bool> DockerClient::image_exists(std::string_view image) {
  GPURENT_TRY(response,
              call("GET", fmt::format("{}/images/{}/json", kApiPrefix, percent_encode(image))));
  if (response.status == 404) return false;
  GPURENT_CHECK(expect(response, fmt::format("inspect image {}", image), {200}));
  return true;
}

Status DockerClient::pull(std::string_view image) {
  // The engine streams progress as JSON lines and reports a failure in one of them, sometimes
  // after a 200.
  GPURENT_TRY(
      response,
      call("POST", fmt::format("{}/images/create?fromImage={}", kApiPrefix, percent_encode(image)),
           {}, kPullTimeout));
  std::string failure;
  if (response.status != 200) {
    failure = engine_message(response);
  } else {
    size_t start = 0;
    while (start < response.body.size() && failure.empty()) {
      const size_t end = std::min(response.body.find('\n', start), response.body.size());
      const Json line = Json::parse(response.body.substr(start, end - start), nullptr, false);
      if (line.is_object() && line.contains("error")) {
        failure = line["error"].is_string() ? line["error"].get<std::string>() : line.dump();
      }
      start = end + 1;
    }
  }
  if (failure.empty()) return {};
  return fail(Error{ErrorKind::kUnavailable, "image_pull_failed",
                    fmt::format("cannot pull image {}: {}", image, failure)});
}

Result<std::string> DockerClient::exec_create(std::string_view container, const ExecSpec& spec) {
  Json env = Json::array();
  for (const auto& [key, value] : spec.env) env.push_back(key + "=" + value);
  Json body = {{"Cmd", spec.command},  {"Env", std::move(env)}, {"AttachStdout", true},
               {"AttachStderr", true}, {"Tty", false},          {"Privileged", false}};
  if (!spec.working_dir.empty()) body["WorkingDir"] = spec.working_dir;
  GPURENT_TRY(response, call("POST", container_path(container, "exec"), body.dump()));
  const std::string what = fmt::format("exec in container {}", container);
  GPURENT_CHECK(expect(response, what, {201}));
  GPURENT_TRY(parsed, json_body(response, what));
  std::string id = text_or_empty(parsed, "Id");
  if (id.empty()) {
    return fail(Error{ErrorKind::kInternal, "engine_error", what + ": the answer has no Id"});
  }
  return id;
}

Result<int> DockerClient::exec_start(std::string_view exec, const OutputSink& output,
                                     std::chrono::milliseconds idle_timeout) {
  const std::string path = fmt::format("{}/exec/{}", kApiPrefix, percent_encode(exec));
  const std::string what = fmt::format("exec {}", exec);
  bool abandoned = false;
  StreamDemultiplexer frames;
  // The engine answers 200 and streams the multiplexed output until the command's output ends.
  auto streamed = http_.stream(
      {.method = "POST", .target = path + "/start", .body = R"({"Detach":false,"Tty":false})"},
      [&](std::string_view piece) {
        abandoned = !frames.feed(piece, output);
        return !abandoned;
      },
      idle_timeout);
  if (!streamed) {
    return fail(Error{ErrorKind::kUnavailable, "engine_unavailable",
                      fmt::format("{}: {}", what, streamed.error().message)});
  }
  if (streamed->status >= 300) return fail(status_error(*streamed, what, "no_such_exec"));
  if (abandoned) {
    return fail(Error{ErrorKind::kUnavailable, "output_abandoned",
                      what + ": its output was no longer wanted; it may still run"});
  }
  for (int poll = 0; poll < kExitCodePolls; ++poll) {
    GPURENT_TRY(info, exec_inspect(exec));
    if (info.exit_code) return *info.exit_code;
    std::this_thread::sleep_for(kExitCodePollInterval);
  }
  return fail(Error{ErrorKind::kInternal, "engine_error",
                    what + ": its output ended but the engine reports no exit code"});
}

Result<ExecInfo> DockerClient::exec_inspect(std::string_view exec) {
  const std::string what = fmt::format("exec {}", exec);
  GPURENT_TRY(response,
              call("GET", fmt::format("{}/exec/{}/json", kApiPrefix, percent_encode(exec))));
  GPURENT_CHECK(expect(response, what, {200}, "no_such_exec"));
  GPURENT_TRY(parsed, json_body(response, what));
  ExecInfo info;
  info.running = parsed.value("Running", false);
  const auto pid = parsed.find("Pid");
  if (info.running && pid != parsed.end() && pid->is_number_integer()) info.pid = pid->get<int>();
  const auto code = parsed.find("ExitCode");
  if (!info.running && code != parsed.end() && code->is_number_integer()) {
    info.exit_code = code->get<int>();
  }
  return info;
}

}  // namespace gpurent::agent
