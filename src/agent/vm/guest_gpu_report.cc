#include "agent/vm/guest_gpu_report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace gpurent::agent {
namespace {

constexpr int64_t kMaxGpuMemoryMib = int64_t{16} << 20;  // 16 TiB: no GPU comes near
constexpr double kMaxPowerWatts = 10'000;

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// The whole field as a number in [low, high]; nullopt for anything else ("[N/A]", "12abc").
template <class T>
std::optional<T> number_in(std::string_view field, T low, T high) {
  T value{};
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (error != std::errc() || end != field.data() + field.size()) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) return std::nullopt;
  }
  if (value < low || value > high) return std::nullopt;
  return value;
}

bool newer(const timespec& a, const timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

}  // namespace

std::string guest_gpu_reporter_script(std::string_view guest_dir) {
  return fmt::format(
      "( while :; do\n"
      "    nvidia-smi --query-gpu={0} --format=csv,noheader,nounits >{1}/{2}.new 2>/dev/null &&\n"
      "      mv -f {1}/{2}.new {1}/{2}\n"
      "    sleep {3}\n"
      "  done ) </dev/null >/dev/null 2>&1 &\n",
      kGuestGpuQuery, guest_dir, kGuestGpuReportFile, kGuestGpuReportSeconds);
}

std::vector<model::GpuSample> parse_guest_gpu_report(std::string_view text,
                                                     std::span<const std::string> gpus,
                                                     int64_t time_ms) {
  std::vector<model::GpuSample> samples;
  std::set<std::string_view> seen;
  while (!text.empty() && samples.size() < gpus.size()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    std::vector<std::string_view> fields;
    for (std::string_view rest = line;;) {
      const size_t comma = rest.find(',');
      fields.push_back(trimmed(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (fields.size() != 7) continue;
    const auto own = std::ranges::find(gpus, fields[0]);
    if (own == gpus.end() || !seen.insert(*own).second) continue;
    samples.push_back({.uuid = *own,
                       .time_ms = time_ms,
                       .gpu_util_pct = number_in<int64_t>(fields[1], 0, 100),
                       .mem_util_pct = number_in<int64_t>(fields[2], 0, 100),
                       .fb_used_mib = number_in<int64_t>(fields[3], 0, kMaxGpuMemoryMib),
                       .fb_free_mib = number_in<int64_t>(fields[4], 0, kMaxGpuMemoryMib),
                       .temperature_c = number_in<int64_t>(fields[5], -50, 200),
                       .power_w = number_in<double>(fields[6], 0, kMaxPowerWatts)});
  }
  return samples;
}

std::optional<GuestGpuReport> read_guest_gpu_report(const std::filesystem::path& path,
                                                    timespec after) {
  // O_NONBLOCK: a FIFO the guest made there must not hold the agent's loop.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<GuestGpuReport> report;
  struct stat status {};
  if (::fstat(fd, &status) == 0 && S_ISREG(status.st_mode) &&
      static_cast<size_t>(status.st_size) <= kMaxGuestGpuReportBytes &&
      newer(status.st_mtim, after)) {
    std::string text(static_cast<size_t>(status.st_size), '\0');
    const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
    if (n >= 0) {
      text.resize(static_cast<size_t>(n));
      report = GuestGpuReport{.text = std::move(text), .modified = status.st_mtim};
    }
  }
  ::close(fd);
  return report;
}

}  // namespace gpurent::agent
