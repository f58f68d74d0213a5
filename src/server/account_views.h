// JSON views of the accounts routes (packages, balance settings, invoices): what
// api_accounts.cc's add_account_routes() answers.
#pragma once

#include <string>

#include "billing/invoice.h"
#include "common/json.h"
#include "model/accounts.h"

namespace gpurent::server {

Json package_product_view(const model::PackageProduct& product, std::string_view currency);
// A package is "expired" from the billing tick at its expiry on.
Json package_view(const model::Package& package);
Json balance_settings_view(const model::BalanceSettings& settings, std::string_view currency);
Json invoice_summary_view(const billing::Invoice& invoice);
Json invoice_view(const billing::Invoice& invoice);

}  // namespace gpurent::server
