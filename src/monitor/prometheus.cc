#include "monitor/prometheus.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace gpurent::monitor {
namespace {

bool valid_name(std::string_view name, bool colons) {
  auto head = [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colons && c == ':');
  };
  if (name.empty() || !head(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return head(c) || (c >= '0' && c <= '9'); });
}

void append_escaped(std::string& out, std::string_view text, bool quotes) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quotes && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

// name{labels[,extra]} value\n
void append_sample(std::string& out, std::string_view name, const Labels& labels,
                   const std::pair<std::string_view, std::string>* extra, double value) {
  out += name;
  if (!labels.empty() || extra) {
    out += '{';
    bool first = true;
    auto label = [&](std::string_view key, std::string_view val) {
      if (!first) out += ',';
      first = false;
      out += key;
      out += "=\"";
      append_escaped(out, val, true);
      out += '"';
    };
    for (const auto& [key, val] : labels) label(key, val);
    if (extra) label(extra->first, extra->second);
    out += '}';
  }
  out += ' ';
  append_value(out, value);
  out += '\n';
}

std::string_view type_name(Exposition::Type type) {
  switch (type) {
    case Exposition::Type::kGauge:
      return "gauge";
    case Exposition::Type::kCounter:
      return "counter";
    case Exposition::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

void LatencyHistogram::observe(std::chrono::microseconds latency) {
  const double seconds = static_cast<double>(latency.count()) / 1e6;
  const auto bucket =
      static_cast<size_t>(std::lower_bound(kBoundsSeconds.begin(), kBoundsSeconds.end(), seconds) -
                          kBoundsSeconds.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(static_cast<uint64_t>(std::max<int64_t>(latency.count(), 0)),
                    std::memory_order_relaxed);
}

HistogramSnapshot LatencyHistogram::snapshot() const {
  HistogramSnapshot snapshot;
  snapshot.bounds.assign(kBoundsSeconds.begin(), kBoundsSeconds.end());
  for (const auto& count : counts_) {
    snapshot.counts.push_back(count.load(std::memory_order_relaxed));
    snapshot.count += snapshot.counts.back();
  }
  snapshot.sum = static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6;
  return snapshot;
}

Result<Exposition::Family*> Exposition::family(std::string_view name, std::string_view help,
                                               Type type, const Labels& labels) {
  if (!valid_name(name, true)) {
    return fail(Error::invalid("invalid_metric_name",
                               fmt::format("'{}' is not a Prometheus metric name", name)));
  }
  for (const auto& [key, value] : labels) {
    if (!valid_name(key, false) || key.starts_with("__") ||
        (type == Type::kHistogram && key == "le")) {
      return fail(Error::invalid("invalid_label_name",
                                 fmt::format("'{}' is not a label name for '{}'", key, name)));
    }
  }
  auto it = std::find_if(families_.begin(), families_.end(),
                         [&](const Family& family) { return family.name == name; });
  if (it == families_.end()) {
    families_.push_back({std::string(name), std::string(help), type, {}});
    return &families_.back();
  }
  if (it->type != type) {
    return fail(Error::invalid(
        "metric_type_conflict",
        fmt::format("'{}' is a {}, not a {}", name, type_name(it->type), type_name(type))));
  }
  return &*it;
}

Status Exposition::gauge(std::string_view name, std::string_view help, const Labels& labels,
                         double value) {
  GPURENT_TRY(f, family(name, help, Type::kGauge, labels));
  append_sample(f->samples, name, labels, nullptr, value);
  return {};
}

Status Exposition::counter(std::string_view name, std::string_view help, const Labels& labels,
                           double value) {
  GPURENT_TRY(f, family(name, help, Type::kCounter, labels));
  append_sample(f->samples, name, labels, nullptr, value);
  return {};
}

Status Exposition::histogram(std::string_view name, std::string_view help, const Labels& labels,
                             const HistogramSnapshot& histogram) {
  GPURENT_TRY(f, family(name, help, Type::kHistogram, labels));
  const std::string bucket_name = fmt::format("{}_bucket", name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= histogram.bounds.size(); ++i) {
    cumulative += i < histogram.counts.size() ? histogram.counts[i] : 0;
    std::string le;
    if (i < histogram.bounds.size()) {
      append_value(le, histogram.bounds[i]);
    } else {
      le = "+Inf";
    }
    const std::pair<std::string_view, std::string> extra{"le", std::move(le)};
    append_sample(f->samples, bucket_name, labels, &extra, static_cast<double>(cumulative));
  }
  append_sample(f->samples, fmt::format("{}_sum", name), labels, nullptr, histogram.sum);
  append_sample(f->samples, fmt::format("{}_count", name), labels, nullptr,
                static_cast<double>(histogram.count));
  return {};
}

std::string Exposition::render() const {
  std::string out;
  for (const Family& family : families_) {
    out += "# HELP ";
    out += family.name;
    out += ' ';
    append_escaped(out, family.help, false);
    out += "\n# TYPE ";
    out += family.name;
    out += ' ';
    out += type_name(family.type);
    out += '\n';
    out += family.samples;
  }
  return out;
}

GpuReading latest_reading(const SeriesStore& store, GpuInfo gpu, int64_t now_ms,
                          int64_t max_age_ms) {
  GpuReading reading;
  if (const SeriesStore::GpuLatest* latest = store.latest(gpu.uuid)) {
    for (const MetricInfo& info : metric_table()) {
      const std::optional<Sample> sample = latest->of(info.metric);
      if (sample && sample->t_ms >= now_ms - max_age_ms) {
        reading.values.emplace_back(info.metric, sample->value);
      }
    }
  }
  reading.gpu = std::move(gpu);
  return reading;
}

Status add_gpu_families(Exposition& exposition, std::span<const GpuReading> readings) {
  for (const MetricInfo& info : metric_table()) {
    for (const GpuReading& reading : readings) {
      auto value = std::find_if(reading.values.begin(), reading.values.end(),
                                [&](const auto& entry) { return entry.first == info.metric; });
      if (value == reading.values.end()) continue;
      const GpuInfo& gpu = reading.gpu;
      Labels labels = {{"gpu", std::to_string(gpu.index)},
                       {"UUID", gpu.uuid},
                       {"modelName", gpu.model_name},
                       {"Hostname", gpu.hostname}};
      if (!gpu.instance_id.empty()) labels.emplace_back("instance_id", gpu.instance_id);
      if (!gpu.tenant.empty()) labels.emplace_back("tenant", gpu.tenant);
      GPURENT_CHECK(info.type == MetricType::kCounter
                        ? exposition.counter(info.dcgm_name, info.help, labels, value->second)
                        : exposition.gauge(info.dcgm_name, info.help, labels, value->second));
    }
  }
  return {};
}

}  // namespace gpurent::monitor
