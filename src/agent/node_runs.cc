#include "agent/node_runs.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "agent/files.h"
#include "common/json.h"
#include "common/random.h"
#include "model/service_path.h"

namespace gpurent::agent {
namespace {

constexpr int kPortAttempts = 64;
constexpr std::string_view kPortPrefix = "GPURENT_PORT_";

// "<instance>.<run>.json" back to its key.
std::optional<WorkloadKey> parse_record_name(std::string_view name) {
  if (!name.ends_with(".json")) return std::nullopt;
  name.remove_suffix(5);
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  WorkloadKey key{std::string(name.substr(0, dot)), 0};
  const std::string_view run = name.substr(dot + 1);
  const auto [ptr, ec] = std::from_chars(run.data(), run.data() + run.size(), key.run);
  if (ec != std::errc() || ptr != run.data() + run.size() || !valid_instance_id(key.instance_id)) {
    return std::nullopt;
  }
  return key;
}

Json to_json(const RunServices& services) {
  Json ports = Json::object();
  for (const auto& [name, port] : services.ports) ports[name] = port;
  return {{"ports", std::move(ports)}, {"token", services.token}};
}

Result<RunServices> parse_record(const std::string& text) {
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  RunServices services;
  if (!json.is_object() || !json.contains("ports") || !json["ports"].is_object() ||
      !json.contains("token") || !json["token"].is_string()) {
    return fail(Error::internal("not a service record"));
  }
  for (const auto& [name, port] : json["ports"].items()) {
    if (!port.is_number_unsigned() || port.get<uint64_t>() == 0 || port.get<uint64_t>() > 65535) {
      return fail(Error::internal(fmt::format("bad port for '{}'", name)));
    }
    services.ports[name] = static_cast<uint16_t>(port.get<uint64_t>());
  }
  services.token = json["token"].get<std::string>();
  return services;
}

}  // namespace

std::string service_env_suffix(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    out.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

std::map<std::string, std::string> service_env(std::string_view instance_id,
                                               const RunServices& services) {
  std::map<std::string, std::string> env;
  for (const auto& [name, port] : services.ports) {
    const std::string suffix = service_env_suffix(name);
    env[std::string(kPortPrefix) + suffix] = std::to_string(port);
    env["GPURENT_BASE_URL_" + suffix] = model::service_base_url(instance_id, name);
  }
  env["GPURENT_SERVICE_TOKEN"] = services.token;
  return env;
}

std::vector<uint16_t> service_ports(const std::map<std::string, std::string>& env) {
  std::vector<uint16_t> ports;
  for (auto it = env.lower_bound(std::string(kPortPrefix));
       it != env.end() && it->first.starts_with(kPortPrefix); ++it) {
    uint16_t port = 0;
    const auto& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec == std::errc() && end == text.data() + text.size() && port > 0) ports.push_back(port);
  }
  std::sort(ports.begin(), ports.end());
  return ports;
}

Result<uint16_t> free_loopback_port(const std::set<uint16_t>& taken) {
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return fail(Error{ErrorKind::kUnavailable, "no_free_port",
                        fmt::format("socket: {}", std::strerror(errno))});
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;  // the kernel picks a free one
    socklen_t length = sizeof address;
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                       ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    ::close(fd);
    if (!bound) continue;
    const uint16_t port = ntohs(address.sin_port);
    if (!taken.contains(port)) return port;
  }
  return fail(Error{ErrorKind::kUnavailable, "no_free_port",
                    fmt::format("no free loopback port after {} attempts", kPortAttempts)});
}

Result<std::unique_ptr<NodeRuns>> NodeRuns::open(const std::filesystem::path& data_dir) {
  const auto dir = data_dir / "services";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return fail(Error::internal(fmt::format("cannot create {}: {}", dir.string(), ec.message())));
  }
  std::unique_ptr<NodeRuns> runs(new NodeRuns(dir));
  for (const auto& item : std::filesystem::directory_iterator(dir, ec)) {
    const auto key = parse_record_name(item.path().filename().string());
    if (!key) continue;
    auto text = read_file(item.path());
    auto services = text ? parse_record(*text) : Result<RunServices>(fail(text.error()));
    if (!services) {
      // Its run, if it still runs, is unreachable through the proxy; nothing else depends on it.
      spdlog::error("service_record_unreadable path={} error=\"{}\"", item.path().string(),
                    services.error().message);
      continue;
    }
    runs->services_.emplace(*key, std::move(*services));
  }
  if (ec)
    return fail(Error::internal(fmt::format("cannot list {}: {}", dir.string(), ec.message())));
  return runs;
}

std::filesystem::path NodeRuns::record_path(const WorkloadKey& key) const {
  return dir_ / fmt::format("{}.{}.json", key.instance_id, key.run);
}

Result<RunServices> NodeRuns::bind_services(const WorkloadKey& key,
                                            const std::vector<std::string>& names) {
  std::lock_guard lock(mutex_);
  if (const auto it = services_.find(key); it != services_.end()) return it->second;
  std::set<uint16_t> taken;
  for (const auto& [other, services] : services_) {
    for (const auto& [name, port] : services.ports) taken.insert(port);
  }
  RunServices services;
  for (const auto& name : names) {
    GPURENT_TRY(port, free_loopback_port(taken));
    taken.insert(port);
    services.ports[name] = port;
  }
  services.token = new_secret("");
  GPURENT_CHECK(write_file_atomic(record_path(key), to_json(services).dump(), 0600));
  services_.emplace(key, services);
  return services;
}

void NodeRuns::release_locked(const WorkloadKey& key) {
  if (services_.erase(key) == 0) return;
  std::error_code ec;
  std::filesystem::remove(record_path(key), ec);
  if (ec) {
    spdlog::warn("service_record_not_removed path={} error=\"{}\"", record_path(key).string(),
                 ec.message());
  }
}

void NodeRuns::release(const WorkloadKey& key) {
  std::lock_guard lock(mutex_);
  release_locked(key);
}

void NodeRuns::publish(const std::vector<PublishedRun>& runs) {
  std::lock_guard lock(mutex_);
  published_.clear();
  for (const auto& run : runs) published_.emplace(run.key, run);
  std::vector<WorkloadKey> orphans;
  for (const auto& [key, services] : services_) {
    if (!published_.contains(key)) orphans.push_back(key);
  }
  for (const auto& key : orphans) release_locked(key);
}

std::optional<RunView> NodeRuns::find(const WorkloadKey& key) const {
  std::lock_guard lock(mutex_);
  const auto it = published_.find(key);
  if (it == published_.end()) return std::nullopt;
  RunView view{it->second.running, it->second.place, std::nullopt};
  if (const auto services = services_.find(key); services != services_.end()) {
    view.services = services->second;
  }
  return view;
}

}  // namespace gpurent::agent
