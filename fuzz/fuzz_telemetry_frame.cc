// The telemetry frame of a node's report (model/telemetry.h): a binary format of varints and
// deltas, read by the server from every report. The first byte says how the rest is read: as the
// frame itself (decode_telemetry_frame) or as the report's base64 text of one
// (decode_telemetry_text).
//
// Invariants: a malformed frame is an Error "invalid_message", never a crash, an overflow or an
// allocation past the bounds; decoding stops one sample or event past kMaxTelemetrySamples and
// kMaxTelemetryXids (so check_telemetry_bounds refuses it); what a frame decodes to is encoded and
// decoded back the same (telemetry_compare.h says what a trip may change), through the frame and
// through its base64 text alike.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "model/telemetry.h"
#include "telemetry_compare.h"

namespace gpurent::model {
namespace {

using fuzz::shown;

void check_batch(const TelemetryBatch& batch, std::string_view input) {
  FUZZ_CHECK(batch.samples.size() <= kMaxTelemetrySamples + 1 &&
                 batch.xids.size() <= kMaxTelemetryXids + 1,
             "{} samples, {} events from {} bytes", batch.samples.size(), batch.xids.size(),
             input.size());
  const bool within = check_telemetry_bounds(batch).has_value();
  FUZZ_CHECK(within == (batch.samples.size() <= kMaxTelemetrySamples &&
                        batch.xids.size() <= kMaxTelemetryXids),
             "check_telemetry_bounds on {} samples and {} events", batch.samples.size(),
             batch.xids.size());
  for (const auto& sample : batch.samples) {
    FUZZ_CHECK(sample.uuid.size() <= kMaxTelemetryUuidBytes, "a uuid of {} bytes",
               sample.uuid.size());
    if (sample.power_w) FUZZ_CHECK(std::isfinite(*sample.power_w), "power {}", *sample.power_w);
  }
  const std::string frame = encode_telemetry_frame(batch);
  auto again = decode_telemetry_frame(frame);
  FUZZ_CHECK(again.has_value(), "the frame {} of a decoded batch is refused: {}", shown(frame),
             again.error().message);
  FUZZ_CHECK(fuzz::same_after_trip(batch, *again), "{} decoded, encoded as {}, decodes otherwise",
             shown(input), shown(frame));
  // A second trip changes nothing at all.
  FUZZ_CHECK(encode_telemetry_frame(*again) == encode_telemetry_frame(fuzz::grouped(*again)),
             "encoding a grouped batch is not stable");
  const std::string text = telemetry_text(batch);
  auto from_text = decode_telemetry_text(text);
  FUZZ_CHECK(from_text && *from_text == *again, "the base64 text {} decodes otherwise",
             shown(text));
}

}  // namespace
}  // namespace gpurent::model

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpurent::model;
  gpurent::fuzz::Input input(data, size);
  const bool as_text = input.byte() & 1;
  const std::string_view rest = input.rest();
  auto batch = as_text ? decode_telemetry_text(rest) : decode_telemetry_frame(rest);
  if (!batch) {
    FUZZ_CHECK(batch.error().code == "invalid_message", "{}: {}", batch.error().code,
               batch.error().message);
    return 0;
  }
  check_batch(*batch, rest);
  return 0;
}
