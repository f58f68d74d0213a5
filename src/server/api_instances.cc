#include "server/api_impl.h"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <unordered_map>
#include "api/workloads.h"
#include "common/random.h"
#include "model/agent_protocol.h"
#include "model/codec.h"
#include "model/gpu_catalog.h"
#include "model/service_path.h"
#include "model/template.h"
#include "model/workload_fields.h"
#include "monitor/alerts_json.h"
#include "server/price_views.h"
#include "server/request_bodies.h"
#include "server/upload_store.h"
#include "server/views.h"

namespace gpurent::server {

void Api::Impl::add_instance_routes() {
  keyed("POST", "/v1/instances",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return create_instance(caller, request);
        });
  keyed("GET", "/v1/instances",
        [this](const Principal& caller, Request& request, const PathParams&)
            -> asio::awaitable<Response> { co_return list_instances(caller, request); });
  keyed("GET", "/v1/instances/{id}",
        [this](const Principal& caller, Request&,
               const PathParams& params) -> asio::awaitable<Response> {
          auto found = ctl().instances().get(caller, params.find("id")->second);
          if (!found) co_return problem_response(found.error());
          co_return Response{200, "application/json", instance_json(**found), {}, {}};
        });
  instance_action("/v1/instances/{id}/stop", "POST", &Controller::stop_instance);
  keyed("POST", "/v1/instances/{id}/start",
        [this](const Principal& caller, Request& request, const PathParams& params) {
          return start_instance(caller, request, params.find("id")->second);
        });
  instance_action("/v1/instances/{id}", "DELETE", &Controller::delete_instance);
  keyed("POST", "/v1/instances/{id}/services/{service}/ticket",
        [this](const Principal& caller, Request&,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string& id = params.find("id")->second;
          const std::string& service = params.find("service")->second;
          auto ticket = proxy.ticket(caller, id, service);
          co_return result_response(201, ticket, [&](const auto& issued) {
            return api::ServiceTicket{
                .path =
                    fmt::format("{}?login={}", model::service_base_url(id, service), issued.first),
                .expires_at = issued.second};
          });
        });
  keyed("GET", "/v1/instances/{id}/logs",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          co_return instance_logs(caller, request, params.find("id")->second);
        });
}

void Api::Impl::add_upload_routes() {
  keyed("POST", "/v1/uploads",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return create_upload(caller, request);
        });
  keyed("PUT", "/v1/uploads/{id}",
        [this](const Principal& caller, Request& request, const PathParams& params) {
          return append_upload(caller, request, params.find("id")->second);
        });
  keyed("GET", "/v1/uploads/{id}",
        [this](const Principal& caller, Request&,
               const PathParams& params) -> asio::awaitable<Response> {
          if (!uploads) co_return problem_response(uploads_unavailable());
          co_return result_response(200, uploads->get(caller.tenant_id, params.find("id")->second),
                                    upload_view);
        });
}

void Api::Impl::instance_action(std::string pattern, std::string method, InstanceCommand command) {
  keyed(std::move(method), std::move(pattern),
        [this, command](const Principal& caller, Request& request,
                        const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          co_return instance_accepted(
              co_await mutate(request, [&](Controller& c) { return (c.*command)(caller, id); }));
        });
}

Response Api::Impl::instance_accepted(const Result<model::Instance>& result) {
  return result_response(202, result,
                         [this](const model::Instance& i) { return instance_view(ctl(), i); });
}

asio::awaitable<Response> Api::Impl::start_instance(const Principal& caller, Request& request,
                                                    std::string id) {
  // No body, or {"anywhere": true}: start it on any node, leaving its files behind.
  auto body = parse_json_object(request.body.empty() ? "{}" : request.body);
  if (!body) co_return problem_response(body.error());
  if (auto known = reject_unknown_fields(*body, {"anywhere"}); !known) {
    co_return problem_response(known.error());
  }
  auto anywhere = optional_bool(*body, "anywhere");
  if (!anywhere) co_return problem_response(anywhere.error());
  const auto where =
      anywhere->value_or(false) ? Controller::StartOn::kAnyNode : Controller::StartOn::kItsNode;
  co_return instance_accepted(
      co_await mutate(request, [&](Controller& c) { return c.start_instance(caller, id, where); }));
}

Result<model::InstanceSpec> Api::Impl::with_template(const Json& body, model::InstanceSpec spec) {
  if (!spec.image.empty()) GPURENT_CHECK(outbound.check_image(spec.image));
  GPURENT_TRY(name, optional_string(body, "template", model::kMaxTemplateNameLength));
  GPURENT_TRY(runtime, optional_string(body, "runtime", 16));
  model::RuntimeChoice choice = model::RuntimeChoice::kAuto;
  if (runtime && !model::parse_runtime_choice(*runtime, &choice)) {
    return fail(invalid_field("runtime", "must be auto, process, container or vm"));
  }
  if (choice == model::RuntimeChoice::kVm && !spec.image.empty()) {
    return fail(Error::unprocessable(
        "vm_image_unsupported",
        "a VM boots the node's guest image and runs the command in it; an image runs in a "
        "container (runtime container)"));
  }
  if (!name) {
    if (choice == model::RuntimeChoice::kVm) {
      spec.vm = true;
      return spec;
    }
    if (runtime) return fail(invalid_field("runtime", "chooses a template's form: give template"));
    return spec;
  }
  auto found = ctl().templates().find(*name);
  if (!found) {
    return fail(Error::unprocessable(
        "template_not_found",
        fmt::format("there is no template '{}' (GET /v1/templates lists them)", *name)));
  }
  model::TemplateOverrides overrides;
  overrides.image = spec.image;
  if (has_value(body, "command")) overrides.command = spec.command;
  overrides.env = spec.env;
  overrides.services = spec.services;
  GPURENT_CHECK(model::apply_template(**found, choice, std::move(overrides), spec));
  return spec;
}

void Api::Impl::add_template_routes() {
  keyed("GET", "/v1/templates",
        [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
          Json items = Json::array();
          for (const auto* t : ctl().templates().all()) items.push_back(template_view(*t));
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("GET", "/v1/templates/{name}",
        [this](const Principal&, Request&, const PathParams& params) -> asio::awaitable<Response> {
          auto found = ctl().templates().find(params.find("name")->second);
          co_return result_response(200, found,
                                    [](const model::Template* t) { return template_view(*t); });
        });
  keyed("PUT", "/v1/templates/{name}",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          co_return co_await operator_write(
              caller, request,
              [&](const Json& body) { return parse_template(body, params.find("name")->second); },
              [&](Controller& c, auto t) { return c.templates().put(caller, std::move(t)); },
              template_view);
        });
  keyed("DELETE", "/v1/templates/{name}",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string name = params.find("name")->second;
          auto deleted = co_await mutate(
              request, [&](Controller& c) { return c.templates().remove(caller, name); });
          if (!deleted) co_return problem_response(deleted.error());
          co_return Response{204, "", "", {}, {}};
        });
}

asio::awaitable<Response> Api::Impl::create_instance(const Principal& caller, Request& request) {
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  auto spec = parse_instance_spec(*body);
  if (spec) spec = with_template(*body, std::move(*spec));
  if (!spec) co_return problem_response(spec.error());
  if (auto workdir = check_workdir(caller, *spec); !workdir) {
    co_return problem_response(workdir.error());
  }
  auto key = idempotency_key(request);
  if (!key) co_return problem_response(key.error());
  const std::string fingerprint = hash_secret(body->dump());
  auto created = co_await mutate(request, [&](Controller& c) {
    return c.create_instance(caller, std::move(*spec), *key, fingerprint);
  });
  if (!created) co_return problem_response(created.error());
  co_return created_response(instance_view(ctl(), created->instance),
                             "/v1/instances/" + created->instance.id, created->replayed);
}

Response Api::Impl::list_instances(const Principal& caller, const Request& request) {
  auto limit = query_int(request, "limit", kDefaultListLimit, 1, kMaxListLimit);
  if (!limit) return problem_response(limit.error());
  controller::InstanceFilter filter;
  auto named = tenant_query(caller, request);
  if (!named) return problem_response(named.error());
  filter.tenant_id = *named;
  filter.job_id = query_string(request, "job");
  if (auto state = query_string(request, "state")) {
    model::InstanceState parsed;
    if (!model::parse_instance_state(*state, &parsed)) {
      return problem_response(
          Error::invalid("invalid_query", fmt::format("unknown state '{}'", *state)));
    }
    filter.state = parsed;
  }
  auto page = ctl().instances().list(caller, filter, query_string(request, "cursor").value_or(""),
                                     static_cast<size_t>(*limit));
  if (!page) return problem_response(page.error());
  std::string body = R"({"items":[)";
  for (const auto* instance : page->items) {
    if (instance != page->items.front()) body += ',';
    body += instance_json(*instance);
  }
  body += R"(],"next_cursor":)";
  body += page->next_cursor ? Json(*page->next_cursor).dump() : "null";
  body += '}';
  return Response{200, "application/json", std::move(body), {}, {}};
}

const std::string& Api::Impl::instance_json(const model::Instance& instance) {
  static constexpr size_t kMaxCachedViews = 100'000;
  if (instance_views.size() >= kMaxCachedViews && !instance_views.contains(instance.id)) {
    instance_views.clear();
  }
  CachedView& cached = instance_views[instance.id];
  if (cached.body.empty() || cached.revision != instance.revision) {
    cached = {instance.revision, instance_view(ctl(), instance).dump()};
  }
  return cached.body;
}

Response Api::Impl::instance_logs(const Principal& caller, const Request& request,
                                  const std::string& id) {
  auto found = ctl().instances().get(caller, id);
  if (!found) return problem_response(found.error());
  const bool follow = query_string(request, "follow").value_or("false") == "true";
  // The stream reads run after run; when following it waits for more output until the instance
  // has ended and its last run's log is drained.
  struct Cursor {
    int64_t run = 1;
    int64_t offset = 0;
  };
  auto cursor = std::make_shared<Cursor>();
  Response response{200, "text/plain; charset=utf-8", "", {}, {}};
  response.chunks = [this, id, follow, cursor]() -> asio::awaitable<std::optional<std::string>> {
    for (;;) {
      const model::Instance* instance = *ctl().instances().get(model::platform_principal(), id);
      auto data = logs.read(id, cursor->run, cursor->offset, kLogChunkBytes);
      if (data && !data->empty()) {
        cursor->offset += static_cast<int64_t>(data->size());
        co_return std::move(*data);
      }
      if (cursor->run < instance->run) {
        cursor->run += 1;
        cursor->offset = 0;
        continue;
      }
      const bool ended = instance->state == model::InstanceState::kStopped ||
                         instance->state == model::InstanceState::kFailed ||
                         instance->state == model::InstanceState::kPreempted ||
                         instance->state == model::InstanceState::kTerminated;
      if (!follow || ended) co_return std::nullopt;
      co_await host.wait("instance:" + id, kFollowPoll);
    }
  };
  return response;
}

void Api::Impl::add_job_routes() {
  keyed("POST", "/v1/jobs", [this](const Principal& caller, Request& request, const PathParams&) {
    return create_job(caller, request);
  });
  keyed("GET", "/v1/jobs",
        [this](const Principal& caller, Request& request, const PathParams&)
            -> asio::awaitable<Response> { co_return list_jobs(caller, request); });
  keyed("GET", "/v1/jobs/{id}",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          auto all_tasks = query_flag(request, "tasks", false);
          if (!all_tasks) co_return problem_response(all_tasks.error());
          auto found = ctl().jobs().get(caller, params.find("id")->second);
          co_return result_response(
              200, found, [&](const model::Job* job) { return job_view(*job, *all_tasks); });
        });
  keyed("POST", "/v1/jobs/{id}/cancel",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          auto result =
              co_await mutate(request, [&](Controller& c) { return c.cancel_job(caller, id); });
          co_return result_response(202, result,
                                    [](const model::Job& job) { return job_view(job); });
        });
  keyed("GET", "/v1/jobs/{id}/logs",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          co_return job_logs(caller, request, params.find("id")->second);
        });
}

Response Api::Impl::list_jobs(const Principal& caller, const Request& request) {
  auto limit = query_int(request, "limit", kDefaultListLimit, 1, kMaxListLimit);
  if (!limit) return problem_response(limit.error());
  controller::JobFilter filter;
  auto named = tenant_query(caller, request);
  if (!named) return problem_response(named.error());
  filter.tenant_id = *named;
  if (auto state = query_string(request, "state")) {
    model::JobState parsed;
    if (!model::parse_job_state(*state, &parsed)) {
      return problem_response(
          Error::invalid("invalid_query", fmt::format("unknown state '{}'", *state)));
    }
    filter.state = parsed;
  }
  auto page = ctl().jobs().list(caller, filter, query_string(request, "cursor").value_or(""),
                                static_cast<size_t>(*limit));
  if (!page) return problem_response(page.error());
  Json items = Json::array();
  for (const auto* job : page->items) items.push_back(job_view(*job));
  return json_response(
      200, {{"items", std::move(items)},
            {"next_cursor", page->next_cursor ? Json(*page->next_cursor) : Json(nullptr)}});
}

asio::awaitable<Response> Api::Impl::create_job(const Principal& caller, Request& request) {
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  auto spec = parse_job_spec(*body);
  if (spec) {
    auto task = with_template(*body, std::move(spec->task));
    if (task) {
      spec->task = std::move(*task);
    } else {
      spec = fail(std::move(task).error());
    }
  }
  if (!spec) co_return problem_response(spec.error());
  if (auto workdir = check_workdir(caller, spec->task); !workdir) {
    co_return problem_response(workdir.error());
  }
  auto key = idempotency_key(request);
  if (!key) co_return problem_response(key.error());
  const std::string fingerprint = hash_secret(body->dump());
  auto created = co_await mutate(request, [&](Controller& c) {
    return c.create_job(caller, std::move(*spec), *key, fingerprint);
  });
  if (!created) co_return problem_response(created.error());
  co_return created_response(job_view(created->job), "/v1/jobs/" + created->job.id,
                             created->replayed);
}

Response Api::Impl::job_logs(const Principal& caller, const Request& request,
                             const std::string& id) {
  auto found = ctl().jobs().get(caller, id);
  if (!found) return problem_response(found.error());
  const model::Job& job = **found;
  auto task = query_int(request, "task", 0, 0, job.spec.array - 1);
  if (!task) return problem_response(task.error());
  auto rank = query_int(request, "rank", 0, 0, job.spec.nodes - 1);
  if (!rank) return problem_response(rank.error());
  const auto index = static_cast<size_t>(*task);
  const auto member = static_cast<size_t>(*rank);
  if (index >= job.tasks.size() || member >= job.tasks[index].members.size()) {
    return problem_response(Error::conflict(
        "invalid_state",
        fmt::format("task {} of job {} has no member of rank {}", *task, id, *rank)));
  }
  return instance_logs(caller, request, job.tasks[index].members[member]);
}

Error Api::Impl::uploads_unavailable() {
  return Error{ErrorKind::kUnavailable, "uploads_unavailable", "this server keeps no uploads"};
}

Status Api::Impl::check_workdir(const Principal& caller, const model::InstanceSpec& spec) {
  if (spec.workdir.empty()) return {};
  if (!uploads) return fail(uploads_unavailable());
  auto upload = uploads->get_complete(caller.tenant_id, spec.workdir);
  if (!upload) return fail(std::move(upload).error());
  return {};
}

asio::awaitable<Response> Api::Impl::create_upload(const Principal& caller, Request& request) {
  if (!uploads) co_return problem_response(uploads_unavailable());
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  if (auto known = reject_unknown_fields(*body, {"size", "sha256"}); !known) {
    co_return problem_response(known.error());
  }
  auto size = required_int(*body, "size", INT64_MIN, INT64_MAX);
  if (!size) co_return problem_response(size.error());
  auto sha256 = required_string(*body, "sha256", 128);
  if (!sha256) co_return problem_response(sha256.error());
  // Named, not a temporary in the co_await: GCC 12 destroys such temporaries twice.
  auto create = [this, tenant = caller.tenant_id, size = *size, sha256 = *sha256] {
    return uploads->create(tenant, size, sha256);
  };
  auto created = co_await on_log_thread(std::move(create));
  if (!created) co_return problem_response(created.error());
  Response response = json_response(201, upload_view(*created));
  response.headers.emplace_back("Location", "/v1/uploads/" + created->id);
  co_return response;
}

asio::awaitable<Response> Api::Impl::append_upload(const Principal& caller, const Request& request,
                                                   std::string id) {
  if (!uploads) co_return problem_response(uploads_unavailable());
  auto offset = query_int(request, "offset", 0, 0, kMaxUploadBytes);
  if (!offset) co_return problem_response(offset.error());
  auto append = [this, tenant = caller.tenant_id, id = std::move(id), offset = *offset,
                 bytes = std::string_view(request.body)] {
    return uploads->append(tenant, id, offset, bytes);
  };
  auto appended = co_await on_log_thread(std::move(append));
  co_return result_response(200, appended, upload_view);
}

}  // namespace gpurent::server
