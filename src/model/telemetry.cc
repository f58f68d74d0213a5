#include "model/telemetry.h"

#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <type_traits>

namespace gpurent::model {
namespace {

// Column values as the frame's integers: power in tenths of a watt, everything else as it is.
template <class Value>
std::optional<int64_t> to_wire(const std::optional<Value>& value) {
  if constexpr (std::is_same_v<Value, double>) {
    if (!value || !std::isfinite(*value) || std::abs(*value) > 1e15) return std::nullopt;
    return std::llround(*value * 10);
  } else {
    return value;
  }
}

template <class Value>
Value from_wire(int64_t wire) {
  if constexpr (std::is_same_v<Value, double>) {
    return static_cast<double>(wire) / 10;
  } else {
    return wire;
  }
}

class FrameWriter {
 public:
  void byte(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void uvarint(uint64_t v) {
    while (v >= 0x80) {
      byte(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    byte(static_cast<uint8_t>(v));
  }
  void svarint(int64_t v) {
    const auto u = static_cast<uint64_t>(v);
    uvarint((u << 1) ^ (v < 0 ? ~uint64_t{0} : 0));
  }
  void str(std::string_view s) {
    uvarint(s.size());
    out_.append(s);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

// Reads a frame; a read past the end or an overlong number is an error (sets failed(), reads 0).
class FrameReader {
 public:
  explicit FrameReader(std::string_view in) : in_(in) {}
  bool failed() const { return failed_; }
  bool at_end() const { return pos_ == in_.size(); }

  uint8_t byte() {
    if (pos_ >= in_.size()) return fail_read();
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint64_t uvarint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return fail_read();
      const auto b = static_cast<uint8_t>(in_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return fail_read();
  }
  int64_t svarint() {
    const uint64_t u = uvarint();
    return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  std::string_view bytes(uint64_t n) {
    if (n > in_.size() - pos_) {
      fail_read();
      return {};
    }
    const auto out = in_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  std::string_view str(uint64_t max) {
    const uint64_t n = uvarint();
    if (n > max) {
      fail_read();
      return {};
    }
    return bytes(n);
  }

 private:
  uint8_t fail_read() {
    failed_ = true;
    pos_ = in_.size();
    return 0;
  }

  std::string_view in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

Error malformed(std::string_view why) {
  return Error::invalid("invalid_message", fmt::format("telemetry frame: {}", why));
}

}  // namespace

Status check_telemetry_bounds(const TelemetryBatch& batch) {
  if (batch.samples.size() > kMaxTelemetrySamples || batch.xids.size() > kMaxTelemetryXids) {
    return fail(Error::invalid(
        "telemetry_too_large",
        fmt::format("a report carries at most {} telemetry samples and {} XID events (got {} and "
                    "{})",
                    kMaxTelemetrySamples, kMaxTelemetryXids, batch.samples.size(),
                    batch.xids.size())));
  }
  return {};
}

std::string encode_telemetry_frame(const TelemetryBatch& batch) {
  // Groups by GPU in order of first appearance, keeping each GPU's samples in order. A node has a
  // handful of GPUs: a linear search beats a map.
  std::vector<std::vector<const GpuSample*>> groups;
  for (const auto& sample : batch.samples) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& group) { return group.front()->uuid == sample.uuid; });
    if (it == groups.end()) it = groups.emplace(groups.end());
    it->push_back(&sample);
  }
  FrameWriter w;
  w.out().reserve(16 + batch.samples.size() * 32);
  w.byte(kTelemetryFrameVersion);
  w.uvarint(static_cast<uint64_t>(batch.dropped));
  w.uvarint(groups.size());
  for (const auto& group : groups) {
    w.str(group.front()->uuid);
    w.uvarint(group.size());
    uint64_t fields = 0;
    uint64_t gaps = 0;
    int bit = 0;
    for_each_sample_field([&](const char*, const char*, auto member) {
      for (const GpuSample* sample : group) {
        (to_wire(sample->*member) ? fields : gaps) |= uint64_t{1} << bit;
      }
      ++bit;
    });
    gaps &= fields;
    w.uvarint(fields);
    w.uvarint(gaps);
    int64_t previous = 0;
    for (const GpuSample* sample : group) {
      w.svarint(static_cast<int64_t>(static_cast<uint64_t>(sample->time_ms) -
                                     static_cast<uint64_t>(previous)));
      previous = sample->time_ms;
    }
    bit = 0;
    for_each_sample_field([&](const char*, const char*, auto member) {
      const uint64_t mask = uint64_t{1} << bit++;
      if ((fields & mask) == 0) return;
      if (gaps & mask) {
        for (size_t i = 0; i < group.size(); i += 8) {
          uint8_t presence = 0;
          for (size_t j = i; j < std::min(i + 8, group.size()); ++j) {
            if (to_wire(group[j]->*member)) presence |= static_cast<uint8_t>(1u << (j - i));
          }
          w.byte(presence);
        }
      }
      uint64_t last = 0;
      for (const GpuSample* sample : group) {
        const auto value = to_wire(sample->*member);
        if (!value) continue;
        w.svarint(static_cast<int64_t>(static_cast<uint64_t>(*value) - last));
        last = static_cast<uint64_t>(*value);
      }
    });
  }
  w.uvarint(batch.xids.size());
  for (const auto& xid : batch.xids) {
    w.str(xid.uuid);
    w.svarint(xid.time_ms);
    w.svarint(xid.code);
  }
  return std::move(w.out());
}

Result<TelemetryBatch> decode_telemetry_frame(std::string_view frame) {
  FrameReader r(frame);
  const uint8_t version = r.byte();
  if (version != kTelemetryFrameVersion) {
    return fail(Error::invalid(
        "invalid_message",
        fmt::format("telemetry frame version {} (this server reads {}): upgrade the agent", version,
                    kTelemetryFrameVersion)));
  }
  TelemetryBatch batch;
  batch.dropped = static_cast<int64_t>(r.uvarint());
  const uint64_t gpus = r.uvarint();
  for (uint64_t g = 0; g < gpus && !r.failed(); ++g) {
    const std::string_view uuid = r.str(kMaxTelemetryUuidBytes);
    const uint64_t n = r.uvarint();
    // Bounded before anything is allocated: a batch past the bound is refused by the caller.
    if (n > kMaxTelemetrySamples + 1 - batch.samples.size()) {
      batch.samples.resize(kMaxTelemetrySamples + 1);
      return batch;
    }
    const uint64_t fields = r.uvarint();
    const uint64_t gaps = r.uvarint();
    if (r.failed()) break;
    const size_t first = batch.samples.size();
    batch.samples.resize(first + n, GpuSample{.uuid = std::string(uuid)});
    const std::span<GpuSample> samples(batch.samples.data() + first, n);
    uint64_t time = 0;
    for (auto& sample : samples) {
      time += static_cast<uint64_t>(r.svarint());
      sample.time_ms = static_cast<int64_t>(time);
    }
    int bit = 0;
    for_each_sample_field([&](const char*, const char*, auto member) {
      const uint64_t mask = uint64_t{1} << bit++;
      if ((fields & mask) == 0) return;
      const std::string_view presence = (gaps & mask) ? r.bytes((n + 7) / 8) : std::string_view();
      using Value = typename std::remove_reference_t<decltype(GpuSample{}.*member)>::value_type;
      uint64_t last = 0;
      for (size_t i = 0; i < samples.size() && !r.failed(); ++i) {
        if (!presence.empty() && (static_cast<uint8_t>(presence[i / 8]) & (1u << (i % 8))) == 0) {
          continue;
        }
        last += static_cast<uint64_t>(r.svarint());
        samples[i].*member = from_wire<Value>(static_cast<int64_t>(last));
      }
    });
  }
  const uint64_t xids = r.uvarint();
  for (uint64_t i = 0; i < xids && !r.failed(); ++i) {
    if (batch.xids.size() == kMaxTelemetryXids) {
      batch.xids.emplace_back();
      return batch;
    }
    XidEvent& xid = batch.xids.emplace_back();
    xid.uuid = r.str(kMaxTelemetryUuidBytes);
    xid.time_ms = r.svarint();
    xid.code = r.svarint();
  }
  if (r.failed()) return fail(malformed("truncated or overlong"));
  if (!r.at_end()) return fail(malformed("bytes after the end"));
  return batch;
}

std::string telemetry_text(const TelemetryBatch& batch) {
  const std::string frame = encode_telemetry_frame(batch);
  std::string text(sodium_base64_ENCODED_LEN(frame.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(text.data(), text.size(), reinterpret_cast<const unsigned char*>(frame.data()),
                    frame.size(), sodium_base64_VARIANT_ORIGINAL);
  text.pop_back();  // the terminating NUL
  return text;
}

void to_json(Json& j, const TelemetryBatch& v) { j = telemetry_text(v); }
void write_json(JsonWriter& writer, const TelemetryBatch& v) { writer.string(telemetry_text(v)); }

Result<TelemetryBatch> decode_telemetry_text(std::string_view base64) {
  std::string frame(base64.size() / 4 * 3 + 3, '\0');
  size_t length = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(frame.data()), frame.size(), base64.data(),
                        base64.size(), nullptr, &length, nullptr,
                        sodium_base64_VARIANT_ORIGINAL) != 0) {
    return fail(Error::invalid("invalid_message", "telemetry: not valid base64"));
  }
  frame.resize(length);
  return decode_telemetry_frame(frame);
}

void from_json(const Json& j, TelemetryBatch& v) {
  if (!j.is_string()) throw std::invalid_argument(std::string(kTelemetryIsAFrame));
  auto batch = decode_telemetry_text(j.get_ref<const std::string&>());
  if (!batch) throw std::invalid_argument(batch.error().message);
  v = std::move(*batch);
}

}  // namespace gpurent::model
