// GPU telemetry from inside a VM (docs/vm-runtime.md, "A GPU inside a VM"). A GPU passed
// through to a guest is gone from the host's NVML, so the host cannot read its utilisation,
// memory, temperature or power; the guest can. A run that holds GPUs has its command.sh start a
// reporter that writes nvidia-smi's answer to the run's shared folder every few seconds
// (guest_gpu_reporter_script), and the agent reads it from the host
// (VmRuntime::guest_gpu_samples).
//
// The guest is the tenant's, so the report is untrusted text: only the run's own GPUs count, each
// once, each value a number in its range or left out; a file that is not a plain file, or too
// large, is no report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/telemetry.h"

namespace gpurent::agent {

// What the reporter asks nvidia-smi for (--format=csv,noheader,nounits), in this column order.
inline constexpr std::string_view kGuestGpuQuery =
    "uuid,utilization.gpu,utilization.memory,memory.used,memory.free,temperature.gpu,power.draw";
// The report's name in the run's guest folder, and how often the guest writes it.
inline constexpr std::string_view kGuestGpuReportFile = "gpus.csv";
inline constexpr int kGuestGpuReportSeconds = 5;
// Far more than nvidia-smi prints for 16 GPUs (about 100 bytes a line).
inline constexpr size_t kMaxGuestGpuReportBytes = 16 << 10;

// The shell lines (for the guest's /bin/sh) that start the reporter in the background: every
// kGuestGpuReportSeconds, nvidia-smi's answer replaces guest_dir/gpus.csv (written aside, then
// renamed, so the host never reads half a report). It tries nvidia-smi each time, so a driver the
// tenant installs after boot is reported from then on.
std::string guest_gpu_reporter_script(std::string_view guest_dir);

// The samples of `gpus` in a report, stamped time_ms. Lines for other GPUs, a GPU's later lines
// and lines that do not parse are skipped; a value that is "[N/A]", "[Not Supported]" or out of
// range is left out of its sample.
std::vector<model::GpuSample> parse_guest_gpu_report(std::string_view text,
                                                     std::span<const std::string> gpus,
                                                     int64_t time_ms);

// A report file newer than `after` (its modification time), read without following a link and
// only if it is a plain file of at most kMaxGuestGpuReportBytes; nullopt otherwise (none yet, the
// same report as last time, or not a report).
struct GuestGpuReport {
  std::string text;
  timespec modified{};
};
std::optional<GuestGpuReport> read_guest_gpu_report(const std::filesystem::path& path,
                                                    timespec after);

}  // namespace gpurent::agent
