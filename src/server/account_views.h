// The views of the accounts routes (packages, balance settings, invoices): what api_accounts.cc's
// add_account_routes() answers, in the API's types (api/billing.h).
#pragma once

#include <string>

#include "api/billing.h"
#include "billing/invoice.h"
#include "model/accounts.h"

namespace gpurent::server {

api::PackageProduct package_product_view(const model::PackageProduct& product,
                                         std::string_view currency);
// A package is "expired" from the billing tick at its expiry on.
api::Package package_view(const model::Package& package);
api::BalanceSettings balance_settings_view(const model::BalanceSettings& settings,
                                           std::string_view currency);
api::InvoiceSummary invoice_summary_view(const billing::Invoice& invoice);
api::Invoice invoice_view(const billing::Invoice& invoice);

}  // namespace gpurent::server
