#include "server/account_views.h"

namespace gpurent::server {
namespace {

Json lines_view(const std::vector<billing::InvoiceLine>& lines) {
  Json out = Json::array();
  for (const auto& line : lines) {
    out.push_back({{"category", line.category},
                   {"description", line.description},
                   {"quantity", line.quantity},
                   {"unit", line.unit},
                   {"amount_micros", line.amount}});
  }
  return out;
}

}  // namespace

Json package_product_view(const model::PackageProduct& product, std::string_view currency) {
  return {{"name", product.name},           {"gpu_type", product.gpu_type},
          {"gpu_hours", product.gpu_hours}, {"price_micros", product.price},
          {"currency", currency},           {"validity_days", product.validity_days}};
}

Json package_view(const model::Package& package) {
  const bool expired = package.expired;
  const int64_t remaining = expired ? 0 : package.capacity - package.used;
  return {{"id", package.id},
          {"tenant_id", package.tenant_id},
          {"product", package.product},
          {"gpu_type", package.gpu_type},
          {"gpu_hours", package.capacity / model::kMilliGpuSecondsPerGpuHour},
          // GPU-seconds, exact: remaining_gpu_hours is this / 3600 for people.
          {"remaining_gpu_seconds", remaining / 1000},
          {"remaining_gpu_hours",
           static_cast<double>(remaining) / static_cast<double>(model::kMilliGpuSecondsPerGpuHour)},
          {"price_micros", package.price},
          {"recognised_micros", package.recognised},
          {"bought_at", format_rfc3339(package.bought_at)},
          {"expires_at", format_rfc3339(package.expires_at)},
          {"state", expired ? "expired" : (remaining == 0 ? "used_up" : "active")}};
}

Json balance_settings_view(const model::BalanceSettings& settings, std::string_view currency) {
  return {{"tenant_id", settings.tenant_id},
          {"currency", currency},
          {"warning_threshold_micros", settings.warning_threshold},
          {"credit_limit_micros", settings.credit_limit},
          {"below_warning_threshold", settings.warned}};
}

Json invoice_summary_view(const billing::Invoice& invoice) {
  return {{"id", invoice.id},
          {"tenant_id", invoice.tenant_id},
          {"period_start", format_rfc3339(invoice.period_start)},
          {"period_end", format_rfc3339(invoice.period_end)},
          {"currency", invoice.currency},
          {"opening_balance_micros", invoice.opening_balance},
          {"charges_micros", invoice.charges},
          {"credits_micros", invoice.credits},
          {"payments_micros", invoice.payments},
          {"closing_balance_micros", invoice.closing_balance}};
}

Json invoice_view(const billing::Invoice& invoice) {
  Json view = invoice_summary_view(invoice);
  view["lines"] = lines_view(invoice.lines);
  view["prepaid"] = lines_view(invoice.prepaid);
  return view;
}

}  // namespace gpurent::server
