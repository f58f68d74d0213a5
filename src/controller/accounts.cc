// The controller's accounts beyond cash (model/accounts.h): package products and purchases, the
// draw-down of packages in metering, their expiry, the balance guard, and monthly invoices.
#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join
#include <spdlog/spdlog.h>

#include "billing/packages.h"
#include "billing/reserved.h"
#include "billing/sla.h"
#include "controller/controller.h"
#include "controller/internal.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

namespace {

// Longest validity an operator may give a product; packages are a prepayment, not a deposit.
constexpr int kMaxValidityDays = 3660;
constexpr int64_t kMaxPackageGpuHours = 10'000'000;

}  // namespace

void Controller::touch_package(const model::Package& package) {
  // Upserted whole: a repeated copy in one batch just writes the latest state last.
  changes_.packages.push_back(package);
}

Result<model::PackageProduct> Controller::set_package_product(const Principal& caller,
                                                              model::PackageProduct product) {
  if (!caller.is_operator()) return fail(forbidden("define package products"));
  if (product.name.empty() || product.name.size() > 64) {
    return fail(Error::invalid("invalid_field", "field 'name' must be 1 to 64 characters"));
  }
  if (!model::find_gpu_type(product.gpu_type)) {
    return fail(Error::unprocessable("unknown_gpu_type",
                                     fmt::format("unknown GPU type '{}'", product.gpu_type)));
  }
  if (product.gpu_hours < 1 || product.gpu_hours > kMaxPackageGpuHours || product.price < 1 ||
      product.validity_days < 1 || product.validity_days > kMaxValidityDays) {
    return fail(Error::invalid(
        "invalid_field",
        fmt::format("a product needs gpu_hours 1..{}, price_micros ≥ 1 and validity_days 1..{}",
                    kMaxPackageGpuHours, kMaxValidityDays)));
  }
  changes_.package_products.push_back(product);
  package_products_.insert_or_assign(product.name, product);
  return product;
}

std::vector<const model::PackageProduct*> Controller::package_products() const {
  std::vector<const model::PackageProduct*> out;
  for (const auto& [name, product] : package_products_) out.push_back(&product);
  return out;
}

Result<CreatedPackage> Controller::buy_package(const Principal& caller, std::string product_name,
                                               std::optional<std::string> idempotency_key,
                                               std::string fingerprint) {
  GPURENT_TRY(replayed, replayed_object(caller.tenant_id, idempotency_key, fingerprint));
  GPURENT_TRY(first, replay_from<CreatedPackage>(packages_, replayed));
  if (first) return std::move(*first);
  const auto product = package_products_.find(product_name);
  if (product == package_products_.end()) {
    std::vector<std::string_view> names;
    for (const auto& [name, offered] : package_products_) names.push_back(name);
    return fail(Error{
        ErrorKind::kNotFound, "package_product_not_found",
        names.empty() ? fmt::format("no package '{}': none is on sale (operators define them "
                                    "with `gpurent packages define`)",
                                    product_name)
                      : fmt::format("no package '{}'; on sale: {} (`gpurent packages products`)",
                                    product_name, fmt::join(names, ", "))});
  }
  GPURENT_CHECK(check_can_pay(caller.tenant_id, product->second.price, "the package's price"));
  const Timestamp t = now();
  model::Package package{
      .id = rng_.id("pkg-"),
      .tenant_id = caller.tenant_id,
      .product = product->second.name,
      .gpu_type = product->second.gpu_type,
      .capacity = product->second.gpu_hours * model::kMilliGpuSecondsPerGpuHour,
      .price = product->second.price,
      .bought_at = t,
      .expires_at = t + std::chrono::days(product->second.validity_days),
      .idempotency_key = idempotency_key.value_or(""),
  };
  GPURENT_CHECK(post(billing::package_purchase(package)));
  remember_idempotency(caller.tenant_id, idempotency_key, std::move(fingerprint), package.id);
  touch_package(package);
  packages_by_tenant_[package.tenant_id].push_back(package.id);
  packages_.emplace(package.id, package);
  guard_balance(package.tenant_id);
  return CreatedPackage{std::move(package), false};
}

Status Controller::check_can_pay(std::string_view tenant_id, Micros amount,
                                 std::string_view what) const {
  const Micros balance = ledger_.balance(model::tenant_cash_account(tenant_id));
  if (balance >= amount) return {};
  return fail(Error{ErrorKind::kPaymentRequired, "insufficient_funds",
                    fmt::format("the balance, {}, does not cover {}, {}; top up first (`gpurent "
                                "balance`)",
                                format_money(balance, options_.currency), what,
                                format_money(amount, options_.currency))});
}

Status Controller::price_reservation(model::Reservation& reservation) const {
  const auto price = prices_.on_demand_price(reservation.gpu_type, reservation.created_at);
  if (!price) {
    return fail(Error::unprocessable(
        "gpu_type_not_priced",
        fmt::format("{} has no price: it cannot be reserved", reservation.gpu_type)));
  }
  const Millis length = reservation.end - reservation.start;
  reservation.price_per_gpu_hour = *price;
  reservation.discount_permille = billing::term_discount_permille(
      prices_.at(reservation.created_at).reserved_discount_permille, length);
  reservation.total =
      billing::term_total(*price, reservation.gpu_count, reservation.discount_permille, length);
  return check_can_pay(reservation.tenant_id, billing::payment_amount(reservation, 0),
                       reservation.payment == model::ReservationPayment::kUpfront
                           ? "the reserved term's price"
                           : "the reserved term's first monthly payment");
}

void Controller::settle_reservation(model::Reservation& reservation) {
  const Timestamp t = now();
  auto transfers = billing::collect_payments(reservation, t);
  if (auto earned = billing::recognise_revenue(reservation, t)) transfers.push_back(*earned);
  if (transfers.empty()) return;
  for (auto& transfer : transfers) {
    if (auto posted = post(std::move(transfer)); !posted) {
      spdlog::error("reservation={} payment failed: {}", reservation.id, posted.error().message);
    }
  }
  changes_.reservations.push_back(reservation);
  guard_balance(reservation.tenant_id);
}

std::vector<const model::Package*> Controller::packages(std::string_view tenant_id) const {
  std::vector<const model::Package*> out;
  const auto it = packages_by_tenant_.find(std::string(tenant_id));
  if (it == packages_by_tenant_.end()) return out;
  for (const auto& id : it->second) out.push_back(&packages_.at(id));
  return out;
}

void Controller::draw_packages(model::UsageRecord& usage, Timestamp until) {
  // A reserved run's GPUs are paid by its reserved term: packages are not spent on them.
  if (usage.pricing == model::PricingModel::kReserved) return;
  const auto it = packages_by_tenant_.find(usage.tenant_id);
  if (it == packages_by_tenant_.end()) return;
  std::vector<model::Package*> usable;
  for (const auto& id : it->second) {
    model::Package& package = packages_.at(id);
    if (!package.expired && package.gpu_type == usage.gpu_type && package.used < package.capacity) {
      usable.push_back(&package);
    }
  }
  if (usable.empty()) return;
  std::sort(usable.begin(), usable.end(), [](const model::Package* a, const model::Package* b) {
    return std::tie(a->expires_at, a->id) < std::tie(b->expires_at, b->id);
  });
  const int64_t before = usage.package_seconds;
  for (auto& transfer : billing::draw_packages(usage, until, usable)) {
    if (auto posted = post(std::move(transfer)); !posted) {
      spdlog::error("package draw for usage={} failed: {}", usage.id, posted.error().message);
    }
  }
  if (usage.package_seconds == before) return;
  touch_metering(usage);
  for (const model::Package* package : usable) touch_package(*package);
}

void Controller::expire_packages() {
  const Timestamp t = now();
  for (auto& [id, package] : packages_) {
    if (package.expired || t < package.expires_at) continue;
    if (auto transfer = billing::expire_package(package, t)) {
      if (auto posted = post(std::move(*transfer)); !posted) {
        spdlog::error("expiring package={} failed: {}", id, posted.error().message);
      }
    }
    touch_package(package);
  }
}

Result<model::BalanceSettings> Controller::set_balance_settings(const Principal& caller,
                                                                model::BalanceSettings settings) {
  if (!caller.is_operator()) return fail(forbidden("set balance settings"));
  if (!tenants_.contains(settings.tenant_id)) {
    return fail(Error::not_found("tenant", settings.tenant_id));
  }
  if (settings.warning_threshold < 0 || settings.credit_limit < 0) {
    return fail(Error::invalid("invalid_field",
                               "warning_threshold_micros and credit_limit_micros must be ≥ 0"));
  }
  settings.warned = balance_settings(settings.tenant_id).warned;
  balance_settings_.insert_or_assign(settings.tenant_id, settings);
  changes_.balance_settings.push_back(settings);
  guard_balance(settings.tenant_id);
  return balance_settings_.at(settings.tenant_id);
}

model::BalanceSettings Controller::balance_settings(std::string_view tenant_id) const {
  const auto it = balance_settings_.find(tenant_id);
  if (it != balance_settings_.end()) return it->second;
  return model::BalanceSettings{.tenant_id = std::string(tenant_id)};
}

bool Controller::over_credit_limit(std::string_view tenant_id) const {
  return ledger_.balance(model::tenant_cash_account(tenant_id)) <
         -balance_settings(tenant_id).credit_limit;
}

bool Controller::guard_balance(std::string_view tenant_id) {
  const Micros balance = ledger_.balance(model::tenant_cash_account(tenant_id));
  model::BalanceSettings settings = balance_settings(tenant_id);
  const bool low = balance < settings.warning_threshold;
  if (low != settings.warned) {
    // Once per crossing: warned stays set until the balance is back at or above the threshold.
    settings.warned = low;
    if (low) {
      record_event(tenant_id, tenant_id, model::event_kind::kBalanceLow,
                   fmt::format("balance {} is below the warning threshold {}",
                               format_micros(balance), format_micros(settings.warning_threshold)));
    }
    changes_.balance_settings.push_back(settings);
    balance_settings_.insert_or_assign(std::string(tenant_id), std::move(settings));
  }
  return over_credit_limit(tenant_id);
}

Result<std::vector<billing::Month>> Controller::invoice_months(const Principal& caller,
                                                               std::string_view tenant_id) const {
  GPURENT_CHECK(balance(caller, tenant_id));
  return billing::invoice_months(tenant_id, ledger_.transfers_of(tenant_id));
}

Result<billing::Invoice> Controller::invoice(const Principal& caller, std::string_view tenant_id,
                                             billing::Month month) const {
  GPURENT_CHECK(balance(caller, tenant_id));
  // Usage records are "<instance>/<run>"; the run's type is its own (a restart may move types).
  const auto describe = [&](std::string_view run) {
    const auto colon = run.rfind(':');
    const auto instance = instances_.find(run.substr(0, colon));
    const auto usage =
        usage_.find(fmt::format("{}/{}", run.substr(0, colon), run.substr(colon + 1)));
    if (instance == instances_.end() || usage == usage_.end()) return std::string(run);
    return fmt::format("{} {}", usage->second.gpu_type,
                       model::to_string(instance->second.spec.pricing));
  };
  return billing::build_invoice(tenant_id, options_.currency, month,
                                ledger_.transfers_of(tenant_id), describe);
}

void Controller::record_downtime_start(const model::Instance& instance, Timestamp at,
                                       std::string_view cause) {
  if (open_downtime_.contains(instance.id)) return;
  model::Downtime record{.id = fmt::format("dt:{}:{}", instance.id, to_unix_ms(at)),
                         .tenant_id = instance.tenant_id,
                         .instance_id = instance.id,
                         .cause = std::string(cause),
                         .start = at};
  changes_.downtime.push_back(record);
  open_downtime_.emplace(instance.id, record.id);
  downtime_of_[instance.id].push_back(record.id);
  downtime_.emplace(record.id, std::move(record));
}

void Controller::record_downtime_end(const model::Instance& instance, Timestamp at) {
  const auto open = open_downtime_.find(instance.id);
  if (open == open_downtime_.end()) return;
  model::Downtime& record = downtime_.at(open->second);
  record.end = std::max(at, record.start);
  changes_.downtime.push_back(record);
  open_downtime_.erase(open);
}

std::vector<const model::Downtime*> Controller::downtime(std::string_view instance_id) const {
  std::vector<const model::Downtime*> out;
  const auto it = downtime_of_.find(std::string(instance_id));
  if (it == downtime_of_.end()) return out;
  for (const auto& id : it->second) out.push_back(&downtime_.at(id));
  return out;
}

void Controller::settle_sla_credits() {
  const billing::Month current = billing::month_of(now());
  const billing::Month last = billing::month_of(current.start() - Millis(1));
  if (sla_settled_month_ == last.id()) return;
  sla_settled_month_ = last.id();
  // Downtime seconds in the month, by instance (an open record counts to the month's end).
  std::map<std::string, int64_t> down;
  for (const auto& [id, record] : downtime_) {
    const Timestamp from = std::max(record.start, last.start());
    const Timestamp to = std::min(record.end.value_or(last.end()), last.end());
    if (to > from) down[record.instance_id] += (to - from).count() / 1000;
  }
  // Each tenant's transfers, unpacked from the ledger once for all its instances.
  std::map<std::string, std::vector<model::Transfer>, std::less<>> transfers_of;
  for (const auto& [instance_id, down_seconds] : down) {
    const model::Instance& instance = instances_.at(instance_id);
    auto transfers = transfers_of.find(instance.tenant_id);
    if (transfers == transfers_of.end()) {
      transfers =
          transfers_of.emplace(instance.tenant_id, ledger_.transfers_of(instance.tenant_id)).first;
    }
    const std::string id = fmt::format("sla:{}:{}", instance_id, last.id());
    billing::SlaMonth month{.down_seconds = down_seconds};
    bool credited = false;
    // Seconds billed in the month: a usage id carries the run's cumulative billed seconds.
    std::map<std::string, int64_t> seconds_before;
    const std::string prefix = fmt::format("usage:{}:", instance_id);
    for (const auto& t : transfers->second) {
      credited |= t.id == id;
      if (!t.id.starts_with(prefix)) continue;
      const auto colon = t.id.rfind(':');
      int64_t seconds = 0;
      if (std::from_chars(t.id.data() + colon + 1, t.id.data() + t.id.size(), seconds).ec !=
          std::errc()) {
        continue;
      }
      int64_t& before = seconds_before[t.id.substr(0, colon)];
      if (t.at >= last.start() && t.at < last.end()) {
        month.up_seconds += seconds - before;
        month.gpu_charges += t.amount;
      }
      before = seconds;
    }
    const Micros credit = billing::sla_credit(month);
    if (credited || credit <= 0) continue;
    // Dated in the month it is for, so that month's invoice shows it.
    auto posted = post({.id = id,
                        .at = last.end() - Millis(1),
                        .from_account = std::string(model::kSlaCreditsAccount),
                        .to_account = model::tenant_cash_account(instance.tenant_id),
                        .amount = credit,
                        .kind = model::TransferKind::kCredit,
                        .tenant_id = instance.tenant_id,
                        .reference = instance_id});
    if (!posted) {
      spdlog::error("SLA credit {} failed: {}", id, posted.error().message);
      continue;
    }
    record_event(instance.tenant_id, instance_id, model::event_kind::kSlaCredit,
                 fmt::format("{}: availability {} s up, {} s down: credit {} ({} % of {})",
                             last.id(), month.up_seconds, month.down_seconds, format_micros(credit),
                             billing::sla_credit_percent(month), format_micros(month.gpu_charges)));
  }
}

}  // namespace gpurent::controller
