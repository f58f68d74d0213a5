#include "cli/args.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ranges>

namespace gpurent::cli {
namespace {

constexpr int64_t kMaxDurationSeconds = int64_t{10} * 366 * 86400;

bool parse_whole(std::string_view text, int64_t* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

Error usage_error(std::string message) {
  return {ErrorKind::kInvalidArgument, std::string(kUsageCode), std::move(message)};
}

Result<Micros> parse_amount(std::string_view text, bool in_micros) {
  if (in_micros) {
    int64_t micros;
    if (!parse_whole(text, &micros)) {
      return fail(usage_error(fmt::format("'{}' is not a whole number of micros", text)));
    }
    return micros;
  }
  const auto micros = parse_decimal_micros(text);
  if (!micros) {
    return fail(usage_error(fmt::format(
        "'{}' is not an amount: write units with at most six decimals, like 100 or 12.5", text)));
  }
  return *micros;
}

Result<int64_t> parse_duration_seconds(std::string_view text) {
  const auto bad = [text] {
    return fail(usage_error(
        fmt::format("'{}' is not a duration: write e.g. 90s, 30m, 24h, 7d or 1h30m", text)));
  };
  int64_t plain;
  if (parse_whole(text, &plain)) {
    if (plain <= 0 || plain > kMaxDurationSeconds) return bad();
    return plain;
  }
  int64_t total = 0;
  size_t pos = 0;
  if (text.empty()) return bad();
  while (pos < text.size()) {
    const size_t digits_end = text.find_first_not_of("0123456789", pos);
    if (digits_end == pos || digits_end == std::string_view::npos) return bad();
    int64_t count;
    // Six digits of any unit already exceed the ten-year bound checked below.
    if (digits_end - pos > 6 || !parse_whole(text.substr(pos, digits_end - pos), &count)) {
      return bad();
    }
    switch (text[digits_end]) {
      case 's':
        total += count;
        break;
      case 'm':
        total += count * 60;
        break;
      case 'h':
        total += count * 3600;
        break;
      case 'd':
        total += count * 86400;
        break;
      default:
        return bad();
    }
    if (total > kMaxDurationSeconds) return bad();
    pos = digits_end + 1;
  }
  if (total == 0) return bad();
  return total;
}

std::vector<std::string> parse_gpu_types(std::string_view text) {
  std::vector<std::string> types;
  if (text == "any") return types;
  for (auto part : std::views::split(text, ',')) types.emplace_back(part.begin(), part.end());
  return types;
}

Result<std::pair<std::string, std::string>> parse_env_assignment(std::string_view text) {
  const size_t equals = text.find('=');
  const std::string_view name = text.substr(0, equals);
  const bool valid_name = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                          std::all_of(name.begin(), name.end(), [](char c) {
                            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                          });
  if (equals == std::string_view::npos || !valid_name) {
    return fail(usage_error(fmt::format("--env '{}' is not NAME=value", text)));
  }
  return std::pair{std::string(name), std::string(text.substr(equals + 1))};
}

Result<model::RuntimeChoice> parse_runtime(std::string_view text, std::string_view template_name) {
  model::RuntimeChoice choice = model::RuntimeChoice::kAuto;
  if (!model::parse_runtime_choice(text, &choice)) {
    return fail(
        usage_error(fmt::format("--runtime '{}' is not auto, process, container or vm", text)));
  }
  if (choice != model::RuntimeChoice::kAuto && choice != model::RuntimeChoice::kVm &&
      template_name.empty()) {
    return fail(usage_error("--runtime picks a template's form: give --template too"));
  }
  return choice;
}

Result<std::vector<model::VolumeMount>> parse_volume_mounts(const std::vector<std::string>& flags) {
  std::vector<model::VolumeMount> mounts;
  for (const auto& text : flags) {
    const size_t colon = text.find(':');
    if (colon == 0 || colon == std::string::npos || colon + 1 == text.size()) {
      return fail(usage_error(fmt::format("--volume '{}' is not VOLUME_ID:/mount/path", text)));
    }
    mounts.push_back({text.substr(0, colon), text.substr(colon + 1)});
  }
  return mounts;
}

}  // namespace gpurent::cli
