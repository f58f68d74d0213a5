// Parsing of the CLI's argument values that CLI11 cannot check by itself. Each returns an Error
// of code "usage" (the CLI's exit code 2) naming the bad value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/money.h"
#include "common/result.h"
#include "model/template.h"
#include "model/volume.h"

namespace gpurent::cli {

inline constexpr std::string_view kUsageCode = "usage";
Error usage_error(std::string message);

// An amount in currency units ("100", "12.5", "0.000001"), exact to the micro-unit, never through
// floating point; with in_micros, an integer number of micros ("12500000").
Result<Micros> parse_amount(std::string_view text, bool in_micros);

// "90s", "30m", "24h", "7d", combinations ("1h30m"), or plain seconds ("3600"). Positive, at most
// ten years.
Result<int64_t> parse_duration_seconds(std::string_view text);

// --gpu: "any" (no types: any will do), one type, or a comma-separated list of acceptable types.
std::vector<std::string> parse_gpu_types(std::string_view text);

// "NAME=value" for --env; NAME as in POSIX ([A-Za-z_][A-Za-z0-9_]*), the value may be empty.
Result<std::pair<std::string, std::string>> parse_env_assignment(std::string_view text);

// --runtime: auto, process or container, only with --template (it picks the template's form); or
// vm, with or without one.
Result<model::RuntimeChoice> parse_runtime(std::string_view text, std::string_view template_name);
// Each "VOLUME_ID:/mount/path" of a repeated --volume (the path's rules are the server's).
Result<std::vector<model::VolumeMount>> parse_volume_mounts(const std::vector<std::string>& flags);

}  // namespace gpurent::cli
