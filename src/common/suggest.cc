#include "common/suggest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>

namespace gpurent {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string_view> closest_names(std::string_view given,
                                            std::span<const std::string_view> known,
                                            size_t max_edits) {
  std::vector<std::string_view> close;
  if (given.empty()) return close;
  for (const auto name : known) {
    if (name.starts_with(given)) close.push_back(name);
  }
  if (!close.empty()) return close;
  size_t best = max_edits + 1;
  for (const auto name : known) {
    const size_t edits = edit_distance(given, name);
    if (edits < best) close.clear();
    if (edits <= std::min(best, max_edits)) {
      best = edits;
      close.push_back(name);
    }
  }
  return close;
}

std::string did_you_mean(const std::vector<std::string_view>& names) {
  if (names.empty()) return "";
  return fmt::format("; did you mean {}?", fmt::join(names, " or "));
}

}  // namespace gpurent
