// For tests: an in-memory stand-in for the server's /v1/agent routes, with the same rules as the
// real one where the agent depends on them (join token and credential checks, a watch of the
// desired state that sends each new generation, log uploads trimmed to what is new and answered
// with the server's size).
// Thread-safe: the agent's threads each hold a link to one FakeServer, which the links keep alive
// (a detached poller may outlive the test's agent). Create it with std::make_shared.
#pragma once

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/server_link.h"

namespace gpurent::agent::testing {

class FakeServer : public std::enable_shared_from_this<FakeServer> {
 public:
  static constexpr std::string_view kJoinToken = "gjt_test";
  static constexpr std::string_view kCredential = "gnc_test";
  static constexpr std::string_view kNodeId = "n-test";

  // Replaces the desired set and bumps the generation, as the controller does.
  // An upload agents may fetch (a workload's workdir).
  void set_upload(std::string id, std::string bytes) {
    std::lock_guard lock(mutex_);
    uploads_[std::move(id)] = std::move(bytes);
  }
  void set_desired(std::vector<model::WorkloadSpec> workloads) {
    {
      std::lock_guard lock(mutex_);
      desired_.node_id = std::string(kNodeId);
      desired_.workloads = std::move(workloads);
      ++desired_.generation;
    }
    changed_.notify_all();
  }
  int64_t generation() const {
    std::lock_guard lock(mutex_);
    return desired_.generation;
  }
  // An unreachable server also breaks the watches open.
  void set_reachable(bool reachable) {
    {
      std::lock_guard lock(mutex_);
      reachable_ = reachable;
    }
    changed_.notify_all();
  }
  // How long a desired-state watch stays silent before its keep-alive (short by default, so that
  // agents in tests stop at once).
  void set_keepalive(std::chrono::milliseconds keepalive) {
    std::lock_guard lock(mutex_);
    keepalive_ = keepalive;
  }
  // Watches open now, and opened since the start.
  int watching() const {
    std::lock_guard lock(mutex_);
    return watching_;
  }
  int watches() const {
    std::lock_guard lock(mutex_);
    return watches_;
  }
  void set_refuse_logs(bool refuse) {
    std::lock_guard lock(mutex_);
    refuse_logs_ = refuse;
  }

  int registrations() const {
    std::lock_guard lock(mutex_);
    return registrations_;
  }
  std::optional<model::NodeRegistration> registration() const {
    std::lock_guard lock(mutex_);
    return registration_;
  }
  std::vector<model::NodeReport> reports() const {
    std::lock_guard lock(mutex_);
    return reports_;
  }
  // The newest reported status of a run.
  std::optional<model::WorkloadStatus> status(std::string_view instance_id, int64_t run) const {
    std::lock_guard lock(mutex_);
    for (auto report = reports_.rbegin(); report != reports_.rend(); ++report) {
      for (const auto& status : report->workloads) {
        if (status.instance_id == instance_id && status.run == run) return status;
      }
    }
    return std::nullopt;
  }
  std::string log(std::string_view instance_id, int64_t run) const {
    std::lock_guard lock(mutex_);
    const auto it = logs_.find({std::string(instance_id), run});
    return it == logs_.end() ? std::string() : it->second;
  }
  // The run's log as the server held it when the run was first reported exited.
  std::optional<std::string> log_at_exit(std::string_view instance_id, int64_t run) const {
    std::lock_guard lock(mutex_);
    const auto it = log_at_exit_.find({std::string(instance_id), run});
    return it == log_at_exit_.end() ? std::nullopt : std::optional(it->second);
  }
  std::vector<size_t> upload_sizes() const {
    std::lock_guard lock(mutex_);
    return upload_sizes_;
  }

  ServerLinkFactory factory() {
    return [self = shared_from_this()]() -> Result<std::unique_ptr<ServerLink>> {
      return std::unique_ptr<ServerLink>(std::make_unique<Link>(self));
    };
  }

 private:
  using Key = std::pair<std::string, int64_t>;

  class Link final : public ServerLink {
   public:
    explicit Link(std::shared_ptr<FakeServer> server)
        : server_(*server), owner_(std::move(server)) {}

    Result<model::RegistrationResult> register_node(
        std::string_view join_token, const model::NodeRegistration& registration) override {
      std::lock_guard lock(server_.mutex_);
      if (auto down = server_.down()) return fail(*down);
      if (join_token != kJoinToken) {
        return fail(Error::unprocessable("invalid_join_token", "unknown join token"));
      }
      ++server_.registrations_;
      server_.registration_ = registration;
      return model::RegistrationResult{std::string(kNodeId), std::string(kCredential)};
    }

    Status watch_desired(
        std::string_view credential, int64_t after,
        const std::function<bool(std::optional<model::DesiredState>)>& on_desired) override {
      std::unique_lock lock(server_.mutex_);
      if (auto refused = server_.check(credential)) return fail(*refused);
      ++server_.watches_;
      ++server_.watching_;
      int64_t sent = after;
      for (;;) {
        server_.changed_.wait_for(lock, server_.keepalive_, [&] {
          return server_.desired_.generation > sent || !server_.reachable_;
        });
        if (auto down = server_.down()) {
          --server_.watching_;
          return fail(*down);
        }
        std::optional<model::DesiredState> next;
        if (server_.desired_.generation > sent) {
          next = server_.desired_;
          sent = next->generation;
        }
        lock.unlock();
        const bool more = on_desired(std::move(next));
        lock.lock();
        if (!more) {
          --server_.watching_;
          return {};
        }
      }
    }

    Result<int64_t> upload_log(std::string_view credential, std::string_view instance_id,
                               int64_t run, int64_t offset, std::string_view bytes) override {
      std::lock_guard lock(server_.mutex_);
      if (auto refused = server_.check(credential)) return fail(*refused);
      if (server_.refuse_logs_) return fail(Error::not_found("instance", instance_id));
      server_.upload_sizes_.push_back(bytes.size());
      std::string& log = server_.logs_[{std::string(instance_id), run}];
      const auto size = static_cast<int64_t>(log.size());
      if (offset > size) return size;  // what the HTTP link makes of a 409
      if (offset + static_cast<int64_t>(bytes.size()) > size) {
        log.append(bytes.substr(static_cast<size_t>(size - offset)));
      }
      return static_cast<int64_t>(log.size());
    }

    Status fetch_upload(std::string_view credential, std::string_view upload_id,
                        const std::filesystem::path& into) override {
      std::lock_guard lock(server_.mutex_);
      if (auto refused = server_.check(credential)) return fail(*refused);
      const auto it = server_.uploads_.find(std::string(upload_id));
      if (it == server_.uploads_.end()) return fail(Error::not_found("upload", upload_id));
      std::ofstream(into, std::ios::binary | std::ios::trunc) << it->second;
      return {};
    }

    Status report(std::string_view credential, const model::NodeReport& report) override {
      std::lock_guard lock(server_.mutex_);
      if (auto refused = server_.check(credential)) return fail(*refused);
      server_.reports_.push_back(report);
      for (const auto& status : report.workloads) {
        if (status.phase != model::WorkloadPhase::kExited) continue;
        const Key key{status.instance_id, status.run};
        server_.log_at_exit_.try_emplace(key, server_.logs_[key]);
      }
      return {};
    }

   private:
    FakeServer& server_;
    std::shared_ptr<FakeServer> owner_;
  };

  std::optional<Error> down() const {
    if (reachable_) return std::nullopt;
    return Error{ErrorKind::kUnavailable, "connection_failed", "fake server is down"};
  }
  std::optional<Error> check(std::string_view credential) const {
    if (auto error = down()) return error;
    if (credential != kCredential) {
      return Error{ErrorKind::kUnauthenticated, "unauthenticated", "unknown credential"};
    }
    return std::nullopt;
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  model::DesiredState desired_{std::string(kNodeId), 1, {}};
  bool reachable_ = true;
  bool refuse_logs_ = false;
  std::chrono::milliseconds keepalive_{20};
  int watching_ = 0;
  int watches_ = 0;
  int registrations_ = 0;
  std::optional<model::NodeRegistration> registration_;
  std::vector<model::NodeReport> reports_;
  std::map<Key, std::string> logs_;
  std::map<std::string, std::string> uploads_;  // by id
  std::map<Key, std::string> log_at_exit_;
  std::vector<size_t> upload_sizes_;
};

}  // namespace gpurent::agent::testing
