// Reservations: GPUs of a type booked for a window [start, end) (model/accounts.h), priced as a
// reserved term (billing/reserved.h) and paid up front or monthly. Reserved work (pricing
// reserved) runs only inside its reservation's window and share; on-demand work may not take the
// GPUs that bookings hold back.
//
// Invariants: no instant of any window reserves more GPUs of a type than ready, uncordoned nodes
// had when it was booked (409 overbooked); a reservation's work never holds more GPUs than it
// booked; state moves booked -> active -> ended (or cancelled) with time only; every booking,
// payment and state change is in the pending ChangeSet, durable with the command or tick that
// made it, and every payment is a ledger transfer through Accounts.
//
// Part of the Controller (controller.h), which places reserved work, counts the GPUs it holds
// (count_use) and stops it when its window is over.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/random.h"
#include "common/result.h"
#include "controller/accounts.h"
#include "controller/change_set.h"
#include "controller/commands.h"
#include "controller/idempotency.h"
#include "controller/node_registry.h"
#include "controller/pricing.h"
#include "model/accounts.h"
#include "model/instance.h"
#include "model/tenant.h"

namespace gpurent::controller {

class Reservations {
 public:
  struct Context {
    const Clock& clock;
    Rng& rng;
    ChangeSet& changes;
    IdempotencyKeys& idempotency;
    Accounts& accounts;  // its ledger takes the payments and refunds
    const Pricing& pricing;
    const NodeRegistry& nodes;  // the capacity a booking may take
  };
  explicit Reservations(Context context) : c_(context) {}
  Reservations(const Reservations&) = delete;
  Reservations& operator=(const Reservations&) = delete;

  // The reservations from the store's snapshot.
  void restore(Snapshot& snapshot);

  // --- Tenants' commands and reads ---
  // What booking `request` would give, priced, with every check of book() (window, capacity,
  // funds), booking and charging nothing: the confirmation shown before paying. An operator may
  // book for another tenant.
  Result<model::Reservation> quote(const model::Principal& caller, NewReservation request) const;
  // Books it and takes its first payment (402 insufficient_funds when the tenant's cash does not
  // cover it); an Idempotency-Key retry with the same body returns the first booking.
  Result<CreatedReservation> book(const model::Principal& caller, NewReservation request,
                                  const std::optional<std::string>& idempotency_key,
                                  std::string fingerprint);
  // Before its window a booking is refunded; from its start it is a commitment, and cancelling
  // releases the capacity only. A reservation already over is returned as it is.
  Result<model::Reservation> cancel(const model::Principal& caller, std::string_view id);
  // The reservations the caller sees, by start.
  std::vector<const model::Reservation*> list(const model::Principal& caller) const;

  // --- What admission and placement ask ---
  // A launch's pricing and reservation_id agree, the reservation is the caller's and not over, and
  // the spec asks for no more than its whole GPUs of its type (gpu_types is filled in if empty).
  Status check_use(const model::Principal& caller, model::InstanceSpec& spec) const;
  // Why reserved work may not be placed now (its window has not begun, or its share is in use
  // with `members` more), or "".
  std::string hold_reason(const model::Instance& instance, int members) const;
  // GPUs of a type that bookings hold back from on-demand work that would run from now until
  // `until` (nullopt: with no declared end).
  int64_t held_back(std::string_view gpu_type, std::optional<Timestamp> until) const;
  // The reservation's work took (gpus > 0) or gave back GPUs.
  void count_use(const std::string& reservation_id, int gpus);

  // --- Time ---
  // The billing tick: each reservation's payments and earned revenue due by now.
  void settle_all();
  // Moves each reservation's state to what the time says. `changed`: some state moved (what a
  // scheduling pass may do changed); `over_in_use`: those whose window is over while their work
  // still holds GPUs (the controller stops it).
  struct Advanced {
    bool changed = false;
    std::vector<const model::Reservation*> over_in_use;
  };
  Advanced advance();

  Status check_invariants() const;

 private:
  Timestamp now() const { return c_.clock.now(); }
  // Prices a new term from the book in force now, and refuses it (402 insufficient_funds) when
  // the tenant's cash does not cover its first payment.
  Status price(model::Reservation& reservation) const;
  // Posts the payments and earned revenue due by now; records the reservation when they moved.
  void settle(model::Reservation& reservation);

  Context c_;
  std::map<std::string, model::Reservation, std::less<>> reservations_;  // by id
  std::unordered_map<std::string, int> in_use_;  // reservation id -> GPUs its work holds
};

}  // namespace gpurent::controller
