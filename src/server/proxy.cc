#include "server/proxy.h"

#include "server/access.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/random.h"
#include "common/url.h"
#include "model/exec_protocol.h"
#include "model/file_copy.h"
#include "model/service_path.h"

namespace gpurent::server {
namespace {

constexpr std::string_view kInstancesPrefix = "/v1/instances/";
constexpr std::string_view kVolumesPrefix = "/v1/volumes/";
constexpr std::string_view kExecSuffix = "/exec";
constexpr std::string_view kFilesSuffix = "/files";
constexpr std::string_view kSshSuffix = "/ssh";

// Headers the node API uses; whatever a client sends under these names is replaced or dropped.
constexpr std::string_view kRunHeader = "X-Gpurent-Run";

// A request forwarded to a node's agent: its node API secret instead of the tenant's credentials.
net::ForwardTo to_node_api(const NodeEndpoint& node, std::string target,
                           std::chrono::seconds idle_timeout) {
  return {.host = node.host,
          .port = node.port,
          .target = std::move(target),
          .remove_headers = {"Cookie", std::string(kRunHeader)},
          .set_headers = {{"Authorization", "Bearer " + node.secret}},
          .idle_timeout = idle_timeout};
}

Error unauthenticated(std::string why) {
  return {ErrorKind::kUnauthenticated, "unauthenticated", std::move(why)};
}

// The <id> of "<prefix><id><suffix>", if that is the path.
std::optional<std::string_view> path_id(std::string_view path, std::string_view prefix,
                                        std::string_view suffix) {
  if (path.size() <= prefix.size() + suffix.size() || !path.starts_with(prefix) ||
      !path.ends_with(suffix)) {
    return std::nullopt;
  }
  const std::string_view id =
      path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  if (id.find('/') != std::string_view::npos) return std::nullopt;
  return id;
}

net::Response redirect(int status, std::string location,
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
  net::Response response{status, "text/plain; charset=utf-8", "", std::move(headers), {}};
  response.headers.emplace_back("Location", std::move(location));
  return response;
}

}  // namespace

Result<model::Principal> authenticate_api_key(const controller::Controller& controller,
                                              std::string_view authorization) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (!authorization.starts_with(kPrefix)) {
    return fail(unauthenticated("send 'Authorization: Bearer <API key>'"));
  }
  const std::string_view token = authorization.substr(kPrefix.size());
  if (token.empty()) return fail(unauthenticated("send 'Authorization: Bearer <API key>'"));
  return authenticate_key(controller, token);
}

Result<model::Principal> authenticate_key(const controller::Controller& controller,
                                          std::string_view key) {
  if (key.empty() || key.size() > kMaxApiKeyLength) {
    return fail(
        unauthenticated(fmt::format("an API key is 1 to {} characters long", kMaxApiKeyLength)));
  }
  auto found = controller.accounts().credentials().authenticate(hash_secret(key));
  if (!found) return fail(unauthenticated("unknown API key"));
  return *found;
}

std::string without_login_parameter(std::string_view target) {
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, question));
  std::string_view query = target.substr(question + 1);
  char separator = '?';
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (!pair.empty() && pair != "login" && !pair.starts_with("login=")) {
      out += separator;
      out += pair;
      separator = '&';
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::optional<NodeEndpoint> parse_node_endpoint(std::string_view address, std::string secret) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || secret.empty()) return std::nullopt;
  std::string_view host = address.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  }
  const std::string_view port_text = address.substr(colon + 1);
  unsigned port = 0;
  const auto [ptr, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return std::nullopt;
  }
  return NodeEndpoint{std::string(host), static_cast<uint16_t>(port), std::move(secret)};
}

TenantProxy::TenantProxy(ControllerHost& host, SessionSigner signer, const ConsoleSessions& console)
    : host_(host), signer_(std::move(signer)), console_(console) {}

Result<model::Principal> TenantProxy::authenticated(const net::RequestHead& head) {
  const std::string authorization = head.header("Authorization");
  if (authorization.empty()) {
    if (auto session = console_.authenticate(ctl(), BrowserRequest::of(head))) return *session;
  }
  return authenticate_api_key(ctl(), authorization);
}

Status TenantProxy::may_write(const model::Principal& caller, model::ScopeArea area) {
  // Everything forwarded acts on a workload (a command, files, its services): a write.
  return RouteAccess{area, true}.permits(caller);
}

Result<model::Principal> TenantProxy::caller_of(const net::RequestHead& head,
                                                model::ScopeArea area) {
  GPURENT_TRY(caller, authenticated(head));
  GPURENT_CHECK(may_write(caller, area));
  return caller;
}

bool TenantProxy::claims(std::string_view method, std::string_view path) {
  return path.starts_with(model::kServicePathPrefix) ||
         (method == "POST" && (path_id(path, kInstancesPrefix, kExecSuffix) ||
                               path_id(path, kInstancesPrefix, kFilesSuffix) ||
                               path_id(path, kVolumesPrefix, kFilesSuffix))) ||
         (method == "GET" && path_id(path, kInstancesPrefix, kSshSuffix));
}

void TenantProxy::node_reported(const std::string& node_id, std::string_view address,
                                std::string secret) {
  auto endpoint = parse_node_endpoint(address, std::move(secret));
  if (endpoint) {
    nodes_.insert_or_assign(node_id, std::move(*endpoint));
  } else {
    nodes_.erase(node_id);
  }
}

Result<std::pair<std::string, Timestamp>> TenantProxy::ticket(const model::Principal& caller,
                                                              std::string_view instance_id,
                                                              std::string_view service) {
  GPURENT_TRY(instance, ctl().instances().get(caller, instance_id));
  const auto& services = instance->spec.services;
  if (std::find(services.begin(), services.end(), service) == services.end()) {
    return fail(Error{ErrorKind::kNotFound, "service_not_found",
                      fmt::format("instance {} serves no service '{}'", instance_id, service)});
  }
  const Timestamp expires = clock_.now() + kTicketLifetime;
  return std::pair{signer_.sign(TokenKind::kTicket, instance->id, instance->tenant_id, expires),
                   expires};
}

Result<NodeEndpoint> TenantProxy::endpoint_of(std::string_view node_id,
                                              std::string_view what) const {
  const auto node = nodes_.find(std::string(node_id));
  if (node == nodes_.end()) {
    return fail(Error{ErrorKind::kUnavailable, "node_unreachable",
                      fmt::format("the node of {} has not told the server where its node API is "
                                  "(yet); try again in a few seconds",
                                  what)});
  }
  return node->second;
}

Result<NodeEndpoint> TenantProxy::reachable(const model::Instance& instance) const {
  using model::InstanceState;
  if (instance.state == InstanceState::kPending || instance.state == InstanceState::kStarting) {
    return fail(Error::conflict(
        "instance_not_running",
        fmt::format("instance {} is {}: try again once it runs (`gpurent show {}`; `gpurent "
                    "launch --wait` waits for that)",
                    instance.id, model::to_string(instance.state), instance.id)));
  }
  if (instance.state != InstanceState::kRunning) {
    return fail(
        Error::conflict("instance_not_running",
                        fmt::format("instance {} is {}; start it first: gpurent start {}",
                                    instance.id, model::to_string(instance.state), instance.id)));
  }
  return endpoint_of(instance.node_id, "instance " + instance.id);
}

bool TenantProxy::node_may_read(std::string_view node_id, std::string_view upload_id) const {
  const auto it = grants_.find({std::string(node_id), std::string(upload_id)});
  return it != grants_.end() && clock_.now() < it->second;
}

void TenantProxy::grant(const std::string& node_id, const std::string& upload_id) {
  const Timestamp now = clock_.now();
  std::erase_if(grants_, [now](const auto& item) { return item.second <= now; });
  // Past the bound every grant is live: the oldest node-upload pair by name goes; its copy, if
  // still fetching, is asked again.
  if (grants_.size() >= kMaxCopyGrants) grants_.erase(grants_.begin());
  grants_.insert_or_assign({node_id, upload_id}, now + kCopyGrantLifetime);
}

asio::awaitable<net::ForwardDecision> TenantProxy::decide(net::RequestHead head) {
  const auto ssh =
      head.method == "GET" ? path_id(head.path, kInstancesPrefix, kSshSuffix) : std::nullopt;
  if (head.method != "POST" && !ssh) co_return decide_service(head);
  // The writes: exec, copies and SSH tunnels, audited as the API's own routes are.
  std::optional<model::Principal> caller;
  std::string_view action;
  std::optional<net::ForwardDecision> decision;
  if (ssh) {
    action = "GET /v1/instances/{id}/ssh";
    decision = decide_ssh(head, *ssh, caller);
  } else if (const auto id = path_id(head.path, kInstancesPrefix, kExecSuffix)) {
    action = "POST /v1/instances/{id}/exec";
    decision = decide_exec(head, *id, caller);
  } else if (const auto id = path_id(head.path, kInstancesPrefix, kFilesSuffix)) {
    action = "POST /v1/instances/{id}/files";
    decision = decide_copy(head, CopyInto::kInstance, *id, caller);
  } else if (const auto id = path_id(head.path, kVolumesPrefix, kFilesSuffix)) {
    action = "POST /v1/volumes/{id}/files";
    decision = decide_copy(head, CopyInto::kVolume, *id, caller);
  } else {
    co_return decide_service(head);
  }
  // Named, not a conditional expression in the call: GCC 12 miscompiles those under co_await.
  const model::Principal* audited_caller = nullptr;
  if (caller) audited_caller = &*caller;
  if (gate_.audit) co_await gate_.audit(audited_caller, head, action, *decision);
  co_return std::move(*decision);
}

std::optional<net::Response> TenantProxy::admit_writer(const net::RequestHead& head,
                                                       model::ScopeArea area,
                                                       std::optional<model::Principal>& caller) {
  auto found = authenticated(head);
  if (!found) return net::problem_response(found.error());
  caller = std::move(*found);  // known from here: a refusal below is the caller's, audited so
  if (auto allowed = may_write(*caller, area); !allowed) {
    return net::problem_response(allowed.error());
  }
  if (gate_.admit) return gate_.admit(*caller);
  return std::nullopt;
}

Result<std::pair<std::string, NodeEndpoint>> TenantProxy::copy_target(
    const model::Principal& caller, CopyInto into, std::string_view id,
    const std::string& upload_id, const std::string& path) {
  if (!uploads_) {
    return fail(
        Error{ErrorKind::kUnavailable, "uploads_unavailable", "this server keeps no uploads"});
  }
  if (into == CopyInto::kInstance) {
    GPURENT_TRY(instance, ctl().instances().get(caller, id));
    GPURENT_CHECK(model::check_copy_path(path));
    // The upload must be the instance's tenant's, whoever asks (an operator may copy for it).
    GPURENT_TRY(upload, uploads_->get_complete(instance->tenant_id, upload_id));
    GPURENT_TRY(node, reachable(*instance));
    grant(instance->node_id, upload.id);
    return std::pair{
        fmt::format("/v1/node/files?instance={}&run={}&upload={}&path={}",
                    percent_encode(instance->id), instance->run, upload.id, percent_encode(path)),
        std::move(node)};
  }
  GPURENT_TRY(volume, ctl().volumes().get(caller, id));
  if (volume->state == model::VolumeState::kDeleted) {
    return fail(Error::conflict("volume_deleted", fmt::format("volume {} is deleted", volume->id)));
  }
  GPURENT_CHECK(model::check_copy_path(path));
  GPURENT_TRY(upload, uploads_->get_complete(volume->tenant_id, upload_id));
  if (volume->node_id.empty()) {
    return fail(Error::conflict(
        "volume_not_placed",
        fmt::format("volume {} is on no node yet: it gets one when the first instance that mounts "
                    "it is placed (gpurent launch --volume {}:/data ...)",
                    volume->id, volume->id)));
  }
  const auto node = ctl().fleet().nodes().get(model::platform_principal(), volume->node_id);
  if (node && (*node)->state == model::NodeState::kDown) {
    return fail(
        Error{ErrorKind::kUnavailable, "node_down",
              fmt::format("the node of volume {} is down; try again once it is back", volume->id)});
  }
  GPURENT_TRY(endpoint, endpoint_of(volume->node_id, "volume " + volume->id));
  grant(volume->node_id, upload.id);
  return std::pair{fmt::format("/v1/node/volume-files?volume={}&tenant={}&upload={}&path={}",
                               percent_encode(volume->id), percent_encode(volume->tenant_id),
                               upload.id, percent_encode(path)),
                   std::move(endpoint)};
}

net::ForwardDecision TenantProxy::decide_copy(const net::RequestHead& head, CopyInto into,
                                              std::string_view id,
                                              std::optional<model::Principal>& caller) {
  if (auto refused = admit_writer(
          head,
          into == CopyInto::kInstance ? model::ScopeArea::kInstances : model::ScopeArea::kVolumes,
          caller)) {
    return std::move(*refused);
  }
  const auto upload = head.query.find("upload");
  if (upload == head.query.end()) {
    return net::problem_response(Error::invalid(
        "invalid_query",
        "query parameter 'upload' is required: the id of a complete upload (POST /v1/uploads)"));
  }
  const auto path = head.query.find("path");
  auto target = copy_target(*caller, into, id, upload->second,
                            path == head.query.end() ? std::string() : path->second);
  if (!target) return net::problem_response(target.error());
  auto& [node_target, node] = *target;
  return to_node_api(node, std::move(node_target), kCopyAnswerTimeout);
}

net::ForwardDecision TenantProxy::decide_exec(const net::RequestHead& head,
                                              std::string_view instance_id,
                                              std::optional<model::Principal>& caller) {
  if (auto refused = admit_writer(head, model::ScopeArea::kInstances, caller)) {
    return std::move(*refused);
  }
  // Refused here rather than by the node: a body announced but never sent would otherwise hold
  // the connection for as long as a command may run.
  const std::string length = head.header("Content-Length");
  size_t declared = 0;
  if (!length.empty() &&
      (std::from_chars(length.data(), length.data() + length.size(), declared).ec != std::errc() ||
       declared > model::kMaxExecRequestBytes)) {
    return net::problem_response(
        Error{ErrorKind::kPayloadTooLarge, "payload_too_large",
              fmt::format("an exec request is at most {} bytes", model::kMaxExecRequestBytes)});
  }
  auto instance = ctl().instances().get(*caller, instance_id);
  if (!instance) return net::problem_response(instance.error());
  auto node = reachable(**instance);
  if (!node) return net::problem_response(node.error());
  // A quiet command streams nothing for as long as it may run; the node kills it then.
  return to_node_api(
      *node, fmt::format("/v1/node/exec?instance={}&run={}", (*instance)->id, (*instance)->run),
      std::chrono::seconds(model::kMaxExecTimeoutS) + std::chrono::minutes(1));
}

net::ForwardDecision TenantProxy::decide_ssh(const net::RequestHead& head,
                                             std::string_view instance_id,
                                             std::optional<model::Principal>& caller) {
  if (auto refused = admit_writer(head, model::ScopeArea::kInstances, caller)) {
    return std::move(*refused);
  }
  auto instance = ctl().instances().get(*caller, instance_id);
  if (!instance) return net::problem_response(instance.error());
  if (!(*instance)->spec.vm) {
    return net::problem_response(Error::unprocessable(
        "ssh_unavailable",
        fmt::format("instance {} is not a VM: only a VM booted from a cloud image runs an SSH "
                    "server (gpurent launch --runtime vm --ssh-key ...); use gpurent exec",
                    (*instance)->id)));
  }
  auto node = reachable(**instance);
  if (!node) return net::problem_response(node.error());
  return to_node_api(
      *node, fmt::format("/v1/node/ssh?instance={}&run={}", (*instance)->id, (*instance)->run),
      net::kForwardIoTimeout);
}

net::ForwardDecision TenantProxy::decide_service(const net::RequestHead& head) {
  auto path = model::parse_service_path(head.path);
  if (!path) return net::problem_response(path.error());
  if (path->needs_slash) {
    // The service's base URL ends in '/'; relative links resolve against it.
    const size_t question = head.target.find('?');
    std::string location = head.target.substr(0, question) + "/";
    if (question != std::string::npos) location += head.target.substr(question);
    return redirect(308, std::move(location));
  }
  const std::string authorization = head.header("Authorization");
  const std::string cookies = head.header("Cookie");
  const Timestamp now = clock_.now();
  const model::Instance* instance = nullptr;
  if (!authorization.empty()) {
    auto caller = caller_of(head, model::ScopeArea::kInstances);
    if (!caller) return net::problem_response(caller.error());
    auto found = ctl().instances().get(*caller, path->instance_id);
    if (!found) return net::problem_response(found.error());
    instance = *found;
  } else {
    // A browser: a login ticket in the URL becomes the session cookie, or the cookie is present.
    const auto login = head.query.find("login");
    const std::optional<std::string> session = cookie_value(cookies, kSessionCookie);
    const bool ticket = login != head.query.end();
    if (!ticket && !session) {
      return net::problem_response(unauthenticated(
          "send 'Authorization: Bearer <API key>', or open the URL `gpurent jupyter ID` prints"));
    }
    auto claims = ticket ? signer_.verify(login->second, TokenKind::kTicket, now)
                         : signer_.verify(*session, TokenKind::kSession, now);
    if (!claims) return net::problem_response(claims.error());
    // A genuine ticket or session for another instance (another tenant's, say) opens nothing
    // here, and says nothing about this one: as for another tenant's key, it does not exist.
    auto found = ctl().instances().get(model::platform_principal(), path->instance_id);
    if (claims->instance_id != path->instance_id || !found ||
        (*found)->tenant_id != claims->tenant_id) {
      return net::problem_response(Error::not_found("instance", path->instance_id));
    }
    if (ticket) {
      const std::string cookie =
          fmt::format("{}={}; Path={}; Max-Age={}; HttpOnly; SameSite=Lax", kSessionCookie,
                      signer_.sign(TokenKind::kSession, path->instance_id, claims->tenant_id,
                                   now + kSessionLifetime),
                      fmt::format("{}{}/", model::kServicePathPrefix, path->instance_id),
                      kSessionLifetime.count());
      return redirect(303, without_login_parameter(head.target), {{"Set-Cookie", cookie}});
    }
    const std::string origin = head.header("Origin");
    if (!origin.empty() && !origin_matches_host(origin, head.header("Host"))) {
      return net::problem_response(
          Error{ErrorKind::kPermissionDenied, "cross_origin",
                fmt::format("a request from {} may not use this site's session", origin)});
    }
    instance = *found;
  }
  const auto& services = instance->spec.services;
  if (std::find(services.begin(), services.end(), path->service) == services.end()) {
    return net::problem_response(
        Error{ErrorKind::kNotFound, "service_not_found",
              fmt::format("instance {} serves no service '{}'", instance->id, path->service)});
  }
  auto node = reachable(*instance);
  if (!node) return net::problem_response(node.error());
  net::ForwardTo to{.host = node->host,
                    .port = node->port,
                    .target = head.target,
                    .remove_headers = {std::string(kRunHeader)},
                    .set_headers = {{"Authorization", "Bearer " + node->secret},
                                    {std::string(kRunHeader), std::to_string(instance->run)}}};
  // The session cookies are the server's; the service gets the browser's other cookies.
  if (!cookies.empty()) {
    const std::string rest =
        without_cookie(without_cookie(cookies, kSessionCookie), kConsoleCookie);
    if (rest.empty()) {
      to.remove_headers.emplace_back("Cookie");
    } else {
      to.set_headers.emplace_back("Cookie", rest);
    }
  }
  return to;
}

}  // namespace gpurent::server
