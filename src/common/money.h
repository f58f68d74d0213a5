// Exact money.
//
// Amounts are signed 64-bit integers in micro-units of the currency (1 CNY = 1,000,000 micros).
// No floating point touches an amount. Prices are per hour; charges are computed from whole
// seconds with one rounding (toward zero) per line item, through 128-bit intermediates so that
// no realistic price, quantity or duration can overflow.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpurent {

using Micros = int64_t;

inline constexpr Micros kMicrosPerUnit = 1'000'000;

// price * quantity * seconds / per, rounded toward zero (one rounding, through 128 bits; clamped
// to the Micros range). `per` (> 0) is the quantity-seconds the price is for: 3600 * 1000 for a
// price per GPU-hour and a quantity in milli-GPUs, a month of seconds for a price per GB-month.
Micros charge_pro_rata(Micros price, int64_t quantity, int64_t seconds, int64_t per);
// price_per_hour * quantity * seconds / 3600, rounded toward zero. quantity is in thousandths of a
// unit (1000 = one GPU) so fractional GPUs are priced pro rata without a second rounding.
Micros charge_for_seconds(Micros price_per_hour, int64_t quantity_milli, int64_t seconds);

// "12.345678" style, always six decimals, with a leading '-' for negatives.
std::string format_micros(Micros amount);
// "CNY 12.35" for people: two decimals, rounded half away from zero ("12.35" without a currency).
std::string format_money(Micros amount, std::string_view currency);
// Parses a decimal amount ("18", "18.5", "0.000001") into micros; nullopt if malformed, more than
// six decimals, or out of range.
std::optional<Micros> parse_decimal_micros(std::string_view text);

}  // namespace gpurent
