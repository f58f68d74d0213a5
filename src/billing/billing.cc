#include "billing/billing.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpurent::billing {

namespace {

using model::PricingModel;
using model::UsageKind;

// What the record's rate depends on at t. A stopped disk's rate and reserved work's depend on the
// book alone (no GPU price), whatever their type: one memo entry serves them all.
PricesInForce in_force(const Rates& rates, const model::UsageRecord& usage, Timestamp t) {
  const bool gpu_priced = usage.kind == UsageKind::kRun && usage.pricing != PricingModel::kReserved;
  const std::string_view type = gpu_priced ? std::string_view(usage.gpu_type) : std::string_view();
  const PricingModel pricing = gpu_priced ? usage.pricing : PricingModel::kReserved;
  if (rates.memo) return rates.memo->find(rates.book, rates.spot, type, pricing, t);
  return prices_in_force(rates.book, rates.spot, type, pricing, t);
}

// The record's rate under `in_force`, in micros per rate_period(usage) quantity-seconds (the
// contract's formula).
Micros rate_of(const model::UsageRecord& usage, const PricesInForce& in_force) {
  const model::PriceVersion& prices = *in_force.prices;
  if (usage.kind == UsageKind::kStoppedDisk) return prices.storage_per_gb_month * usage.disk_gb;
  return in_force.gpu_per_hour * usage.gpu_count * usage.gpu_milli +
         (prices.cpu_per_core_hour * usage.cpu + prices.memory_per_gb_hour * usage.memory_gb +
          prices.disk_per_gb_hour * usage.disk_gb) *
             model::kMilliPerGpu;
}

// Calls fn(start, seconds, in_force) for each piece of the whole seconds [from, from + seconds)
// in which no price the record depends on changes: a change at t moves the price from the first
// whole second of the record's grid that starts at or after t. One price lookup per piece.
template <class Fn>
void for_each_piece(const Rates& rates, const model::UsageRecord& usage, Timestamp from,
                    int64_t seconds, Fn fn) {
  const Timestamp to = from + Millis(seconds * 1000);
  int64_t start = 0;
  while (start < seconds) {
    const Timestamp at = from + Millis(start * 1000);
    const PricesInForce prices = in_force(rates, usage, at);
    // until > at, so the piece has at least one second.
    const int64_t end = prices.until < to ? ((prices.until - from).count() + 999) / 1000 : seconds;
    fn(at, end - start, prices);
    start = end;
  }
}

// Bills `seconds` more of the record at `rate`: they extend the open segment when its rate is the
// same, else open a new one. Returns what is newly due.
Micros accrue(model::UsageRecord& usage, int64_t seconds, Micros rate) {
  if (rate != usage.segment_rate || usage.segment_seconds == 0) {
    usage.segment_rate = rate;
    usage.segment_seconds = 0;
    usage.segment_charged = 0;
  }
  usage.segment_seconds += seconds;
  const Micros total = charge_pro_rata(rate, 1, usage.segment_seconds, rate_period(usage));
  const Micros due = total - usage.segment_charged;
  usage.segment_charged = total;
  usage.billed_seconds += seconds;
  usage.charged += due;
  return due;
}

model::Transfer charge(std::string id, Timestamp at, const std::string& tenant_id, Micros amount,
                       std::string reference) {
  return model::Transfer{
      .id = std::move(id),
      .at = at,
      .from_account = model::tenant_cash_account(tenant_id),
      .to_account = std::string(model::kRevenueAccount),
      .amount = amount,
      .kind = model::TransferKind::kUsage,
      .tenant_id = tenant_id,
      .reference = std::move(reference),
  };
}

std::optional<model::Transfer> transfer_if_due(const model::UsageRecord& usage, Micros due) {
  if (due <= 0) return std::nullopt;
  return usage_transfer(usage, due);
}

}  // namespace

model::Transfer usage_transfer(const model::UsageRecord& usage, Micros due) {
  std::string id;
  model::append_usage_transfer_id(id, usage.kind, usage.instance_id, usage.run,
                                  usage.billed_seconds);
  return charge(std::move(id), usage.metered_until, usage.tenant_id, due, usage.instance_id);
}

std::optional<Micros> gpu_price(const Rates& rates, std::string_view gpu_type, PricingModel pricing,
                                Timestamp t) {
  if (pricing == PricingModel::kSpot) return rates.spot.price_at(rates.book, gpu_type, t);
  // Reserved work runs on a reserved term it paid for (billing/reserved.h).
  if (pricing == PricingModel::kReserved) return Micros{0};
  return rates.book.on_demand_price(gpu_type, t);
}

Micros rate_at(const Rates& rates, const model::UsageRecord& usage, Timestamp t) {
  return rate_of(usage, in_force(rates, usage, t));
}

PricesInForce prices_in_force(const PriceBook& book, const SpotMarket& spot,
                              std::string_view gpu_type, PricingModel pricing, Timestamp t) {
  const model::PriceVersion& prices = book.at(t);
  PricesInForce in_force{
      .prices = &prices, .from = prices.effective_at, .until = book.next_change(t)};
  // Reserved work runs on a reserved term it paid for (billing/reserved.h).
  if (pricing == PricingModel::kReserved) return in_force;
  const auto on_demand = prices.gpu_per_hour.find(gpu_type);
  if (on_demand == prices.gpu_per_hour.end()) return in_force;  // unpriced: no GPU charge
  if (pricing != PricingModel::kSpot) {
    in_force.gpu_per_hour = on_demand->second;
    return in_force;
  }
  const SpotMarket::Span span = spot.span_at(gpu_type, t);
  in_force.from = std::max(in_force.from, span.from);
  in_force.until = std::min(in_force.until, span.until);
  in_force.gpu_per_hour =
      spot_price(on_demand->second, prices.spot_floor_permille, span.utilisation_permille);
  return in_force;
}

PricesInForce RateMemo::find(const PriceBook& book, const SpotMarket& spot,
                             std::string_view gpu_type, PricingModel pricing, Timestamp t) {
  if (book.revision() != book_revision_ || spot.revision() != spot_revision_ ||
      entries_.size() >= kMostEntries) {
    entries_.clear();
    book_revision_ = book.revision();
    spot_revision_ = spot.revision();
  }
  for (const Entry& entry : entries_) {
    if (entry.pricing == pricing && entry.in_force.from <= t && t < entry.in_force.until &&
        entry.gpu_type == gpu_type) {
      return entry.in_force;
    }
  }
  return entries_
      .emplace_back(Entry{.gpu_type = std::string(gpu_type),
                          .pricing = pricing,
                          .in_force = prices_in_force(book, spot, gpu_type, pricing, t)})
      .in_force;
}

int64_t rate_period(const model::UsageRecord& usage) {
  return usage.kind == UsageKind::kRun ? kRunRatePeriod : model::kSecondsPerBillingMonth;
}

model::UsageRecord usage_shape(const model::InstanceSpec& spec, std::string_view gpu_type) {
  model::UsageRecord usage;
  usage.pricing = spec.pricing;
  usage.gpu_type = std::string(gpu_type);
  usage.gpu_count = spec.gpu_count;
  usage.gpu_milli = spec.gpu_milli;
  usage.cpu = spec.cpu;
  usage.memory_gb = spec.memory_gb;
  usage.disk_gb = spec.disk_gb;
  return usage;
}

std::vector<PricedSegment> price_interval(const Rates& rates, const model::UsageRecord& usage,
                                          Timestamp from, Timestamp to) {
  std::vector<PricedSegment> out;
  if (to <= from) return out;
  const int64_t seconds = (to - from).count() / 1000;
  if (seconds <= 0) return out;
  const int64_t period = rate_period(usage);
  for_each_piece(
      rates, usage, from, seconds, [&](Timestamp start, int64_t n, const PricesInForce& prices) {
        const Micros rate = rate_of(usage, prices);
        // Pieces at one rate are one segment, as metering makes them.
        if (!out.empty() && out.back().rate == rate) {
          out.back().seconds += n;
        } else {
          out.push_back(
              {.from = start, .seconds = n, .rate = rate, .gpu_per_hour = prices.gpu_per_hour});
        }
      });
  for (auto& segment : out)
    segment.amount = charge_pro_rata(segment.rate, 1, segment.seconds, period);
  return out;
}

std::optional<model::Transfer> meter_usage(const Rates& rates, model::UsageRecord& usage,
                                           Timestamp until) {
  return transfer_if_due(usage, meter_usage_due(rates, usage, until));
}

Micros meter_usage_due(const Rates& rates, model::UsageRecord& usage, Timestamp until) {
  if (until <= usage.metered_until) return 0;
  const int64_t seconds = (until - usage.metered_until).count() / 1000;
  if (seconds <= 0) return 0;
  Micros due = 0;
  for_each_piece(rates, usage, usage.metered_until, seconds,
                 [&](Timestamp, int64_t n, const PricesInForce& prices) {
                   due += accrue(usage, n, rate_of(usage, prices));
                   usage.price_per_gpu_hour = prices.gpu_per_hour;
                 });
  usage.metered_until += Millis(seconds * 1000);
  return due;
}

std::optional<model::Transfer> charge_minimum(const Rates& rates, model::UsageRecord& usage,
                                              int64_t minimum_seconds) {
  return transfer_if_due(usage, charge_minimum_due(rates, usage, minimum_seconds));
}

Micros charge_minimum_due(const Rates& rates, model::UsageRecord& usage, int64_t minimum_seconds) {
  // Seconds a compute package covered count toward the minimum as much as paid ones.
  const int64_t missing = minimum_seconds - usage.billed_seconds - usage.package_seconds;
  if (usage.kind != UsageKind::kRun || missing <= 0) return 0;
  const Micros rate =
      usage.segment_seconds > 0 ? usage.segment_rate : rate_at(rates, usage, usage.metered_until);
  return accrue(usage, missing, rate);
}

namespace {

// Advances a volume by the whole seconds in [metered_until, until) and returns what is newly due
// (the new total minus what was charged), or 0. One rounding: the total is always computed from
// all billed seconds, so many small steps equal one big step.
Micros advance_volume(model::Volume& volume, Timestamp until) {
  if (until <= volume.metered_until) return 0;
  const int64_t seconds = (until - volume.metered_until).count() / 1000;
  if (seconds <= 0) return 0;
  volume.metered_until += Millis(seconds * 1000);
  volume.billed_seconds += seconds;
  const Micros total = charge_pro_rata(volume.price_per_gb_month, volume.size_gb,
                                       volume.billed_seconds, model::kSecondsPerBillingMonth);
  const Micros delta = total - volume.charged;
  volume.charged = total;
  return delta;
}

}  // namespace

std::optional<model::Transfer> meter_volume(model::Volume& volume, Timestamp until) {
  const Micros due = advance_volume(volume, until);
  if (due <= 0) return std::nullopt;
  return charge(fmt::format("volume:{}:{}", volume.id, volume.billed_seconds), volume.metered_until,
                volume.tenant_id, due, volume.id);
}

Result<Estimate> estimate(const Rates& rates, const model::InstanceSpec& spec,
                          std::string_view gpu_type, Timestamp now) {
  const auto price = gpu_price(rates, gpu_type, spec.pricing, now);
  if (!price) {
    return fail(Error::unprocessable("gpu_type_not_priced",
                                     fmt::format("GPU type '{}' has no price yet", gpu_type)));
  }
  const model::PriceVersion& prices = rates.book.at(now);
  const model::UsageRecord run = usage_shape(spec, gpu_type);
  const auto per_hour = [](Micros rate) { return charge_pro_rata(rate, 1, 3600, kRunRatePeriod); };
  Estimate e;
  e.gpu_type = std::string(gpu_type);
  e.pricing = spec.pricing;
  e.gpu_price_per_gpu_hour = *price;
  e.gpu_per_hour = per_hour(*price * spec.gpu_count * spec.gpu_milli);
  e.cpu_per_hour = prices.cpu_per_core_hour * spec.cpu;
  e.memory_per_hour = prices.memory_per_gb_hour * spec.memory_gb;
  e.disk_per_hour = prices.disk_per_gb_hour * spec.disk_gb;
  const Micros rate = rate_at(rates, run, now);
  e.total_per_hour = per_hour(rate);
  e.stopped_storage_per_hour = charge_pro_rata(prices.storage_per_gb_month, spec.disk_gb, 3600,
                                               model::kSecondsPerBillingMonth);
  e.minimum_billed_seconds = prices.minimum_billed_seconds;
  e.minimum_charge = charge_pro_rata(rate, 1, prices.minimum_billed_seconds, kRunRatePeriod);
  if (spec.pricing == PricingModel::kSpot) {
    const auto on_demand = rates.book.on_demand_price(gpu_type, now);
    if (on_demand) {
      e.spot_floor_per_gpu_hour = spot_price(*on_demand, prices.spot_floor_permille, 0);
      e.spot_cap_per_gpu_hour = *on_demand;
    }
  }
  return e;
}

Ledger::Ledger() : revenue_(intern(model::kRevenueAccount)) {}

uint32_t Ledger::intern(std::string_view name) {
  const auto it = index_.find(name);
  if (it != index_.end()) return it->second;
  const auto index = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  balances_.push_back(0);
  of_tenant_.emplace_back();
  index_.emplace(std::string(name), index);
  return index;
}

uint32_t Ledger::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? kNoName : it->second;
}

Status Ledger::post(const model::Transfer& transfer) {
  if (transfer.amount <= 0) {
    return fail(Error::internal(fmt::format("transfer {} has non-positive amount", transfer.id)));
  }
  if (transfer.from_account == transfer.to_account) {
    return fail(
        Error::internal(fmt::format("transfer {} moves money to its own account", transfer.id)));
  }
  std::string& text = text_room(transfer.id.size() + transfer.reference.size());
  const Packed packed{.text = text.data() + text.size(),
                      .id_size = static_cast<uint32_t>(transfer.id.size()),
                      .reference_size = static_cast<uint32_t>(transfer.reference.size()),
                      .at = transfer.at,
                      .amount = transfer.amount,
                      .from = intern(transfer.from_account),
                      .to = intern(transfer.to_account),
                      .tenant = transfer.tenant_id.empty() ? kNoName : intern(transfer.tenant_id),
                      .kind = transfer.kind};
  text.append(transfer.id).append(transfer.reference);
  append(packed);
  return {};
}

Ledger::TenantNames Ledger::tenant_names(std::string_view tenant_id) {
  scratch_.clear();
  model::append_tenant_cash_account(scratch_, tenant_id);
  return {.cash = intern(scratch_), .tenant = intern(tenant_id)};
}

Status Ledger::post_usage(const model::UsageRecord& usage, Micros due, TenantNames names) {
  if (due <= 0) {
    return fail(Error::internal(fmt::format("usage {} charged a non-positive amount", usage.id)));
  }
  // What post(usage_transfer(usage, due)) stores, without the transfer in between. The id is
  // "storage:" at most, the instance, and two numbers of at most 20 digits with their colons;
  // the reference is the instance.
  constexpr size_t kMostBesideInstance = 8 + 2 * 21;
  std::string& text = text_room(kMostBesideInstance + 2 * usage.instance_id.size());
  const char* start = text.data() + text.size();
  model::append_usage_transfer_id(text, usage.kind, usage.instance_id, usage.run,
                                  usage.billed_seconds);
  const auto id_size = static_cast<uint32_t>(text.data() + text.size() - start);
  text.append(usage.instance_id);
  append({.text = start,
          .id_size = id_size,
          .reference_size = static_cast<uint32_t>(usage.instance_id.size()),
          .at = usage.metered_until,
          .amount = due,
          .from = names.cash,
          .to = revenue_,
          .tenant = names.tenant,
          .kind = model::TransferKind::kUsage});
  return {};
}

std::string& Ledger::text_room(size_t most) {
  if (text_.empty() || text_.back().capacity() - text_.back().size() < most) {
    text_.emplace_back().reserve(std::max(kTextChunk, most));
  }
  return text_.back();
}

void Ledger::append(const Packed& packed) {
  balances_[packed.from] -= packed.amount;
  balances_[packed.to] += packed.amount;
  if (packed.tenant != kNoName) of_tenant_[packed.tenant].push_back(transfer_count_);
  if (transfers_.empty() || transfers_.back().size() == kTransferChunk) {
    transfers_.emplace_back().reserve(kTransferChunk);
  }
  transfers_.back().push_back(packed);
  ++transfer_count_;
}

const Ledger::Packed& Ledger::transfer_at(size_t position) const {
  return transfers_[position >> kTransferChunkBits][position & (kTransferChunk - 1)];
}

Micros Ledger::balance(std::string_view account) const {
  const uint32_t index = find(account);
  return index == kNoName ? 0 : balances_[index];
}

Micros Ledger::total() const {
  Micros sum = 0;
  for (const Micros balance : balances_) sum += balance;
  return sum;
}

std::vector<model::Transfer> Ledger::transfers_of(std::string_view tenant_id) const {
  std::vector<model::Transfer> out;
  const uint32_t tenant = find(tenant_id);
  if (tenant == kNoName) return out;
  out.reserve(of_tenant_[tenant].size());
  for (const size_t position : of_tenant_[tenant]) {
    const Packed& p = transfer_at(position);
    const std::string_view text(p.text, p.id_size + p.reference_size);
    out.push_back({.id = std::string(text.substr(0, p.id_size)),
                   .at = p.at,
                   .from_account = names_[p.from],
                   .to_account = names_[p.to],
                   .amount = p.amount,
                   .kind = p.kind,
                   .tenant_id = names_[p.tenant],
                   .reference = std::string(text.substr(p.id_size))});
  }
  return out;
}

}  // namespace gpurent::billing
