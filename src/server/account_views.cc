#include "server/account_views.h"

namespace gpurent::server {
namespace {

std::vector<api::InvoiceLine> lines_view(const std::vector<billing::InvoiceLine>& lines) {
  std::vector<api::InvoiceLine> out;
  out.reserve(lines.size());
  for (const auto& line : lines) {
    out.push_back({.category = line.category,
                   .description = line.description,
                   .quantity = line.quantity,
                   .unit = line.unit,
                   .amount_micros = line.amount});
  }
  return out;
}

}  // namespace

api::PackageProduct package_product_view(const model::PackageProduct& product,
                                         std::string_view currency) {
  return {.name = product.name,
          .gpu_type = product.gpu_type,
          .gpu_hours = product.gpu_hours,
          .price_micros = product.price,
          .validity_days = product.validity_days,
          .currency = std::string(currency)};
}

api::Package package_view(const model::Package& package) {
  const bool expired = package.expired;
  const int64_t remaining = expired ? 0 : package.capacity - package.used;
  return {.id = package.id,
          .tenant_id = package.tenant_id,
          .product = package.product,
          .gpu_type = package.gpu_type,
          .gpu_hours = package.capacity / model::kMilliGpuSecondsPerGpuHour,
          .remaining_gpu_seconds = remaining / 1000,
          .remaining_gpu_hours = static_cast<double>(remaining) /
                                 static_cast<double>(model::kMilliGpuSecondsPerGpuHour),
          .price_micros = package.price,
          .recognised_micros = package.recognised,
          .bought_at = package.bought_at,
          .expires_at = package.expires_at,
          .state = expired ? "expired" : (remaining == 0 ? "used_up" : "active")};
}

api::BalanceSettings balance_settings_view(const model::BalanceSettings& settings,
                                           std::string_view currency) {
  return {.tenant_id = settings.tenant_id,
          .currency = std::string(currency),
          .warning_threshold_micros = settings.warning_threshold,
          .credit_limit_micros = settings.credit_limit,
          .below_warning_threshold = settings.warned};
}

api::InvoiceSummary invoice_summary_view(const billing::Invoice& invoice) {
  return {.id = invoice.id,
          .tenant_id = invoice.tenant_id,
          .period_start = invoice.period_start,
          .period_end = invoice.period_end,
          .currency = invoice.currency,
          .opening_balance_micros = invoice.opening_balance,
          .charges_micros = invoice.charges,
          .credits_micros = invoice.credits,
          .payments_micros = invoice.payments,
          .closing_balance_micros = invoice.closing_balance};
}

api::Invoice invoice_view(const billing::Invoice& invoice) {
  return {.summary = invoice_summary_view(invoice),
          .lines = lines_view(invoice.lines),
          .prepaid = lines_view(invoice.prepaid)};
}

}  // namespace gpurent::server
