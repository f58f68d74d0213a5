#include "agent/node_api.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <charconv>
#include <chrono>
#include <thread>

#include "agent/container_exec.h"
#include "agent/exec.h"
#include "agent/file_copy.h"
#include "agent/runtime/container_runtime.h"
#include "agent/runtime/workdir.h"
#include "agent/vm/guest_agent.h"
#include "agent/vm/vm_runtime.h"
#include "common/random.h"
#include "common/secret_box.h"
#include "model/exec_protocol.h"
#include "model/file_copy.h"
#include "model/service_path.h"
#include "net/await_on.h"
#include "net/router.h"

namespace gpurent::agent {
namespace asio = boost::asio;

namespace {

using RouteHandler =
    std::function<asio::awaitable<net::Response>(net::Request&, const net::PathParams&)>;

Result<int64_t> parse_run(std::string_view text) {
  int64_t run = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), run);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || run < 1) {
    return fail(Error::invalid("invalid_run", fmt::format("'{}' is not a run number", text)));
  }
  return run;
}

// The run a request's query names (?instance=&run=).
Result<WorkloadKey> run_query(const std::map<std::string, std::string>& query) {
  const auto instance = query.find("instance");
  const auto run_text = query.find("run");
  if (instance == query.end() || run_text == query.end()) {
    return fail(
        Error::invalid("invalid_query", "query parameters 'instance' and 'run' are required"));
  }
  GPURENT_TRY(run, parse_run(run_text->second));
  if (!valid_instance_id(instance->second)) return fail(Error::not_found("run", instance->second));
  return WorkloadKey{instance->second, run};
}

// The run a request names, if the node runs it; exec and services need it running.
Result<RunView> running_run(const NodeRuns& runs, const WorkloadKey& key) {
  const auto view = runs.find(key);
  if (!view) {
    return fail(Error::not_found("run", fmt::format("{}.{}", key.instance_id, key.run)));
  }
  if (!view->running) {
    return fail(Error::conflict("instance_not_running", fmt::format("run {} of {} is not running",
                                                                    key.run, key.instance_id)));
  }
  return *view;
}

Result<net::ForwardTo> service_target(const net::RequestHead& head, const NodeRuns& runs) {
  GPURENT_TRY(path, model::parse_service_path(head.path));
  GPURENT_TRY(run, parse_run(head.header(kRunHeader)));
  GPURENT_TRY(view, running_run(runs, {path.instance_id, run}));
  const auto port = view.services ? view.services->ports.find(path.service)
                                  : std::map<std::string, uint16_t>::const_iterator();
  if (!view.services || port == view.services->ports.end()) {
    return fail(
        Error{ErrorKind::kNotFound, "service_not_found",
              fmt::format("instance {} serves no service '{}'", path.instance_id, path.service)});
  }
  net::ForwardTo to;
  to.host = "127.0.0.1";
  to.port = port->second;
  to.target = head.target;
  const std::string self = host_port("127.0.0.1", port->second);
  to.remove_headers = {std::string(kRunHeader)};
  to.set_headers = {{"Authorization", "token " + view.services->token}, {"Host", self}};
  if (!head.header("Origin").empty()) to.set_headers.emplace_back("Origin", "http://" + self);
  return to;
}

// A VM run's SSH server, as a byte tunnel (the request is an upgrade).
Result<net::ForwardTo> ssh_target(const net::RequestHead& head, const NodeRuns& runs,
                                  const std::filesystem::path& data_dir) {
  GPURENT_TRY(key, run_query(head.query));
  GPURENT_TRY(view, running_run(runs, key));
  const auto port = view.place == RunPlace::kVm ? vm_ssh_port(data_dir, key) : std::nullopt;
  if (!port) {
    return fail(Error::unprocessable(
        "ssh_unavailable",
        fmt::format("instance {} has no SSH server to reach: only a VM booted from a cloud image "
                    "runs one (docs/vm-runtime.md); use gpurent exec",
                    key.instance_id)));
  }
  return net::ForwardTo{.host = "127.0.0.1", .port = *port, .target = head.target, .raw = true};
}

}  // namespace

bool presents_secret(std::string_view authorization, std::string_view secret) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (secret.empty() || !authorization.starts_with(kPrefix)) return false;
  return secrets_equal(authorization.substr(kPrefix.size()), secret);
}

net::ForwardDecision service_forward(const net::RequestHead& head, const NodeRuns& runs) {
  auto to = service_target(head, runs);
  if (!to) return net::problem_response(to.error());
  return std::move(*to);
}

std::string host_port(std::string_view host, uint16_t port) {
  return host.find(':') == std::string_view::npos ? fmt::format("{}:{}", host, port)
                                                  : fmt::format("[{}]:{}", host, port);
}

struct NodeApi::Impl {
  Impl(NodeRuns& runs, NodeApiOptions options, const std::string& secret)
      : runs(runs), options(std::move(options)), secret(secret) {
    router.add("POST", std::string(kNodeExecPath),
               [this](net::Request& request, const net::PathParams&) { return exec(request); });
    router.add("POST", std::string(kNodeFilesPath),
               [this](net::Request& request, const net::PathParams&) {
                 return copy_into_instance(request);
               });
    router.add("POST", std::string(kNodeVolumeFilesPath),
               [this](net::Request& request, const net::PathParams&) {
                 return copy_into_volume(request);
               });
  }

  ~Impl() {
    copy_workers.join();
    exec_workers.join();
  }

  Error unauthenticated() const {
    return {ErrorKind::kUnauthenticated, "unauthenticated",
            "send 'Authorization: Bearer <node API secret>'"};
  }

  asio::awaitable<net::Response> handle(net::Request request) {
    if (!presents_secret(request.authorization, secret)) {
      co_return net::problem_response(unauthenticated());
    }
    auto match = router.match(request.method, request.path);
    if (!match) co_return net::problem_response(match.error());
    co_return co_await (*match->handler)(request, match->params);
  }

  asio::awaitable<net::ForwardDecision> forward(net::RequestHead head) {
    if (!presents_secret(head.header("Authorization"), secret)) {
      co_return net::problem_response(unauthenticated());
    }
    if (head.path == kNodeSshPath) {
      auto to = ssh_target(head, runs, options.data_dir);
      if (!to) co_return net::problem_response(to.error());
      co_return std::move(*to);
    }
    co_return service_forward(head, runs);
  }

  asio::awaitable<net::Response> exec(const net::Request& request) {
    auto key = run_query(request.query);
    if (!key) co_return net::problem_response(key.error());
    auto parsed = model::parse_exec_request(request.body);
    if (!parsed) co_return net::problem_response(parsed.error());
    auto view = running_run(runs, *key);
    if (!view) co_return net::problem_response(view.error());
    if (view->place == RunPlace::kVm) co_return co_await vm_exec(*key, std::move(*parsed));
    auto response =
        view->place == RunPlace::kContainer
            ? start_container_exec(io, options.container_socket, container_name(*key), *parsed)
            : start_exec(io, workload_dir(*key), *parsed);
    if (!response) co_return net::problem_response(response.error());
    co_return std::move(*response);
  }

  // Through the guest agent, on an exec worker: the frames come together once the command ends.
  asio::awaitable<net::Response> vm_exec(WorkloadKey key, model::ExecRequest request) {
    if (vm_execs_in_flight >= kMaxVmExecsInFlight) {
      co_return net::problem_response(Error{
          ErrorKind::kUnavailable, "node_busy",
          fmt::format("the node runs {} execs in VMs; try again in a moment", vm_execs_in_flight)});
    }
    const auto timeout =
        std::min<std::chrono::seconds>(std::chrono::seconds(request.timeout_s), kMaxVmExecTime);
    auto work = [socket = vm_guest_agent_socket(options.data_dir, key),
                 argv = vm_exec_argv(request.command),
                 timeout] { return guest_exec(socket, argv, {}, timeout); };
    vm_execs_in_flight += 1;
    auto ran = co_await net::await_on(exec_workers, std::move(work));
    vm_execs_in_flight -= 1;
    if (!ran) co_return net::problem_response(ran.error());
    std::string frames;
    if (!ran->out.empty()) frames += model::exec_output_frame(model::ExecStream::kStdout, ran->out);
    if (!ran->err.empty()) frames += model::exec_output_frame(model::ExecStream::kStderr, ran->err);
    frames += model::exec_exit_frame(
        ran->exit_code,
        ran->timed_out ? fmt::format("timed out after {} s (killed in the VM)", timeout.count())
                       : std::string());
    co_return net::Response{200, std::string(model::kExecContentType), std::move(frames), {}, {}};
  }

  std::filesystem::path workload_dir(const WorkloadKey& key) const {
    return options.data_dir / "workloads" / fmt::format("{}.{}", key.instance_id, key.run);
  }

  // The query's upload, path and the workload to copy into are checked by the caller; `into`
  // copies once the upload is on the node. Runs on a copy worker.
  using CopyWork = std::function<Result<model::CopyResult>(const std::filesystem::path& archive)>;
  asio::awaitable<net::Response> copy(const std::string& upload_id, CopyWork into) {
    if (!options.fetch_upload) {
      co_return net::problem_response(
          Error{ErrorKind::kUnavailable, "copy_unavailable", "this agent cannot fetch uploads"});
    }
    if (copies_in_flight >= kMaxCopiesInFlight) {
      co_return net::problem_response(Error{
          ErrorKind::kUnavailable, "node_busy",
          fmt::format("the node is unpacking {} copies; try again in a moment", copies_in_flight)});
    }
    copies_in_flight += 1;
    auto work = [this, upload_id, into = std::move(into)]() -> Result<model::CopyResult> {
      GPURENT_CHECK(options.fetch_upload(upload_id));
      return into(workdir_archive(options.data_dir, upload_id));
    };
    auto copied = co_await net::await_on(copy_workers, std::move(work));
    copies_in_flight -= 1;
    if (!copied) co_return net::problem_response(copied.error());
    co_return net::Response{200, "application/json", Json(*copied).dump(), {}, {}};
  }

  static Result<std::string> upload_parameter(const net::Request& request) {
    const auto upload = request.query.find("upload");
    if (upload == request.query.end() || !model::valid_upload_id(upload->second)) {
      return fail(Error::not_found("upload", upload == request.query.end() ? "" : upload->second));
    }
    return upload->second;
  }

  static std::string path_parameter(const net::Request& request) {
    const auto path = request.query.find("path");
    return path == request.query.end() ? std::string() : path->second;
  }

  asio::awaitable<net::Response> copy_into_instance(const net::Request& request) {
    auto key = run_query(request.query);
    if (!key) co_return net::problem_response(key.error());
    auto upload = upload_parameter(request);
    if (!upload) co_return net::problem_response(upload.error());
    auto view = running_run(runs, *key);
    if (!view) co_return net::problem_response(view.error());
    if (view->place == RunPlace::kContainer) {
      co_return net::problem_response(Error::unprocessable(
          "copy_unsupported",
          fmt::format("instance {} runs in a container, which gpurent cp does not reach yet; copy "
                      "into a volume it mounts (gpurent cp PATH v-...:DEST), or launch with "
                      "--workdir",
                      key->instance_id)));
    }
    CopyWork into = [dir = workload_dir(*key),
                     socket = vm_guest_agent_socket(options.data_dir, *key),
                     in_vm = view->place == RunPlace::kVm,
                     path = path_parameter(request)](const std::filesystem::path& archive) {
      return in_vm ? copy_into_vm(socket, archive, path) : copy_into_run(dir, archive, path);
    };
    co_return co_await copy(*upload, std::move(into));
  }

  asio::awaitable<net::Response> copy_into_volume(const net::Request& request) {
    const auto volume = request.query.find("volume");
    const auto tenant = request.query.find("tenant");
    if (volume == request.query.end() || tenant == request.query.end()) {
      co_return net::problem_response(
          Error::invalid("invalid_query", "query parameters 'volume' and 'tenant' are required"));
    }
    // Made by the server; anything else is no volume, and never a path.
    if (!valid_instance_id(volume->second)) {
      co_return net::problem_response(Error::not_found("volume", volume->second));
    }
    auto upload = upload_parameter(request);
    if (!upload) co_return net::problem_response(upload.error());
    CopyWork into = [this, volume = volume->second, tenant = tenant->second,
                     path = path_parameter(request)](const std::filesystem::path& archive) {
      return agent::copy_into_volume(options.data_dir, volume, tenant, options.users, archive,
                                     path);
    };
    co_return co_await copy(*upload, std::move(into));
  }

  NodeRuns& runs;
  const NodeApiOptions options;
  const std::string& secret;
  asio::io_context io{1};
  asio::thread_pool copy_workers{kCopyWorkers};
  int copies_in_flight = 0;  // on the I/O thread
  asio::thread_pool exec_workers{kMaxVmExecsInFlight};
  int vm_execs_in_flight = 0;  // on the I/O thread
  net::Router<RouteHandler> router;
  std::unique_ptr<net::HttpServer> http;
  std::thread thread;
};

NodeApi::NodeApi(NodeRuns& runs, NodeApiOptions options) : secret_(new_secret("gna_")) {
  impl_ = std::make_unique<Impl>(runs, std::move(options), secret_);
}

NodeApi::~NodeApi() { stop(); }

Status NodeApi::start() {
  Impl& impl = *impl_;
  net::Forwarder forwarder{
      .claims =
          [](std::string_view method, std::string_view path) {
            return path.starts_with(model::kServicePathPrefix) ||
                   (method == "GET" && path == kNodeSshPath);
          },
      .decide = [&impl](net::RequestHead head) { return impl.forward(std::move(head)); }};
  impl.http = std::make_unique<net::HttpServer>(
      impl.io, [&impl](net::Request request) { return impl.handle(std::move(request)); },
      net::HttpLimits{.max_body_bytes = model::kMaxExecRequestBytes,
                      .idle_timeout = std::chrono::seconds(75),
                      .max_connections = 4096},
      std::move(forwarder));
  GPURENT_TRY(port, impl.http->listen(impl.options.listen_host, impl.options.port));
  address_ = host_port(
      impl.options.advertise_host.empty() ? impl.options.listen_host : impl.options.advertise_host,
      port);
  impl.thread = std::thread([&impl] { impl.io.run(); });
  spdlog::info("node_api_listening address={}", address_);
  return {};
}

void NodeApi::stop() {
  Impl& impl = *impl_;
  if (!impl.thread.joinable()) return;
  asio::post(impl.io, [&impl] { impl.http->close(); });
  impl.io.stop();
  impl.thread.join();
}

}  // namespace gpurent::agent
