// The API's bodies for what money buys and what it costs (docs/api.md "Billing", "Reservations",
// "Packages", "Prices"; docs/openapi.json components of the same names): reservations, packages,
// balance settings, invoices, revenue, the price book, the spot market and estimates, as
// api/workloads.h says of instances. Money is integer micros of `currency`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/json_form.h"
#include "common/clock.h"
#include "common/field_table.h"
#include "common/money.h"
#include "model/instance.h"
#include "model/job.h"

namespace gpurent::api {

// POST /v1/reservations and POST /v1/reservations/quote: a window [start, end), or a reserved term
// of term_days from start.
struct ReservationCreate {
  std::optional<std::string> tenant_id;  // operators: book for another tenant
  std::string gpu_type;
  int64_t gpu_count = 0;
  std::optional<Timestamp> start;  // default now
  std::optional<Timestamp> end;
  std::optional<int64_t> term_days;
  std::optional<model::ReservationPayment> payment;  // default upfront
};

template <class V, schema::Of<ReservationCreate> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id, schema::kOmitEmpty);
  visit("gpu_type", x.gpu_type);
  visit("gpu_count", x.gpu_count);
  visit("start", x.start, schema::kOmitEmpty);
  visit("end", x.end, schema::kOmitEmpty);
  visit("term_days", x.term_days, schema::kOmitEmpty);
  visit("payment", x.payment, schema::kOmitEmpty);
}

// A booking (and what POST /v1/reservations/quote would book).
struct Reservation {
  std::string id;
  std::string tenant_id;
  std::string gpu_type;
  int gpu_count = 0;
  Timestamp start{};
  Timestamp end{};
  model::ReservationState state = model::ReservationState::kBooked;
  Timestamp created_at{};
  model::ReservationPayment payment = model::ReservationPayment::kUpfront;
  Micros price_per_gpu_hour_micros = 0;  // on-demand when booked
  int discount_permille = 0;
  Micros total_micros = 0;  // the whole term's price
  Micros paid_micros = 0;
  bool refunded = false;  // cancelled before its window and paid back
  std::string currency;
};

template <class V, schema::Of<Reservation> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("tenant_id", x.tenant_id);
  visit("gpu_type", x.gpu_type);
  visit("gpu_count", x.gpu_count);
  visit("start", x.start);
  visit("end", x.end);
  visit("state", x.state);
  visit("created_at", x.created_at);
  visit("payment", x.payment);
  visit("price_per_gpu_hour_micros", x.price_per_gpu_hour_micros);
  visit("discount_permille", x.discount_permille);
  visit("total_micros", x.total_micros);
  visit("paid_micros", x.paid_micros);
  visit("refunded", x.refunded);
  visit("currency", x.currency);
}

// A package on sale (GET /v1/packages/products; PUT by operators, without currency).
struct PackageProduct {
  std::string name;
  std::string gpu_type;
  int64_t gpu_hours = 0;
  Micros price_micros = 0;
  int64_t validity_days = 0;
  std::optional<std::string> currency;  // in views: the ledger's
};

template <class V, schema::Of<PackageProduct> S>
void fields(V& visit, S& x) {
  visit("name", x.name);
  visit("gpu_type", x.gpu_type);
  visit("gpu_hours", x.gpu_hours);
  visit("price_micros", x.price_micros);
  visit("validity_days", x.validity_days);
  visit("currency", x.currency, schema::kOmitEmpty);
}

// POST /v1/packages: buy one of a product.
struct PackagePurchase {
  std::string product;
};

template <class V, schema::Of<PackagePurchase> S>
void fields(V& visit, S& x) {
  visit("product", x.product);
}

// A package a tenant holds: prepaid GPU-hours of one type, used before the balance is charged.
struct Package {
  std::string id;
  std::string tenant_id;
  std::string product;
  std::string gpu_type;
  int64_t gpu_hours = 0;
  int64_t remaining_gpu_seconds = 0;  // exact; remaining_gpu_hours is this / 3600 for people
  double remaining_gpu_hours = 0;
  Micros price_micros = 0;
  Micros recognised_micros = 0;  // the part of the price earned so far (used, or expired)
  Timestamp bought_at{};
  Timestamp expires_at{};
  std::string state;  // "active", "used_up" or "expired"
};

template <class V, schema::Of<Package> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("tenant_id", x.tenant_id);
  visit("product", x.product);
  visit("gpu_type", x.gpu_type);
  visit("gpu_hours", x.gpu_hours);
  visit("remaining_gpu_seconds", x.remaining_gpu_seconds);
  visit("remaining_gpu_hours", x.remaining_gpu_hours);
  visit("price_micros", x.price_micros);
  visit("recognised_micros", x.recognised_micros);
  visit("bought_at", x.bought_at);
  visit("expires_at", x.expires_at);
  visit("state", x.state);
}

// PUT /v1/billing/settings: the whole settings; a member left out takes its default.
struct BalanceSettingsSet {
  std::string tenant_id;
  std::optional<Micros> warning_threshold_micros;  // balance.low below this
  std::optional<Micros> credit_limit_micros;       // work stops below -credit_limit
};

template <class V, schema::Of<BalanceSettingsSet> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id);
  visit("warning_threshold_micros", x.warning_threshold_micros, schema::kOmitEmpty);
  visit("credit_limit_micros", x.credit_limit_micros, schema::kOmitEmpty);
}

// GET /v1/billing/settings.
struct BalanceSettings {
  std::string tenant_id;
  std::string currency;
  Micros warning_threshold_micros = 0;
  Micros credit_limit_micros = 0;
  bool below_warning_threshold = false;
};

template <class V, schema::Of<BalanceSettings> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id);
  visit("currency", x.currency);
  visit("warning_threshold_micros", x.warning_threshold_micros);
  visit("credit_limit_micros", x.credit_limit_micros);
  visit("below_warning_threshold", x.below_warning_threshold);
}

struct InvoiceLine {
  std::string category;  // gpu_time, storage, packages, credits, payments, refunds, ...
  std::string description;
  int64_t quantity = 0;
  std::string unit;
  Micros amount_micros = 0;  // charges positive, payments and credits negative
};

template <class V, schema::Of<InvoiceLine> S>
void fields(V& visit, S& x) {
  visit("category", x.category);
  visit("description", x.description);
  visit("quantity", x.quantity);
  visit("unit", x.unit);
  visit("amount_micros", x.amount_micros);
}

// A month's invoice as GET /v1/billing/invoices lists it: its totals.
struct InvoiceSummary {
  std::string id;  // the month, YYYY-MM
  std::string tenant_id;
  Timestamp period_start{};
  Timestamp period_end{};
  std::string currency;
  Micros opening_balance_micros = 0;
  Micros charges_micros = 0;
  Micros credits_micros = 0;
  Micros payments_micros = 0;
  Micros closing_balance_micros = 0;
};

template <class V, schema::Of<InvoiceSummary> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("tenant_id", x.tenant_id);
  visit("period_start", x.period_start);
  visit("period_end", x.period_end);
  visit("currency", x.currency);
  visit("opening_balance_micros", x.opening_balance_micros);
  visit("charges_micros", x.charges_micros);
  visit("credits_micros", x.credits_micros);
  visit("payments_micros", x.payments_micros);
  visit("closing_balance_micros", x.closing_balance_micros);
}

// GET /v1/billing/invoices/{id}: the totals and the lines they sum.
struct Invoice {
  InvoiceSummary summary;
  std::vector<InvoiceLine> lines;
  std::vector<InvoiceLine> prepaid;  // package value earned in the month; not in the totals
};

template <class V, schema::Of<Invoice> S>
void fields(V& visit, S& x) {
  fields(visit, x.summary);
  visit("lines", x.lines);
  visit("prepaid", x.prepaid);
}

// GET /v1/billing/revenue (operators): what tenants paid in [from, to).
struct RevenueReport {
  Timestamp from{};
  Timestamp to{};
  std::string currency;
  Micros total_micros = 0;
  Micros credits_micros = 0;                  // granted in the window; not netted from total
  std::map<std::string, Micros> by_gpu_type;  // or "storage", "other"
  std::map<std::string, Micros> by_tenant;
};

template <class V, schema::Of<RevenueReport> S>
void fields(V& visit, S& x) {
  visit("from", x.from);
  visit("to", x.to);
  visit("currency", x.currency);
  visit("total_micros", x.total_micros);
  visit("credits_micros", x.credits_micros);
  visit("by_gpu_type", x.by_gpu_type);
  visit("by_tenant", x.by_tenant);
}

// A version of the price book (docs/billing.md).
struct PriceVersion {
  int64_t version = 0;
  Timestamp effective_at{};
  Timestamp set_at{};
  std::string currency;
  std::map<std::string, Micros> gpu_per_hour_micros;  // on-demand, by GPU type
  Micros cpu_per_core_hour_micros = 0;
  Micros memory_per_gb_hour_micros = 0;
  Micros disk_per_gb_hour_micros = 0;
  Micros storage_per_gb_month_micros = 0;
  Micros egress_per_gb_micros = 0;
  int64_t minimum_billed_seconds = 0;
  int spot_floor_permille = 0;
  // Term days ("30") -> discount per mille for a reservation at least that long.
  std::map<std::string, int> reserved_discount_permille;
};

template <class V, schema::Of<PriceVersion> S>
void fields(V& visit, S& x) {
  visit("version", x.version);
  visit("effective_at", x.effective_at);
  visit("set_at", x.set_at);
  visit("currency", x.currency);
  visit("gpu_per_hour_micros", x.gpu_per_hour_micros);
  visit("cpu_per_core_hour_micros", x.cpu_per_core_hour_micros);
  visit("memory_per_gb_hour_micros", x.memory_per_gb_hour_micros);
  visit("disk_per_gb_hour_micros", x.disk_per_gb_hour_micros);
  visit("storage_per_gb_month_micros", x.storage_per_gb_month_micros);
  visit("egress_per_gb_micros", x.egress_per_gb_micros);
  visit("minimum_billed_seconds", x.minimum_billed_seconds);
  visit("spot_floor_permille", x.spot_floor_permille);
  visit("reserved_discount_permille", x.reserved_discount_permille);
}

// GET /v1/prices: the version in force and those set to take effect later.
struct Prices {
  PriceVersion current;
  std::vector<PriceVersion> upcoming;
};

template <class V, schema::Of<Prices> S>
void fields(V& visit, S& x) {
  visit("current", x.current);
  visit("upcoming", x.upcoming);
}

// PUT /v1/prices (operators): what changes from effective_at on; the rest is carried over. A GPU
// type's price of null takes the price away.
struct PriceChange {
  std::optional<Timestamp> effective_at;  // default now
  std::optional<std::string> currency;    // must be the ledger's
  std::map<std::string, std::optional<Micros>> gpu_per_hour_micros;
  std::optional<Micros> cpu_per_core_hour_micros;
  std::optional<Micros> memory_per_gb_hour_micros;
  std::optional<Micros> disk_per_gb_hour_micros;
  std::optional<Micros> storage_per_gb_month_micros;
  std::optional<Micros> egress_per_gb_micros;
  std::optional<int64_t> minimum_billed_seconds;
  std::optional<int> spot_floor_permille;
  std::map<std::string, int> reserved_discount_permille;
};

template <class V, schema::Of<PriceChange> S>
void fields(V& visit, S& x) {
  visit("effective_at", x.effective_at, schema::kOmitEmpty);
  visit("currency", x.currency, schema::kOmitEmpty);
  visit("gpu_per_hour_micros", x.gpu_per_hour_micros, schema::kOmitEmpty);
  visit("cpu_per_core_hour_micros", x.cpu_per_core_hour_micros, schema::kOmitEmpty);
  visit("memory_per_gb_hour_micros", x.memory_per_gb_hour_micros, schema::kOmitEmpty);
  visit("disk_per_gb_hour_micros", x.disk_per_gb_hour_micros, schema::kOmitEmpty);
  visit("storage_per_gb_month_micros", x.storage_per_gb_month_micros, schema::kOmitEmpty);
  visit("egress_per_gb_micros", x.egress_per_gb_micros, schema::kOmitEmpty);
  visit("minimum_billed_seconds", x.minimum_billed_seconds, schema::kOmitEmpty);
  visit("spot_floor_permille", x.spot_floor_permille, schema::kOmitEmpty);
  visit("reserved_discount_permille", x.reserved_discount_permille, schema::kOmitEmpty);
}

// A point of the spot market, priced as billing prices it (the version in force at its time).
struct SpotPricePoint {
  std::string gpu_type;
  Timestamp at{};
  Micros price_per_gpu_hour_micros = 0;
  int utilisation_permille = 0;
};

template <class V, schema::Of<SpotPricePoint> S>
void fields(V& visit, S& x) {
  visit("gpu_type", x.gpu_type);
  visit("at", x.at);
  visit("price_per_gpu_hour_micros", x.price_per_gpu_hour_micros);
  visit("utilisation_permille", x.utilisation_permille);
}

// A GPU type's spot market: where its price is, the range it moves in, and its points.
struct SpotMarket {
  std::string gpu_type;
  Micros current_per_gpu_hour_micros = 0;
  Micros floor_per_gpu_hour_micros = 0;
  Micros cap_per_gpu_hour_micros = 0;
  std::vector<SpotPricePoint> points;
};

template <class V, schema::Of<SpotMarket> S>
void fields(V& visit, S& x) {
  visit("gpu_type", x.gpu_type);
  visit("current_per_gpu_hour_micros", x.current_per_gpu_hour_micros);
  visit("floor_per_gpu_hour_micros", x.floor_per_gpu_hour_micros);
  visit("cap_per_gpu_hour_micros", x.cap_per_gpu_hour_micros);
  visit("points", x.points);
}

// GET /v1/spot-prices.
struct SpotPrices {
  std::vector<SpotMarket> items;
  std::string currency;
  std::optional<std::string> next_cursor;  // always null: every market in one page
};

template <class V, schema::Of<SpotPrices> S>
void fields(V& visit, S& x) {
  visit("items", x.items);
  visit("currency", x.currency);
  visit("next_cursor", x.next_cursor);
}

// An estimate's hourly charge, by part.
struct HourlyCharge {
  Micros gpu = 0;
  Micros cpu = 0;
  Micros memory = 0;
  Micros disk = 0;
  Micros total = 0;  // one rounding of the whole, not the sum of the rounded parts
};

template <class V, schema::Of<HourlyCharge> S>
void fields(V& visit, S& x) {
  visit("gpu", x.gpu);
  visit("cpu", x.cpu);
  visit("memory", x.memory);
  visit("disk", x.disk);
  visit("total", x.total);
}

// A spot estimate's range: the price per GPU-hour moves between floor and cap.
struct SpotRange {
  std::optional<Micros> floor_per_gpu_hour_micros;
  std::optional<Micros> cap_per_gpu_hour_micros;
  Micros current_per_gpu_hour_micros = 0;
};

template <class V, schema::Of<SpotRange> S>
void fields(V& visit, S& x) {
  visit("floor_per_gpu_hour_micros", x.floor_per_gpu_hour_micros);
  visit("cap_per_gpu_hour_micros", x.cap_per_gpu_hour_micros);
  visit("current_per_gpu_hour_micros", x.current_per_gpu_hour_micros);
}

// What the work of an estimate (api::EstimateWork) takes on the launch: its images over the
// type's measured throughput (the median of its GPUs' newest ResNet-50 runs of one shape) times
// the launch's GPUs, as if training scaled linearly, at the hourly charge of now.
struct WorkEstimate {
  std::string model;
  int64_t epochs = 0;
  int64_t images = 0;  // epochs x images per epoch
  std::string precision;
  double images_per_s = 0;  // the launch's
  int measured_gpus = 0;    // GPUs of the type whose runs the figure is the median of
  int batch = 0;            // the shape they ran at
  int image_size = 0;
  int64_t seconds = 0;
  Micros cost_micros = 0;  // those seconds (at least the minimum billed) at per_hour_micros.total
};

template <class V, schema::Of<WorkEstimate> S>
void fields(V& visit, S& x) {
  visit("model", x.model);
  visit("epochs", x.epochs);
  visit("images", x.images);
  visit("precision", x.precision);
  visit("images_per_s", x.images_per_s);
  visit("measured_gpus", x.measured_gpus);
  visit("batch", x.batch);
  visit("image_size", x.image_size);
  visit("seconds", x.seconds);
  visit("cost_micros", x.cost_micros);
}

// POST /v1/estimate: what an hour of a launch costs, now (and its work, when given).
struct Estimate {
  std::string gpu_type;
  model::PricingModel pricing = model::PricingModel::kOnDemand;
  std::string currency;
  Micros gpu_price_per_gpu_hour_micros = 0;  // spot: the current spot price
  HourlyCharge per_hour_micros;
  Micros stopped_storage_per_hour_micros = 0;  // the disk while the instance is stopped
  int64_t minimum_billed_seconds = 0;
  Micros minimum_charge_micros = 0;  // what the shortest run is charged
  std::optional<SpotRange> spot;     // spot launches only
  std::optional<WorkEstimate> work;  // when the request gave its work
};

template <class V, schema::Of<Estimate> S>
void fields(V& visit, S& x) {
  visit("gpu_type", x.gpu_type);
  visit("pricing", x.pricing);
  visit("currency", x.currency);
  visit("gpu_price_per_gpu_hour_micros", x.gpu_price_per_gpu_hour_micros);
  visit("per_hour_micros", x.per_hour_micros);
  visit("stopped_storage_per_hour_micros", x.stopped_storage_per_hour_micros);
  visit("minimum_billed_seconds", x.minimum_billed_seconds);
  visit("minimum_charge_micros", x.minimum_charge_micros);
  visit("spot", x.spot);
  visit("work", x.work, schema::kOmitEmpty);
}

}  // namespace gpurent::api
