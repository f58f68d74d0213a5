#include "common/money.h"

#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace gpurent {

Micros charge_pro_rata(Micros price, int64_t quantity, int64_t seconds, int64_t per) {
  const __int128 product = static_cast<__int128>(price) * quantity * seconds;
  const __int128 result = product / per;
  if (result > std::numeric_limits<Micros>::max() || result < std::numeric_limits<Micros>::min()) {
    // A charge this large means corrupted inputs; clamping keeps the ledger consistent and the
    // balance guard stops the workload.
    return result > 0 ? std::numeric_limits<Micros>::max() : std::numeric_limits<Micros>::min();
  }
  return static_cast<Micros>(result);
}

Micros charge_for_seconds(Micros price_per_hour, int64_t quantity_milli, int64_t seconds) {
  return charge_pro_rata(price_per_hour, quantity_milli, seconds, int64_t{3600} * 1000);
}

std::string format_micros(Micros amount) {
  const bool negative = amount < 0;
  const unsigned __int128 magnitude =
      negative ? static_cast<unsigned __int128>(-static_cast<__int128>(amount))
               : static_cast<unsigned __int128>(amount);
  const auto whole = static_cast<uint64_t>(magnitude / kMicrosPerUnit);
  const auto frac = static_cast<uint64_t>(magnitude % kMicrosPerUnit);
  return fmt::format("{}{}.{:06}", negative ? "-" : "", whole, frac);
}

std::string format_money(Micros amount, std::string_view currency) {
  const bool negative = amount < 0;
  const __int128 magnitude = negative ? -static_cast<__int128>(amount) : amount;
  const __int128 cents = (magnitude + 5'000) / 10'000;
  return fmt::format("{}{}{}{}.{:02}", negative ? "-" : "", currency, currency.empty() ? "" : " ",
                     static_cast<uint64_t>(cents / 100), static_cast<uint64_t>(cents % 100));
}

std::optional<Micros> parse_decimal_micros(std::string_view text) {
  if (text.empty()) return std::nullopt;
  bool negative = false;
  size_t pos = 0;
  if (text[0] == '-') {
    negative = true;
    pos = 1;
  }
  __int128 whole = 0;
  size_t whole_digits = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    whole = whole * 10 + (text[pos] - '0');
    if (++whole_digits > 12) return std::nullopt;
    ++pos;
  }
  __int128 frac = 0;
  int frac_digits = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (++frac_digits > 6) return std::nullopt;
      frac = frac * 10 + (text[pos] - '0');
      ++pos;
    }
    if (frac_digits == 0) return std::nullopt;
  }
  if (pos != text.size() || (whole_digits == 0 && frac_digits == 0)) return std::nullopt;
  for (int d = frac_digits; d < 6; ++d) frac *= 10;
  const __int128 value = whole * kMicrosPerUnit + frac;
  return static_cast<Micros>(negative ? -value : value);
}

}  // namespace gpurent
