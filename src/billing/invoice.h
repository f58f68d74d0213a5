// Monthly statements built from the ledger.
//
// Contract:
// - An invoice covers one calendar month in UTC, [first day 00:00, next month's first day), of one
//   tenant's cash account. Every transfer into or out of that account in the month is in exactly
//   one line item; lines group transfers by (category, description) in first-seen order.
// - Amounts are signed from the tenant's side: charges positive, payments and credits negative.
//   Totals reconcile to the micro-unit: opening_balance - sum(line amounts) == closing_balance,
//   and both balances are the ledger's balance of the cash account at the month's bounds.
// - Prepaid draws (a package's or a reserved term's value earned as it is used) do not touch
//   cash: they are listed under `prepaid` for information and are not in the totals.
// - The CSV has one row per line item and then the totals, amounts as decimals of six places.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "model/ledger.h"

namespace gpurent::billing {

struct Month {
  int year = 0;
  int month = 0;  // 1..12
  Timestamp start() const;
  Timestamp end() const;   // exclusive: the next month's start
  std::string id() const;  // "2026-12"
};
Month month_of(Timestamp t);
std::optional<Month> parse_month(std::string_view id);

struct InvoiceLine {
  // gpu_time, storage, packages, reserved_terms, credits, payments, refunds, other
  std::string category;
  std::string description;
  int64_t quantity = 0;  // gpu_time: seconds of runs billed to cash; otherwise transfers
  std::string unit;      // "s" or "items"
  Micros amount = 0;
};

struct Invoice {
  std::string id;  // the month, "2026-12"
  std::string tenant_id;
  std::string currency;
  Timestamp period_start{};
  Timestamp period_end{};
  std::vector<InvoiceLine> lines;
  std::vector<InvoiceLine> prepaid;  // informational
  Micros opening_balance = 0;
  Micros charges = 0;   // sum of positive lines
  Micros credits = 0;   // sum of credit lines (negative)
  Micros payments = 0;  // sum of payment lines (negative)
  Micros closing_balance = 0;
};

// What a usage transfer's run ("<instance>:<run>") was: its GPU type and pricing model, for the
// line's description.
using DescribeRun = std::function<std::string(std::string_view run)>;

// `transfers`: all of the tenant's transfers in posting order (earlier months give the opening
// balance and each run's seconds billed before the month).
Invoice build_invoice(std::string_view tenant_id, std::string currency, Month month,
                      const std::vector<model::Transfer>& transfers, const DescribeRun& describe);
// The months in which the tenant's cash account moved, oldest first.
std::vector<Month> invoice_months(std::string_view tenant_id,
                                  const std::vector<model::Transfer>& transfers);
std::string invoice_csv(const Invoice& invoice);

}  // namespace gpurent::billing
