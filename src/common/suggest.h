// "Did you mean ...?" for a name or id a person typed that matches nothing.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent {

// Levenshtein distance (insertions, deletions, substitutions), for short names: O(|a| × |b|).
size_t edit_distance(std::string_view a, std::string_view b);

// The known names `given` most likely meant: those it is a prefix of, else the closest within
// `max_edits` edits (all that are equally close), in the order of `known`; none if nothing is.
std::vector<std::string_view> closest_names(std::string_view given,
                                            std::span<const std::string_view> known,
                                            size_t max_edits);

// "; did you mean a or b?" for those names, "" for none.
std::string did_you_mean(const std::vector<std::string_view>& names);

}  // namespace gpurent
