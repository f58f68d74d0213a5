#include "server/api_impl.h"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <unordered_map>
#include "api/read_request.h"
#include "common/random.h"
#include "common/secret_box.h"
#include "model/agent_protocol.h"
#include "model/codec.h"
#include "model/gpu_catalog.h"
#include "model/service_path.h"
#include "model/workload_fields.h"
#include "monitor/alerts_json.h"
#include "server/price_views.h"
#include "server/request_bodies.h"
#include "server/upload_store.h"
#include "server/views.h"

namespace gpurent::server {

void Api::Impl::add_node_routes() {
  keyed("GET", "/v1/nodes",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          if (auto allowed = require_operator(caller); !allowed)
            co_return problem_response(allowed.error());
          // Paged: a node's view carries its GPUs' latest telemetry, and rendering every node of
          // a large fleet at once held the controller's thread for seconds.
          auto limit = query_int(request, "limit", kDefaultListLimit, 1, kMaxListLimit);
          if (!limit) co_return problem_response(limit.error());
          const auto page = ctl().fleet().nodes().list(
              caller, query_string(request, "cursor").value_or(""), static_cast<size_t>(*limit));
          Json items = Json::array();
          for (const auto* node : page.items) items.push_back(node_view(ctl(), *node));
          co_return json_response(
              200, {{"items", std::move(items)},
                    {"next_cursor", page.next_cursor ? Json(*page.next_cursor) : Json(nullptr)}});
        });
  keyed("GET", "/v1/nodes/{id}",
        [this](const Principal& caller, Request&,
               const PathParams& params) -> asio::awaitable<Response> {
          if (auto allowed = require_operator(caller); !allowed)
            co_return problem_response(allowed.error());
          auto node = ctl().fleet().nodes().get(caller, params.find("id")->second);
          co_return result_response(200, node,
                                    [this](const model::Node* n) { return node_view(ctl(), *n); });
        });
  node_action("/v1/nodes/{id}/cordon", controller::NodeAction::kCordon);
  node_action("/v1/nodes/{id}/uncordon", controller::NodeAction::kUncordon);
  node_action("/v1/nodes/{id}/drain", controller::NodeAction::kDrain);
  keyed("POST", "/v1/nodes/{id}/benchmark",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          auto result = co_await mutate(request, [&](Controller& c) -> Result<Json> {
            GPURENT_TRY(asked, c.benchmark_node(caller, id));
            GPURENT_TRY(node, c.fleet().nodes().get(caller, id));
            return benchmark_request_view(*node, asked);
          });
          co_return result_response(202, result, [](const Json& view) { return view; });
        });
  keyed("POST", "/v1/training-benchmarks",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          co_return co_await record_training_benchmark(caller, request);
        });
  keyed("GET", "/v1/nodes/{id}/benchmarks",
        [this](const Principal& caller, Request&,
               const PathParams& params) -> asio::awaitable<Response> {
          if (auto allowed = require_operator(caller); !allowed)
            co_return problem_response(allowed.error());
          auto node = ctl().fleet().nodes().get(caller, params.find("id")->second);
          co_return result_response(200, node, [this](const model::Node* n) {
            return whole_list(node_benchmarks_view(ctl(), *n));
          });
        });
}

asio::awaitable<Response> Api::Impl::record_training_benchmark(const Principal& caller,
                                                               const Request& request) {
  if (auto allowed = require_operator(caller); !allowed) {
    co_return problem_response(allowed.error());
  }
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  auto asked = api::read_request<api::TrainingRecordCreate>(*body);
  if (!asked) co_return problem_response(asked.error());
  auto instance = ctl().instances().get(caller, asked->instance_id);
  if (!instance) co_return problem_response(instance.error());
  // The results are the last lines of the run's log.
  const int64_t run = (*instance)->run;
  const int64_t size = logs.size(asked->instance_id, run);
  auto tail = logs.read(asked->instance_id, run, std::max<int64_t>(0, size - kTrainingLogTail),
                        kTrainingLogTail);
  if (!tail) co_return problem_response(tail.error());
  auto recorded = co_await mutate(request, [&](Controller& c) {
    return c.record_training_benchmark(caller, asked->instance_id, *tail);
  });
  co_return result_response(200, recorded, training_record_view);
}

void Api::Impl::add_agent_routes() {
  router.add("POST", "/v1/agent/register",
             [this](Request& request, const PathParams&) { return register_node(request); });
  agent("GET", "/v1/agent/desired",
        [this](const std::string& node, Request& request) { return desired(node, request); });
  agent("POST", "/v1/agent/report",
        [this](const std::string& node, Request& request) { return report(node, request); });
  agent("POST", "/v1/agent/logs",
        [this](const std::string& node, Request& request) { return upload_logs(node, request); });
  agent("GET", "/v1/agent/upload", [this](const std::string& node, Request& request) {
    return download_upload(node, request);
  });
}

void Api::Impl::node_action(std::string pattern, controller::NodeAction action) {
  keyed("POST", std::move(pattern),
        [this, action](const Principal& caller, Request& request,
                       const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          auto result = co_await mutate(request, [&](Controller& c) -> Result<Json> {
            GPURENT_TRY(moving, c.manage_node(caller, id, action));
            GPURENT_TRY(node, c.fleet().nodes().get(caller, id));
            Json view = node_view(c, *node);
            view["moving_instances"] = moving;
            return view;
          });
          co_return result_response(200, result, [](const Json& view) { return view; });
        });
}

namespace {

// A page of a log listed by seq (the audit log, the event log): ?limit= and ?cursor=.
struct SeqPage {
  size_t limit = 0;
  int64_t after = 0;
};

Result<SeqPage> seq_page(const Request& request) {
  GPURENT_TRY(limit, query_int(request, "limit", kDefaultListLimit, 1, kMaxListLimit));
  GPURENT_TRY(after, query_int(request, "cursor", 0, 0, std::numeric_limits<int64_t>::max()));
  return SeqPage{static_cast<size_t>(limit), after};
}

// The entries as a list whose next_cursor is the last one's seq when the page is full.
template <class Entry>
Response seq_list(const std::vector<const Entry*>& entries, size_t limit,
                  Json (*view)(const Entry&)) {
  Json items = Json::array();
  for (const Entry* entry : entries) items.push_back(view(*entry));
  Json next = entries.size() == limit ? Json(std::to_string(entries.back()->seq)) : Json(nullptr);
  return json_response(200, {{"items", std::move(items)}, {"next_cursor", std::move(next)}});
}

}  // namespace

void Api::Impl::add_audit_routes() {
  keyed("GET", "/v1/audit",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto page = seq_page(request);
          if (!page) co_return problem_response(page.error());
          auto named = tenant_query(caller, request);
          if (!named) co_return problem_response(named.error());
          const controller::AuditFilter filter{.tenant_id = *named,
                                               .key_id = query_string(request, "key"),
                                               .after_seq = page->after};
          const auto entries = ctl().audit().list(caller, filter, page->limit);
          if (!entries) co_return problem_response(entries.error());
          co_return seq_list(*entries, page->limit, &audit_view);
        });
}

void Api::Impl::add_event_routes() {
  keyed("GET", "/v1/events",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto page = seq_page(request);
          if (!page) co_return problem_response(page.error());
          auto named = tenant_query(caller, request);
          if (!named) co_return problem_response(named.error());
          const controller::EventFilter filter{.tenant_id = *named,
                                               .object_id = query_string(request, "object"),
                                               .kind = query_string(request, "kind"),
                                               .after_seq = page->after};
          co_return seq_list(ctl().events().list(caller, filter, page->limit), page->limit,
                             &event_view);
        });
}

void Api::Impl::add_quarantine_routes() {
  keyed("POST", "/v1/nodes/{id}/gpus/{index}/release",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          const std::string& text = params.find("index")->second;
          // Not a device index: names no GPU (404 gpu_not_found), as an index the node lacks.
          int index = -1;
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
          if (ec != std::errc() || end != text.data() + text.size()) index = -1;
          auto result = co_await mutate(request, [&](Controller& c) -> Result<Json> {
            GPURENT_CHECK(c.release_gpu(caller, id, index));
            GPURENT_TRY(node, c.fleet().nodes().get(caller, id));
            return node_view(c, *node);
          });
          co_return result_response(200, result, [](const Json& view) { return view; });
        });
}

void Api::Impl::add_monitoring_routes() {
  router.add("GET", "/metrics",
             [this](Request& request, const PathParams&) -> asio::awaitable<Response> {
               if (!metrics_token.empty() &&
                   !secrets_equal(bearer_token(request).value_or(""), metrics_token)) {
                 co_return problem_response(
                     unauthenticated("send 'Authorization: Bearer <metrics token>'"));
               }
               co_return Response{200,
                                  "text/plain; version=0.0.4; charset=utf-8",
                                  render_metrics(ctl(), request_metrics),
                                  {},
                                  {}};
             });
  keyed("GET", "/v1/metrics/query",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto query = parse_metrics_query(request.query);
          if (!query) co_return problem_response(query.error());
          auto answer = ctl().fleet().query_metrics(caller, *query);
          co_return result_response(200, answer, [&](const controller::MetricsAnswer& a) {
            return metrics_answer_view(*query, a);
          });
        });
  keyed("GET", "/v1/alerts",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto limit = query_int(request, "history", kDefaultListLimit, 0,
                                 static_cast<int64_t>(controller::kMaxAlertHistory));
          if (!limit) co_return problem_response(limit.error());
          co_return json_response(200, alert_list_view(ctl().fleet().monitor().alerts(
                                           caller, static_cast<size_t>(*limit))));
        });
  keyed("POST", "/v1/alerts/{id}/ack",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          auto acked = co_await mutate(
              request, [&](Controller& c) { return c.fleet().monitor().acknowledge(caller, id); });
          if (!acked) co_return problem_response(acked.error());
          co_return json_response(200, api::AlertAcknowledged{.id = id});
        });
  keyed("GET", "/v1/alerts/rules",
        [this](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
          co_return result_response(200, ctl().fleet().monitor().rules(caller), rule_list_view);
        });
  keyed("POST", "/v1/alerts/rules",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          co_return co_await operator_write(
              caller, request, monitor::rule_from_json,
              [&](Controller& c, auto rule) {
                return c.fleet().monitor().put_rule(caller, std::move(rule));
              },
              rule_view);
        });
  keyed("DELETE", "/v1/alerts/rules/{name}",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string name = params.find("name")->second;
          auto deleted = co_await mutate(request, [&](Controller& c) {
            return c.fleet().monitor().delete_rule(caller, name);
          });
          if (!deleted) co_return problem_response(deleted.error());
          co_return Response{204, "", "", {}, {}};
        });
  keyed("PUT", "/v1/instances/{id}/idle-alert",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          auto body = parse_json_object(request.body);
          if (!body) co_return problem_response(body.error());
          auto idle = parse_idle_alert(*body);
          if (!idle) co_return problem_response(idle.error());
          const std::string id = params.find("id")->second;
          auto saved = co_await mutate(request, [&](Controller& c) {
            return c.fleet().set_idle_alert(caller, id, idle->below_percent, idle->for_ms,
                                            idle->auto_stop);
          });
          co_return result_response(200, saved, rule_view);
        });
}

asio::awaitable<Response> Api::Impl::register_node(Request& request) {
  if (auto presented = agent_certificate(request); !presented) {
    co_return problem_response(presented.error());
  }
  const auto token = bearer_token(request);
  if (!token)
    co_return problem_response(unauthenticated("send 'Authorization: Bearer <join token>'"));
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  auto registration = model::decode_message<model::NodeRegistration>(*body);
  if (!registration) co_return problem_response(registration.error());
  registration->registered_from = request.peer_address;
  const std::string credential = new_secret("gnc_");
  auto result = co_await mutate(request, [&](Controller& c) {
    return c.register_node(hash_secret(*token), std::move(*registration), credential,
                           hash_secret(credential));
  });
  co_return result_response(201, result,
                            [](const model::RegistrationResult& r) { return Json(r); });
}

asio::awaitable<Response> Api::Impl::desired(const std::string& node, Request& request) {
  auto after = query_int(request, "after", 0, 0, INT64_MAX);
  if (!after) co_return problem_response(after.error());
  auto watch = query_flag(request, "watch", false);
  if (!watch) co_return problem_response(watch.error());
  if (*watch) co_return watch_desired(node, *after);
  auto wait_s = query_int(request, "wait_s", 0, 0, kMaxLongPoll.count());
  if (!wait_s) co_return problem_response(wait_s.error());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*wait_s);
  for (;;) {
    auto generation = ctl().fleet().desired_generation(node);
    if (!generation) co_return problem_response(generation.error());
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (*generation > *after || left.count() <= 0) {
      // Built now, before the barrier: everything in it was queued for commit before it. The
      // node is woken as soon as its change is queued (host.h), so the answer is built while
      // the committer writes that change.
      auto state = ctl().fleet().desired_state(node);
      if (!state) co_return problem_response(state.error());
      std::string answer = model::desired_state_json(*state);
      // Only committed state may be acted on: were this set lost in a crash, the agent would
      // run work the restarted server never placed.
      if (!host.all_durable()) co_await host.durable();
      co_return Response{200, "application/json", std::move(answer), {}, {}};
    }
    co_await host.wait("node:" + node, left);
  }
}

Response Api::Impl::watch_desired(const std::string& node, int64_t after) {
  if (auto generation = ctl().fleet().desired_generation(node); !generation) {
    return problem_response(generation.error());
  }
  Response response{200, "application/x-ndjson", "", {}, {}};
  auto sent = std::make_shared<int64_t>(after);
  response.chunks = [this, node, sent]() -> asio::awaitable<std::optional<std::string>> {
    const auto keepalive_at = std::chrono::steady_clock::now() + model::kWatchKeepalive;
    for (;;) {
      auto generation = ctl().fleet().desired_generation(node);
      if (!generation) co_return std::nullopt;  // the node is gone: the stream ends
      if (*generation > *sent) {
        auto state = ctl().fleet().desired_state(node);
        if (!state) co_return std::nullopt;
        std::string line = model::desired_state_json(*state);
        line += '\n';
        *sent = state->generation;
        if (!host.all_durable()) co_await host.durable();
        co_return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          keepalive_at - std::chrono::steady_clock::now());
      if (left.count() <= 0) co_return std::string("\n");
      co_await host.wait("node:" + node, left);
    }
  };
  return response;
}

asio::awaitable<Response> Api::Impl::report(const std::string& node, Request& request) {
  // Read, and its telemetry decoded and ingested, on the telemetry thread.
  auto report = co_await telemetry_ingest.take(node, std::move(request.body));
  if (!report) co_return problem_response(report.error());
  proxy.node_reported(node, report->node_api_address, report->node_api_secret);
  if (report->workloads.size() > kMaxReportedWorkloads) {
    co_return problem_response(
        Error::invalid("invalid_message", "too many workloads in one report"));
  }
  auto generation =
      co_await mutate(request, [&](Controller& c) { return c.apply_report(node, *report); });
  co_return result_response(200, generation, [](int64_t g) { return Json{{"generation", g}}; });
}

asio::awaitable<Response> Api::Impl::upload_logs(const std::string& node, const Request& request) {
  const auto id = query_string(request, "instance");
  auto run = query_int(request, "run", 0, 1, INT64_MAX);
  auto offset = query_int(request, "offset", 0, 0, INT64_MAX);
  if (!id)
    co_return problem_response(
        Error::invalid("invalid_query", "query parameter 'instance' is required"));
  if (!run) co_return problem_response(run.error());
  if (*run < 1)
    co_return problem_response(
        Error::invalid("invalid_query", "query parameter 'run' is required"));
  if (!offset) co_return problem_response(offset.error());
  auto instance = ctl().instances().get(model::platform_principal(), *id);
  if (!instance || (*instance)->node_id != node || *run > (*instance)->run) {
    co_return problem_response(Error::not_found("instance", *id));
  }
  // The request outlives the write: the coroutine holding it waits for the answer.
  auto write = [this, id = *id, run = *run, offset = *offset,
                data = std::string_view(request.body)] {
    LogWrite written{logs.append(id, run, offset, data), 0};
    if (!written.size && written.size.error().code == "log_offset_gap") {
      written.current = logs.size(id, run);
    }
    return written;
  };
  LogWrite written = co_await on_log_thread(std::move(write));
  if (!written.size) {
    if (written.size.error().code == "log_offset_gap") {
      co_return json_response(409, {{"size", written.current}});
    }
    co_return problem_response(written.size.error());
  }
  host.notify("instance:" + *id);
  co_return json_response(200, {{"size", *written.size}});
}

asio::awaitable<Response> Api::Impl::download_upload(const std::string& node,
                                                     const Request& request) {
  if (!uploads) co_return problem_response(uploads_unavailable());
  const auto id = query_string(request, "id").value_or("");
  if (!ctl().fleet().node_uses_workdir(node, id) && !proxy.node_may_read(node, id)) {
    co_return problem_response(Error::not_found("upload", id));
  }
  auto read = [this, id] { return uploads->read(id); };
  auto bytes = co_await on_log_thread(std::move(read));
  if (!bytes) co_return problem_response(bytes.error());
  co_return Response{200, "application/octet-stream", std::move(*bytes), {}, {}};
}

}  // namespace gpurent::server
