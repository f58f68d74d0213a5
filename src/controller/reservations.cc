#include "controller/reservations.h"

#include <algorithm>
#include <chrono>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "billing/reserved.h"
#include "controller/internal.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

using model::Reservation;
using model::ReservationState;

namespace {

constexpr Millis kMaxReservationLength{366LL * 24 * 3600 * 1000};

// The one rule a requested window breaks, if any: the first of them, with what to do instead.
Status check_window(const NewReservation& request, Timestamp now) {
  const auto invalid = [](std::string message) {
    return fail(Error::invalid("invalid_field", std::move(message)));
  };
  if (request.gpu_count < 1) return invalid("gpu_count must be at least 1");
  if (request.end <= request.start) {
    return invalid(fmt::format("the window ends ({}) before it starts ({})",
                               format_rfc3339(request.end), format_rfc3339(request.start)));
  }
  if (request.end <= now) {
    return invalid(
        fmt::format("the window ended at {}, in the past; book one that ends later "
                    "(e.g. --start +1h --duration 2h)",
                    format_rfc3339(request.end)));
  }
  if (request.end - request.start > kMaxReservationLength) {
    return invalid(
        fmt::format("a window is at most {} days long",
                    std::chrono::duration_cast<std::chrono::days>(kMaxReservationLength).count()));
  }
  return {};
}

bool in_force(const Reservation& reservation) {
  return reservation.state == ReservationState::kBooked ||
         reservation.state == ReservationState::kActive;
}

}  // namespace

void Reservations::restore(Snapshot& snapshot) {
  for (auto& reservation : snapshot.reservations) {
    reservations_.emplace(reservation.id, std::move(reservation));
  }
}

Result<Reservation> Reservations::quote(const Principal& caller, NewReservation request) const {
  std::string tenant_id = request.tenant_id.empty() ? caller.tenant_id : request.tenant_id;
  if (tenant_id != caller.tenant_id && !caller.is_operator()) {
    return fail(forbidden("book for another tenant"));
  }
  if (!c_.accounts.has_tenant(tenant_id)) return fail(Error::not_found("tenant", tenant_id));
  if (!model::find_gpu_type(request.gpu_type)) {
    return fail(Error::unprocessable("unknown_gpu_type",
                                     model::unknown_gpu_type_message(request.gpu_type)));
  }
  const Timestamp t = now();
  if (request.term_days) {
    request.start = std::max(request.start, t);
    request.end = request.start + std::chrono::days(*request.term_days);
  }
  GPURENT_CHECK(check_window(request, t));
  request.start = std::max(request.start, t);
  // Capacity: GPUs of the type on nodes that take work. Admission refuses a booking that would
  // reserve more than that at any instant of its window.
  int64_t capacity = 0;
  for (const auto& [id, node] : c_.nodes) {
    if (node.state != model::NodeState::kReady || node.cordoned) continue;
    for (const auto& gpu : node.gpus) capacity += gpu.type == request.gpu_type;
  }
  std::vector<std::pair<Timestamp, int>> changes;  // (+count at start, -count at end)
  for (const auto& [id, other] : reservations_) {
    if (other.gpu_type != request.gpu_type || other.end <= request.start ||
        other.start >= request.end || !in_force(other)) {
      continue;
    }
    changes.emplace_back(std::max(other.start, request.start), other.gpu_count);
    changes.emplace_back(other.end, -other.gpu_count);
  }
  std::sort(changes.begin(), changes.end());  // ends sort before starts at one instant
  int64_t booked = 0, peak = 0;
  for (const auto& [at, delta] : changes) {
    booked += delta;
    peak = std::max(peak, booked);
  }
  if (peak + request.gpu_count > capacity) {
    return fail(Error::conflict(
        "overbooked",
        fmt::format("{} {} GPU(s) take work; up to {} are already reserved in that window, so at "
                    "most {} more can be: book fewer, or another window (`gpurent reservation "
                    "ls` shows the bookings)",
                    capacity, request.gpu_type, peak, std::max<int64_t>(capacity - peak, 0))));
  }
  Reservation reservation{.tenant_id = std::move(tenant_id),
                          .gpu_type = std::move(request.gpu_type),
                          .gpu_count = request.gpu_count,
                          .start = request.start,
                          .end = request.end,
                          .state = ReservationState::kBooked,
                          .created_at = t,
                          .payment = request.payment};
  if (reservation.start <= t) reservation.state = ReservationState::kActive;
  GPURENT_CHECK(price(reservation));
  return reservation;
}

Result<CreatedReservation> Reservations::book(const Principal& caller, NewReservation request,
                                              const std::optional<std::string>& idempotency_key,
                                              std::string fingerprint) {
  GPURENT_TRY(first, replayed_creation<CreatedReservation>(c_.idempotency, caller, idempotency_key,
                                                           fingerprint, reservations_));
  if (first) return std::move(*first);
  GPURENT_TRY(reservation, quote(caller, std::move(request)));
  reservation.id = c_.rng.id("r-");
  settle(reservation);  // the first payment
  c_.changes.reservations.push_back(reservation);
  c_.idempotency.remember(caller.tenant_id, idempotency_key, std::move(fingerprint),
                          reservation.id);
  return CreatedReservation{reservations_.emplace(reservation.id, reservation).first->second,
                            false};
}

Result<Reservation> Reservations::cancel(const Principal& caller, std::string_view id) {
  const auto it = reservations_.find(id);
  if (it == reservations_.end() || !visible_to(caller, it->second.tenant_id)) {
    return fail(Error::not_found("reservation", id));
  }
  Reservation& reservation = it->second;
  if (!in_force(reservation)) return reservation;
  if (auto refund = billing::refund_unstarted(reservation, now())) {
    GPURENT_CHECK(c_.accounts.post(std::move(*refund)));
  }
  reservation.state = ReservationState::kCancelled;
  settle(reservation);
  c_.changes.reservations.push_back(reservation);
  return reservation;
}

std::vector<const Reservation*> Reservations::list(const Principal& caller) const {
  std::vector<const Reservation*> out;
  for (const auto& [id, reservation] : reservations_) {
    if (visible_to(caller, reservation.tenant_id)) out.push_back(&reservation);
  }
  std::sort(out.begin(), out.end(), [](const Reservation* a, const Reservation* b) {
    return std::tie(a->start, a->id) < std::tie(b->start, b->id);
  });
  return out;
}

Status Reservations::check_use(const Principal& caller, model::InstanceSpec& spec) const {
  if (spec.pricing != model::PricingModel::kReserved) {
    if (!spec.reservation_id.empty()) {
      return fail(Error::invalid("invalid_field", "reservation_id needs pricing reserved"));
    }
    return {};
  }
  const auto it = reservations_.find(spec.reservation_id);
  if (it == reservations_.end() || it->second.tenant_id != caller.tenant_id) {
    return fail(Error::not_found("reservation", spec.reservation_id));
  }
  const Reservation& reservation = it->second;
  if (!in_force(reservation)) {
    return fail(Error::conflict(
        "reservation_over",
        fmt::format("reservation {} is {}", reservation.id, model::to_string(reservation.state))));
  }
  if (spec.gpu_types.empty()) spec.gpu_types = {reservation.gpu_type};
  if (spec.gpu_types != std::vector<std::string>{reservation.gpu_type} ||
      spec.gpu_count > reservation.gpu_count || spec.gpu_milli != sched::kMilliPerGpu) {
    return fail(
        Error::unprocessable("reservation_mismatch",
                             fmt::format("reservation {} holds {} whole {} GPU(s)", reservation.id,
                                         reservation.gpu_count, reservation.gpu_type)));
  }
  return {};
}

std::string Reservations::hold_reason(const model::Instance& instance, int members) const {
  if (instance.spec.pricing != model::PricingModel::kReserved) return "";
  const Reservation& reservation = reservations_.at(instance.spec.reservation_id);
  if (reservation.state != ReservationState::kActive) {
    return fmt::format("waiting for reservation {} to begin at {}", reservation.id,
                       format_rfc3339(reservation.start));
  }
  const auto used = in_use_.find(reservation.id);
  if ((used == in_use_.end() ? 0 : used->second) + instance.spec.gpu_count * members >
      reservation.gpu_count) {
    return fmt::format("waiting: reservation {} ({} GPUs) is in use", reservation.id,
                       reservation.gpu_count);
  }
  return "";
}

int64_t Reservations::held_back(std::string_view gpu_type, std::optional<Timestamp> until) const {
  const Timestamp t = now();
  int64_t held = 0;
  for (const auto& [id, reservation] : reservations_) {
    if (reservation.gpu_type != gpu_type || reservation.end <= t ||
        (until && reservation.start >= *until) || !in_force(reservation)) {
      continue;
    }
    const auto used = in_use_.find(id);
    held += reservation.gpu_count - (used == in_use_.end() ? 0 : used->second);
  }
  return held;
}

void Reservations::count_use(const std::string& reservation_id, int gpus) {
  in_use_[reservation_id] += gpus;
}

void Reservations::settle_all() {
  for (auto& [id, reservation] : reservations_) settle(reservation);
}

Reservations::Advanced Reservations::advance() {
  const Timestamp t = now();
  Advanced advanced;
  for (auto& [id, reservation] : reservations_) {
    auto state = reservation.state;
    if (state == ReservationState::kBooked && reservation.start <= t)
      state = ReservationState::kActive;
    if (state == ReservationState::kActive && reservation.end <= t)
      state = ReservationState::kEnded;
    if (state != reservation.state) {
      reservation.state = state;
      c_.changes.reservations.push_back(reservation);
      advanced.changed = true;
    }
    const auto used = in_use_.find(id);
    if (in_force(reservation) || used == in_use_.end()) continue;
    // The window is over: the work that ran in it stops, and the count goes once it is gone.
    if (used->second == 0) {
      in_use_.erase(used);
      continue;
    }
    advanced.over_in_use.push_back(&reservation);
  }
  return advanced;
}

Status Reservations::check_invariants() const {
  for (const auto& [id, used] : in_use_) {
    const auto reservation = reservations_.find(id);
    if (reservation != reservations_.end() && used > reservation->second.gpu_count) {
      return fail(Error::internal(
          fmt::format("controller invariant broken: reservation {} has {} GPUs in use", id, used)));
    }
  }
  return {};
}

Status Reservations::price(Reservation& reservation) const {
  const auto price =
      c_.pricing.book().on_demand_price(reservation.gpu_type, reservation.created_at);
  if (!price) {
    return fail(Error::unprocessable(
        "gpu_type_not_priced",
        fmt::format("{} has no price: it cannot be reserved", reservation.gpu_type)));
  }
  const Millis length = reservation.end - reservation.start;
  reservation.price_per_gpu_hour = *price;
  reservation.discount_permille = billing::term_discount_permille(
      c_.pricing.book().at(reservation.created_at).reserved_discount_permille, length);
  reservation.total =
      billing::term_total(*price, reservation.gpu_count, reservation.discount_permille, length);
  return c_.accounts.check_can_pay(reservation.tenant_id, billing::payment_amount(reservation, 0),
                                   reservation.payment == model::ReservationPayment::kUpfront
                                       ? "the reserved term's price"
                                       : "the reserved term's first monthly payment");
}

void Reservations::settle(Reservation& reservation) {
  const Timestamp t = now();
  auto transfers = billing::collect_payments(reservation, t);
  if (auto earned = billing::recognise_revenue(reservation, t)) transfers.push_back(*earned);
  if (transfers.empty()) return;
  for (auto& transfer : transfers) {
    if (auto posted = c_.accounts.post(std::move(transfer)); !posted) {
      spdlog::error("reservation={} payment failed: {}", reservation.id, posted.error().message);
    }
  }
  c_.changes.reservations.push_back(reservation);
  c_.accounts.guard_balance(reservation.tenant_id);
}

}  // namespace gpurent::controller
