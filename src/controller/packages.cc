#include "controller/packages.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join
#include <spdlog/spdlog.h>

#include "billing/packages.h"
#include "controller/accounts.h"
#include "controller/internal.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

namespace {

// Longest validity an operator may give a product; packages are a prepayment, not a deposit.
constexpr int kMaxValidityDays = 3660;
constexpr int64_t kMaxPackageGpuHours = 10'000'000;

}  // namespace

void Packages::restore(Snapshot& snapshot) {
  for (auto& product : snapshot.package_products) {
    products_.insert_or_assign(product.name, std::move(product));
  }
  std::sort(snapshot.packages.begin(), snapshot.packages.end(), [](const auto& a, const auto& b) {
    return std::tie(a.bought_at, a.id) < std::tie(b.bought_at, b.id);
  });
  for (auto& package : snapshot.packages) {
    by_tenant_[package.tenant_id].push_back(package.id);
    packages_.emplace(package.id, std::move(package));
  }
}

Result<model::PackageProduct> Packages::set_product(const Principal& caller,
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
  c_.changes.package_products.push_back(product);
  products_.insert_or_assign(product.name, product);
  return product;
}

std::vector<const model::PackageProduct*> Packages::products() const {
  std::vector<const model::PackageProduct*> out;
  for (const auto& [name, product] : products_) out.push_back(&product);
  return out;
}

Result<CreatedPackage> Packages::buy(const Principal& caller, std::string product_name,
                                     const std::optional<std::string>& idempotency_key,
                                     std::string fingerprint) {
  GPURENT_TRY(first, replayed_creation<CreatedPackage>(c_.idempotency, caller, idempotency_key,
                                                       fingerprint, packages_));
  if (first) return std::move(*first);
  const auto product = products_.find(product_name);
  if (product == products_.end()) {
    std::vector<std::string_view> names;
    for (const auto& [name, offered] : products_) names.push_back(name);
    return fail(Error{
        ErrorKind::kNotFound, "package_product_not_found",
        names.empty() ? fmt::format("no package '{}': none is on sale (operators define them "
                                    "with `gpurent packages define`)",
                                    product_name)
                      : fmt::format("no package '{}'; on sale: {} (`gpurent packages products`)",
                                    product_name, fmt::join(names, ", "))});
  }
  GPURENT_CHECK(
      c_.accounts.check_can_pay(caller.tenant_id, product->second.price, "the package's price"));
  const Timestamp t = c_.clock.now();
  model::Package package{
      .id = c_.rng.id("pkg-"),
      .tenant_id = caller.tenant_id,
      .product = product->second.name,
      .gpu_type = product->second.gpu_type,
      .capacity = product->second.gpu_hours * model::kMilliGpuSecondsPerGpuHour,
      .price = product->second.price,
      .bought_at = t,
      .expires_at = t + std::chrono::days(product->second.validity_days),
      .idempotency_key = idempotency_key.value_or(""),
  };
  GPURENT_CHECK(c_.accounts.post(billing::package_purchase(package)));
  c_.idempotency.remember(caller.tenant_id, idempotency_key, std::move(fingerprint), package.id);
  touch(package);
  by_tenant_[package.tenant_id].push_back(package.id);
  packages_.emplace(package.id, package);
  c_.accounts.guard_balance(package.tenant_id);
  return CreatedPackage{std::move(package), false};
}

std::vector<const model::Package*> Packages::of_tenant(std::string_view tenant_id) const {
  return listed_under(by_tenant_, tenant_id, packages_);
}

bool Packages::draw(model::UsageRecord& usage, Timestamp until) {
  // A reserved run's GPUs are paid by its reserved term: packages are not spent on them.
  if (usage.pricing == model::PricingModel::kReserved) return false;
  const auto it = by_tenant_.find(usage.tenant_id);
  if (it == by_tenant_.end()) return false;
  std::vector<model::Package*> usable;
  for (const auto& id : it->second) {
    model::Package& package = packages_.at(id);
    if (!package.expired && package.gpu_type == usage.gpu_type && package.used < package.capacity) {
      usable.push_back(&package);
    }
  }
  if (usable.empty()) return false;
  std::sort(usable.begin(), usable.end(), [](const model::Package* a, const model::Package* b) {
    return std::tie(a->expires_at, a->id) < std::tie(b->expires_at, b->id);
  });
  const int64_t before = usage.package_seconds;
  for (auto& transfer : billing::draw_packages(usage, until, usable)) {
    if (auto posted = c_.accounts.post(std::move(transfer)); !posted) {
      spdlog::error("package draw for usage={} failed: {}", usage.id, posted.error().message);
    }
  }
  if (usage.package_seconds == before) return false;
  for (const model::Package* package : usable) touch(*package);
  return true;
}

void Packages::expire() {
  const Timestamp t = c_.clock.now();
  for (auto& [id, package] : packages_) {
    if (package.expired || t < package.expires_at) continue;
    if (auto transfer = billing::expire_package(package, t)) {
      if (auto posted = c_.accounts.post(std::move(*transfer)); !posted) {
        spdlog::error("expiring package={} failed: {}", id, posted.error().message);
      }
    }
    touch(package);
  }
}

}  // namespace gpurent::controller
