#include "server/api_impl.h"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <unordered_map>
#include "api/accounts.h"
#include "api/billing.h"
#include "billing/revenue.h"
#include "common/random.h"
#include "model/agent_protocol.h"
#include "model/gpu_catalog.h"
#include "model/service_path.h"
#include "model/workload_fields.h"
#include "monitor/alerts_json.h"
#include "server/account_views.h"
#include "server/price_views.h"
#include "server/request_bodies.h"
#include "server/views.h"

namespace gpurent::server {

void Api::Impl::add_billing_routes() {
  keyed("GET", "/v1/billing/balance",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto named = tenant_query(caller, request);
          if (!named) co_return problem_response(named.error());
          const std::string tenant = named->value_or(caller.tenant_id);
          auto balance = ctl().accounts().balance(caller, tenant);
          co_return result_response(200, balance, [&](Micros amount) {
            return api::Balance{.tenant_id = tenant,
                                .balance_micros = amount,
                                .currency = ctl().options().currency};
          });
        });
  keyed("GET", "/v1/billing/usage",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto tenant = billed_tenant(caller, request);
          if (!tenant) co_return problem_response(tenant.error());
          Json items = Json::array();
          Micros total = 0;
          for (const auto* usage : ctl().metering().usage(*tenant)) {
            items.push_back(usage_view(*usage));
            total += usage->charged;
          }
          // Storage: one line per volume of the tenant, deleted ones included (they were billed).
          Json volumes = Json::array();
          for (const auto* volume : ctl().volumes().of_tenant(*tenant)) {
            volumes.push_back(volume_usage_view(*volume));
            total += volume->charged;
          }
          co_return json_response(200, {{"tenant_id", *tenant},
                                        {"items", std::move(items)},
                                        {"volumes", std::move(volumes)},
                                        {"total_micros", total},
                                        {"currency", ctl().options().currency},
                                        {"next_cursor", nullptr}});
        });
  keyed("GET", "/v1/billing/transfers",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto tenant = billed_tenant(caller, request);
          if (!tenant) co_return problem_response(tenant.error());
          Json items = Json::array();
          for (const auto& transfer : ctl().accounts().transfers(*tenant))
            items.push_back(transfer_view(transfer, ctl().options().currency));
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("POST", "/v1/billing/topups",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return topup(caller, request);
        });
}

void Api::Impl::add_tenant_routes() {
  keyed("POST", "/v1/tenants",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return create_tenant(caller, request);
        });
  keyed("GET", "/v1/tenants",
        [this](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
          if (auto allowed = require_operator(caller); !allowed)
            co_return problem_response(allowed.error());
          Json items = Json::array();
          for (const auto* tenant : ctl().accounts().tenants(caller)) {
            Json view = tenant_view(*tenant);
            view["balance_micros"] = *ctl().accounts().balance(caller, tenant->id);
            view["currency"] = ctl().options().currency;
            items.push_back(std::move(view));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("POST", "/v1/api-keys",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return create_api_key(caller, request);
        });
  keyed("GET", "/v1/api-keys",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          // The caller's tenant, or (operators) ?tenant=; another tenant's is not found.
          auto tenant = billed_tenant(caller, request);
          if (!tenant) co_return problem_response(tenant.error());
          Json items = Json::array();
          for (const auto* key : ctl().accounts().credentials().api_keys(caller, *tenant)) {
            items.push_back(api_key_view(*key));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("DELETE", "/v1/api-keys/{id}",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          auto revoked = co_await mutate(request, [&](Controller& c) {
            return c.accounts().credentials().revoke_api_key(caller, id);
          });
          if (!revoked) co_return problem_response(revoked.error());
          co_return Response{204, "", "", {}, {}};
        });
  keyed("POST", "/v1/join-tokens",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return create_join_token(caller, request);
        });
}

void Api::Impl::add_account_routes() {
  keyed("PUT", "/v1/packages/products",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          co_return co_await operator_write(
              caller, request, parse_package_product,
              [&](Controller& c, auto product) {
                return c.accounts().packages().set_product(caller, std::move(product));
              },
              [this](const model::PackageProduct& product) {
                return package_product_view(product, ctl().options().currency);
              });
        });
  keyed("GET", "/v1/packages/products",
        [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
          Json items = Json::array();
          for (const auto* product : ctl().accounts().packages().products()) {
            items.push_back(package_product_view(*product, ctl().options().currency));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("POST", "/v1/packages",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return create_object(
              caller, request, parse_package_purchase,
              [](Controller& c, const Principal& buyer, std::string product,
                 const std::optional<std::string>& key, std::string fingerprint) {
                return c.accounts().packages().buy(buyer, std::move(product), key,
                                                   std::move(fingerprint));
              },
              [](const controller::CreatedPackage& created) {
                return std::pair(Json(package_view(created.package)), created.replayed);
              },
              "/v1/packages/");
        });
  keyed("GET", "/v1/packages",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto tenant = billed_tenant(caller, request);
          if (!tenant) co_return problem_response(tenant.error());
          Json items = Json::array();
          for (const auto* package : ctl().accounts().packages().of_tenant(*tenant)) {
            items.push_back(package_view(*package));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("GET", "/v1/packages/{id}",
        [this](const Principal& caller, Request&,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          for (const auto* package : ctl().accounts().packages().of_tenant(caller.tenant_id)) {
            if (package->id == id) {
              co_return json_response(200, package_view(*package));
            }
          }
          co_return problem_response(Error::not_found("package", id));
        });
  keyed("PUT", "/v1/billing/settings",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          co_return co_await operator_write(
              caller, request, parse_balance_settings,
              [&](Controller& c, auto settings) {
                settings.tenant_id = c.accounts().tenant_id_for(caller, settings.tenant_id);
                return c.accounts().set_balance_settings(caller, std::move(settings));
              },
              [&](const model::BalanceSettings& settings) {
                return balance_settings_view(settings, ctl().options().currency);
              });
        });
  keyed("GET", "/v1/billing/settings",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto tenant = billed_tenant(caller, request);
          if (!tenant) co_return problem_response(tenant.error());
          co_return json_response(200,
                                  balance_settings_view(ctl().accounts().balance_settings(*tenant),
                                                        ctl().options().currency));
        });
  keyed("GET", "/v1/billing/invoices",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto tenant = billed_tenant(caller, request);
          if (!tenant) co_return problem_response(tenant.error());
          auto months = ctl().metering().invoice_months(caller, *tenant);
          if (!months) co_return problem_response(months.error());
          Json items = Json::array();
          for (const auto& month : *months) {
            auto invoice = ctl().metering().invoice(caller, *tenant, month);
            if (!invoice) co_return problem_response(invoice.error());
            items.push_back(invoice_summary_view(*invoice));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("GET", "/v1/billing/revenue",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          if (auto allowed = require_operator(caller); !allowed)
            co_return problem_response(allowed.error());
          auto report = revenue(caller, request);
          co_return result_response(200, report, [&](const billing::RevenueReport& r) {
            return api::RevenueReport{.from = r.from,
                                      .to = r.to,
                                      .currency = ctl().options().currency,
                                      .total_micros = r.total,
                                      .credits_micros = r.credits,
                                      .by_gpu_type = r.by_gpu_type,
                                      .by_tenant = r.by_tenant};
          });
        });
  keyed("GET", "/v1/billing/invoices/{id}",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          auto tenant = billed_tenant(caller, request);
          if (!tenant) co_return problem_response(tenant.error());
          const std::string id = params.find("id")->second;
          const auto month = billing::parse_month(id);
          if (!month) co_return problem_response(Error::not_found("invoice", id));
          const auto format = query_string(request, "format");
          if (format && *format != "csv" && *format != "json") {
            co_return problem_response(
                Error::invalid("invalid_query", "query parameter 'format' must be json or csv"));
          }
          auto invoice = ctl().metering().invoice(caller, *tenant, *month);
          if (!invoice) co_return problem_response(invoice.error());
          const bool csv =
              format ? *format == "csv" : request.accept.find("text/csv") != std::string::npos;
          if (csv) {
            co_return Response{
                200, "text/csv; charset=utf-8", billing::invoice_csv(*invoice), {}, {}};
          }
          co_return json_response(200, invoice_view(*invoice));
        });
}

Result<billing::RevenueReport> Api::Impl::revenue(const Principal& caller, const Request& request) {
  billing::RevenueReport report;
  for (const auto& [name, fallback] : {std::pair{"from", from_unix_ms(0)},
                                       std::pair{"to", *parse_rfc3339("9999-12-31T23:59:59Z")}}) {
    Timestamp& bound = std::string_view(name) == "from" ? report.from : report.to;
    bound = fallback;
    if (const auto text = query_string(request, name)) {
      const auto parsed = parse_rfc3339(*text);
      if (!parsed) {
        return fail(Error::invalid("invalid_query",
                                   fmt::format("query parameter '{}' must be RFC 3339", name)));
      }
      bound = *parsed;
    }
  }
  if (report.to <= report.from) {
    return fail(Error::invalid("invalid_query", "'to' must be after 'from'"));
  }
  for (const auto* tenant : ctl().accounts().tenants(caller)) {
    // "<instance>:<run>", package or reservation id -> type
    std::map<std::string, std::string> type_of;
    for (const auto* reservation : ctl().reservations().list(caller)) {
      if (reservation->tenant_id == tenant->id) type_of[reservation->id] = reservation->gpu_type;
    }
    for (const auto* usage : ctl().metering().usage(tenant->id)) {
      type_of[fmt::format("{}:{}", usage->instance_id, usage->run)] = usage->gpu_type;
    }
    for (const auto* package : ctl().accounts().packages().of_tenant(tenant->id)) {
      type_of[package->id] = package->gpu_type;
    }
    billing::add_revenue(report, ctl().accounts().transfers(tenant->id),
                         [&](const model::Transfer& t) {
                           if (t.id.starts_with("volume:")) return std::string("storage");
                           // A usage id is "usage:<instance>:<run>:<seconds>"; a package's or a
                           // reservation's transfers refer to it by id.
                           std::string key = t.reference;
                           if (t.id.starts_with("usage:"))
                             key = t.id.substr(6, t.id.rfind(':') - 6);
                           const auto it = type_of.find(key);
                           return it == type_of.end() ? std::string("other") : it->second;
                         });
  }
  return report;
}

void Api::Impl::add_reservation_routes() {
  keyed("POST", "/v1/reservations",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return create_reservation(caller, request);
        });
  keyed("GET", "/v1/reservations",
        [this](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
          Json items = Json::array();
          for (const auto* reservation : ctl().reservations().list(caller)) {
            items.push_back(reservation_view(*reservation, ctl().options().currency));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("DELETE", "/v1/reservations/{id}",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          auto result = co_await mutate(
              request, [&](Controller& c) { return c.cancel_reservation(caller, id); });
          co_return result_response(200, result, [&](const model::Reservation& r) {
            return reservation_view(r, ctl().options().currency);
          });
        });
  keyed("POST", "/v1/reservations/quote",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto body = parse_json_object(request.body);
          if (!body) co_return problem_response(body.error());
          auto parsed = parse_reservation(*body);
          if (!parsed) co_return problem_response(parsed.error());
          co_return result_response(200, ctl().reservations().quote(caller, std::move(*parsed)),
                                    [&](const model::Reservation& r) {
                                      return reservation_view(r, ctl().options().currency);
                                    });
        });
}

void Api::Impl::add_volume_routes() {
  keyed("POST", "/v1/volumes",
        [this](const Principal& caller, Request& request, const PathParams&) {
          return create_object(
              caller, request, parse_volume,
              [](Controller& c, const Principal& who, controller::NewVolume volume,
                 const std::optional<std::string>& key, std::string fingerprint) {
                return c.volumes().create(who, std::move(volume), key, std::move(fingerprint));
              },
              [](const controller::CreatedVolume& created) {
                return std::pair(volume_view(created.volume), created.replayed);
              },
              "/v1/volumes/");
        });
  keyed("GET", "/v1/volumes",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto named = tenant_query(caller, request);
          if (!named) co_return problem_response(named.error());
          Json items = Json::array();
          for (const auto* volume : ctl().volumes().list(caller, *named)) {
            items.push_back(volume_view(*volume));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("GET", "/v1/volumes/{id}",
        [this](const Principal& caller, Request&,
               const PathParams& params) -> asio::awaitable<Response> {
          co_return result_response(200, ctl().volumes().get(caller, params.find("id")->second),
                                    [](const model::Volume* v) { return volume_view(*v); });
        });
  keyed("DELETE", "/v1/volumes/{id}",
        [this](const Principal& caller, Request& request,
               const PathParams& params) -> asio::awaitable<Response> {
          const std::string id = params.find("id")->second;
          auto result = co_await mutate(
              request, [&](Controller& c) { return c.volumes().remove(caller, id); });
          if (!result) co_return problem_response(result.error());
          co_return Response{204, "", "", {}, {}};
        });
}

void Api::Impl::add_price_routes() {
  keyed("GET", "/v1/prices",
        [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
          const Timestamp now = ctl().pricing().now();
          api::Prices prices{.current = price_version_view(ctl().pricing().book().at(now))};
          for (const auto* v : ctl().pricing().book().upcoming(now)) {
            prices.upcoming.push_back(price_version_view(*v));
          }
          co_return json_response(200, prices);
        });
  keyed("PUT", "/v1/prices",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          co_return co_await operator_write(
              caller, request, parse_price_change,
              [&](Controller& c, const auto& change) { return c.set_prices(caller, change); },
              price_version_view);
        });
  keyed("GET", "/v1/prices/history",
        [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
          Json items = Json::array();
          for (const auto& v : ctl().pricing().book().history())
            items.push_back(price_version_view(v));
          co_return json_response(200, whole_list(std::move(items)));
        });
  keyed("GET", "/v1/spot-prices",
        [this](const Principal&, Request& request, const PathParams&) -> asio::awaitable<Response> {
          co_return spot_prices(request);
        });
  keyed("POST", "/v1/estimate",
        [this](const Principal&, Request& request, const PathParams&) -> asio::awaitable<Response> {
          auto body = parse_json_object(request.body);
          if (!body) co_return problem_response(body.error());
          auto asked = parse_estimate(*body);
          if (!asked) co_return problem_response(asked.error());
          auto spec = with_template(*body, std::move(asked->spec));
          if (!spec) co_return problem_response(spec.error());
          co_return result_response(200, estimate(*spec, asked->work),
                                    [](const api::Estimate& e) { return e; });
        });
}

Result<api::Estimate> Api::Impl::estimate(const model::InstanceSpec& spec,
                                          const std::optional<billing::TrainingWork>& work) {
  GPURENT_TRY(hourly, ctl().pricing().estimate(spec));
  api::Estimate view = estimate_view(hourly, ctl().pricing().book().currency());
  if (work) {
    GPURENT_TRY(timed, work_estimate_view(ctl().fleet().benchmarks(), spec, hourly, *work));
    view.work = std::move(timed);
  }
  return view;
}

Response Api::Impl::spot_prices(const Request& request) {
  const Timestamp now = ctl().pricing().now();
  const auto time_param = [&](const std::string& name, Timestamp fallback) -> Result<Timestamp> {
    const auto text = query_string(request, name);
    if (!text) return fallback;
    const auto t = parse_rfc3339(*text);
    if (!t) {
      return fail(Error::invalid(
          "invalid_query", fmt::format("query parameter '{}' must be an RFC 3339 time", name)));
    }
    return *t;
  };
  auto from = time_param("from", now - std::chrono::hours(24));
  if (!from) return problem_response(from.error());
  auto to = time_param("to", now + Millis(1));
  if (!to) return problem_response(to.error());
  if (*to <= *from) {
    return problem_response(Error::invalid("invalid_query", "'to' must be after 'from'"));
  }
  std::vector<std::string> types;
  if (auto type = query_string(request, "gpu_type")) {
    if (!ctl().pricing().book().on_demand_price(*type, now)) {
      return problem_response(Error::not_found("gpu_type", *type));
    }
    types.push_back(*type);
  } else {
    for (const auto& [type, price] : ctl().pricing().book().at(now).gpu_per_hour)
      types.push_back(type);
  }
  const auto& market = ctl().pricing().spot_market();
  const auto& book = ctl().pricing().book();
  api::SpotPrices prices{.currency = book.currency()};
  for (const auto& type : types) {
    const auto on_demand = book.on_demand_price(type, now);
    api::SpotMarket& view = prices.items.emplace_back(api::SpotMarket{
        .gpu_type = type,
        .current_per_gpu_hour_micros = market.price_at(book, type, now).value_or(0),
        .floor_per_gpu_hour_micros =
            billing::spot_price(on_demand.value_or(0), book.at(now).spot_floor_permille, 0),
        .cap_per_gpu_hour_micros = on_demand.value_or(0)});
    for (const auto& point : market.history(type, *from, *to)) {
      view.points.push_back(
          spot_point_view(point, market.price_at(book, type, point.at).value_or(0)));
    }
  }
  return json_response(200, prices);
}

void Api::Impl::add_quota_routes() {
  keyed("PUT", "/v1/tenants/{id}/quota",
        [this](const Principal& caller, Request& request, const PathParams& params) {
          return set_quota(caller, request,
                           ctl().accounts().tenant_id_for(caller, params.find("id")->second));
        });
  keyed("GET", "/v1/tenants/{id}/quota",
        [this](const Principal& caller, Request&,
               const PathParams& params) -> asio::awaitable<Response> {
          co_return result_response(
              200,
              ctl().accounts().quotas().get(
                  caller, ctl().accounts().tenant_id_for(caller, params.find("id")->second)),
              quota_view);
        });
}

asio::awaitable<Response> Api::Impl::create_reservation(const Principal& caller, Request& request) {
  return create_object(
      caller, request, parse_reservation, &Controller::create_reservation,
      [this](const controller::CreatedReservation& created) {
        return std::pair(reservation_view(created.reservation, ctl().options().currency),
                         created.replayed);
      },
      "/v1/reservations/");
}

asio::awaitable<Response> Api::Impl::set_quota(const Principal& caller, Request& request,
                                               std::string tenant_id) {
  co_return co_await operator_write(
      caller, request, [&](const Json& body) { return parse_quota(body, std::move(tenant_id)); },
      [&](Controller& c, auto quota) { return c.set_quota(caller, std::move(quota)); }, quota_view);
}

asio::awaitable<Response> Api::Impl::topup(const Principal& caller, Request& request) {
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  if (auto known = reject_unknown_fields(*body, {"tenant_id", "amount_micros", "reference"});
      !known) {
    co_return problem_response(known.error());
  }
  auto tenant = required_string(*body, "tenant_id", kMaxNameLength);
  if (!tenant) co_return problem_response(tenant.error());
  auto amount = required_int(*body, "amount_micros", 1, int64_t{1'000'000'000} * kMicrosPerUnit);
  if (!amount) co_return problem_response(amount.error());
  auto reference = optional_string(*body, "reference", 256);
  if (!reference) co_return problem_response(reference.error());
  auto key = idempotency_key(request);
  if (!key) co_return problem_response(key.error());
  auto result = co_await mutate(request, [&](Controller& c) {
    return c.accounts().topup(caller, c.accounts().tenant_id_for(caller, *tenant), *amount,
                              reference->value_or(""), *key);
  });
  co_return result_response(201, result, [&](const controller::TopupResult& r) {
    return api::TopupResult{.transfer_id = r.transfer.id,
                            .tenant_id = r.transfer.tenant_id,
                            .amount_micros = r.transfer.amount,
                            .balance_micros = r.balance,
                            .currency = ctl().options().currency};
  });
}

asio::awaitable<Response> Api::Impl::create_tenant(const Principal& caller, Request& request) {
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  if (auto known = reject_unknown_fields(*body, {"name"}); !known)
    co_return problem_response(known.error());
  auto name = required_string(*body, "name", kMaxNameLength);
  if (!name) co_return problem_response(name.error());
  if (!valid_name(*name)) {
    co_return problem_response(
        invalid_field("name", "may hold only letters, digits, '-', '_' and '.'"));
  }
  auto tenant = co_await mutate(
      request, [&](Controller& c) { return c.accounts().create_tenant(caller, *name); });
  co_return result_response(201, tenant, [](const model::Tenant& t) { return tenant_view(t); });
}

asio::awaitable<Response> Api::Impl::create_api_key(const Principal& caller, Request& request) {
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  auto parsed = parse_api_key(*body);
  if (!parsed) co_return problem_response(parsed.error());
  controller::NewApiKey key = std::move(*parsed);
  key.tenant_id = ctl().accounts().tenant_id_for(caller, key.tenant_id);
  const std::string secret = new_secret("gpr_");
  key.secret_hash = hash_secret(secret);
  key.prefix = secret.substr(0, 12);
  auto created = co_await mutate(request, [&](Controller& c) {
    return c.accounts().credentials().create_api_key(caller, std::move(key));
  });
  co_return result_response(201, created, [&](const model::ApiKey& k) {
    Json view = api_key_view(k);
    view["key"] = secret;
    return view;
  });
}

asio::awaitable<Response> Api::Impl::create_join_token(const Principal& caller, Request& request) {
  auto body = parse_json_object(request.body.empty() ? "{}" : request.body);
  if (!body) co_return problem_response(body.error());
  if (auto known = reject_unknown_fields(*body, {"description", "ttl_s"}); !known) {
    co_return problem_response(known.error());
  }
  auto description = optional_string(*body, "description", 256);
  if (!description) co_return problem_response(description.error());
  auto ttl = optional_int(*body, "ttl_s", 60, 365 * 24 * 3600);
  if (!ttl) co_return problem_response(ttl.error());
  const std::string secret = new_secret("gjt_");
  auto token = co_await mutate(request, [&](Controller& c) {
    return c.accounts().credentials().create_join_token(
        caller, description->value_or(""), std::chrono::seconds(ttl->value_or(24 * 3600)),
        hash_secret(secret));
  });
  co_return result_response(201, token, [&](const model::JoinToken& t) {
    return api::JoinToken{
        .id = t.id, .token = secret, .description = t.description, .expires_at = t.expires_at};
  });
}

}  // namespace gpurent::server
