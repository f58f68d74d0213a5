#include "monitor/gorilla.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "common/random.h"

namespace gpurent::monitor {
namespace {

// Compares bit patterns, so that NaN == NaN and -0.0 != 0.0.
void expect_round_trip(const std::vector<Sample>& samples) {
  Chunk chunk;
  for (const Sample& s : samples) ASSERT_TRUE(chunk.append(s.t_ms, s.value)) << s.t_ms;
  ASSERT_EQ(chunk.size(), samples.size());
  const std::vector<Sample> decoded = chunk.decode();
  ASSERT_EQ(decoded.size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(decoded[i].t_ms, samples[i].t_ms) << i;
    EXPECT_EQ(std::bit_cast<uint64_t>(decoded[i].value), std::bit_cast<uint64_t>(samples[i].value))
        << i << ": " << samples[i].value;
  }
  if (!samples.empty()) {
    EXPECT_EQ(chunk.first_time(), samples.front().t_ms);
    EXPECT_EQ(chunk.last_time(), samples.back().t_ms);
  }
}

TEST(BitWriter, FieldsAcrossWordBoundariesReadBack) {
  BitWriter writer;
  Rng rng(7);
  std::vector<std::pair<uint64_t, int>> fields;
  for (int i = 0; i < 2000; ++i) {
    const int bits = static_cast<int>(rng.uniform(65));
    const uint64_t value = bits == 64 ? rng.next() : rng.next() & ((uint64_t{1} << bits) - 1);
    fields.emplace_back(value, bits);
    writer.write(value, bits);
  }
  BitReader reader(writer.words().data(), writer.bit_size());
  for (const auto& [value, bits] : fields) EXPECT_EQ(reader.read(bits), value);
  EXPECT_FALSE(reader.exhausted());
  reader.read(1);
  EXPECT_TRUE(reader.exhausted());
}

TEST(Gorilla, RandomSeriesRoundTrip) {
  Rng rng(42);
  for (int round = 0; round < 50; ++round) {
    std::vector<Sample> samples;
    int64_t t = static_cast<int64_t>(rng.uniform(uint64_t{1} << 41));
    const int n = 1 + static_cast<int>(rng.uniform(3000));
    for (int i = 0; i < n; ++i) {
      // Mostly regular with jitter, sometimes wild gaps; values of every shape.
      const uint64_t kind = rng.uniform(10);
      t += kind < 7 ? 1000 + static_cast<int64_t>(rng.uniform(21)) - 10
                    : 1 + static_cast<int64_t>(rng.uniform(kind == 9 ? 1'000'000'000 : 5000));
      const uint64_t shape = rng.uniform(4);
      double value = 0;
      if (shape == 0) value = std::bit_cast<double>(rng.next());  // any bit pattern, NaNs too
      if (shape == 1) value = static_cast<double>(rng.uniform(101));
      if (shape == 2) value = 250.0 + static_cast<double>(rng.uniform(100'000)) / 1000.0;
      if (shape == 3) value = samples.empty() ? 1.0 : samples.back().value;
      samples.push_back({t, value});
    }
    expect_round_trip(samples);
  }
}

TEST(Gorilla, EdgeValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const double denormal = std::numeric_limits<double>::denorm_min();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Sample> samples;
  const double values[] = {0.0,
                           -0.0,
                           nan,
                           -nan,
                           inf,
                           -inf,
                           denormal,
                           -denormal,
                           1.0,
                           denormal,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           0.0,
                           0.0};
  int64_t t = 0;
  for (double v : values) samples.push_back({t += 1000, v});
  expect_round_trip(samples);
}

TEST(Gorilla, HugeTimestampGaps) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  expect_round_trip({{0, 1}, {1, 2}, {max / 2, 3}, {max / 2 + 1, 4}, {max - 1, 5}, {max, 6}});
  // Every delta-of-delta bucket boundary, both signs.
  std::vector<Sample> samples;
  int64_t t = 1'000'000;
  int64_t delta = 10'000;
  for (int64_t dod : {0, -64, 63, -65, 64, -256, 255, -257, 256, -2048, 2047, -2049, 2048, 0}) {
    delta += dod;
    samples.push_back({t += delta, static_cast<double>(dod)});
  }
  expect_round_trip(samples);
}

TEST(Gorilla, ConstantSeriesAndOneSample) {
  expect_round_trip({{1'764'547'200'000, 42.5}});
  std::vector<Sample> samples;
  for (int i = 0; i < 7200; ++i) samples.push_back({1'764'547'200'000 + i * 1000, 1410});
  expect_round_trip(samples);
  Chunk chunk;
  for (const Sample& s : samples) ASSERT_TRUE(chunk.append(s.t_ms, s.value));
  // Header of 16 bytes, then one bit for the timestamp and one for the value per sample.
  EXPECT_LE(chunk.encoded_bytes(), 16u + (7200 * 2 + 7) / 8 + 2);
}

TEST(Gorilla, RefusesOutOfOrderDuplicateAndNegativeTimestamps) {
  Chunk chunk;
  ASSERT_TRUE(chunk.append(5000, 1));
  ASSERT_TRUE(chunk.append(6000, 2));
  auto duplicate = chunk.append(6000, 3);
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, "sample_out_of_order");
  EXPECT_EQ(chunk.append(5500, 3).error().code, "sample_out_of_order");
  Chunk empty;
  EXPECT_EQ(empty.append(-1, 0).error().code, "negative_timestamp");
  EXPECT_TRUE(empty.empty());
  // The refused samples left no trace.
  ASSERT_TRUE(chunk.append(7000, 4));
  const auto decoded = chunk.decode();
  ASSERT_EQ(decoded.size(), 3u);
  EXPECT_EQ(decoded[2].t_ms, 7000);
  EXPECT_EQ(decoded[2].value, 4);
  EXPECT_EQ(chunk.last_value(), 4);
}

// A GPU under a training job sampled at 1 Hz for two hours: integer utilisation and temperature
// (as NVML reports them), power in milliwatts, steady clocks, slowly moving memory. Returns the
// encoded bytes per sample of each series: util, temperature, power, clock, memory.
std::vector<double> realistic_bytes_per_sample(int64_t jitter_ms) {
  Rng rng(1);
  std::vector<Chunk> chunks(5);
  int64_t t = 1'764'547'200'000;
  double temperature = 45;
  for (int i = 0; i < 7200; ++i) {
    t += 1000;
    const int64_t stamp = t + static_cast<int64_t>(rng.uniform(2 * jitter_ms + 1)) - jitter_ms;
    const bool busy = (i / 600) % 2 == 0;
    temperature += busy ? (temperature < 78 ? 0.05 : 0) : (temperature > 40 ? -0.05 : 0);
    const double values[] = {
        busy ? 95 + static_cast<double>(rng.uniform(6)) : 0, std::round(temperature),
        busy ? 600.0 + static_cast<double>(rng.uniform(60'000)) / 1000.0 : 71.234,
        busy ? 1980.0 : 345.0, busy ? 61'440 + static_cast<double>(i % 600 / 100) : 512.0};
    for (size_t m = 0; m < chunks.size(); ++m) EXPECT_TRUE(chunks[m].append(stamp, values[m]));
  }
  std::vector<double> result;
  for (const Chunk& chunk : chunks)
    result.push_back(static_cast<double>(chunk.encoded_bytes()) / 7200);
  return result;
}

TEST(Gorilla, BytesPerSampleOnARealisticSeries) {
  // Stamped on the sampling tick: nearly every delta of deltas is 0 (one bit).
  const std::vector<double> exact = realistic_bytes_per_sample(0);
  // Measured 1.00, 0.30, 3.72, 0.26, 0.27.
  EXPECT_LT(exact[0], 1.1);   // utilisation: a few bits of change while busy, constant when idle
  EXPECT_LT(exact[1], 0.35);  // temperature
  EXPECT_LT(exact[2], 4.0);   // milliwatt noise is incompressible by XOR
  EXPECT_LT(exact[3], 0.3);   // clocks: two bits per sample
  EXPECT_LT(exact[4], 0.3);   // memory
  // Stamped when read, with +-2 ms of jitter: nearly every timestamp costs 9 bits instead of 1.
  const std::vector<double> jittered = realistic_bytes_per_sample(2);
  for (size_t m = 0; m < exact.size(); ++m) {
    EXPECT_GT(jittered[m], exact[m] + 0.8) << m;
    EXPECT_LT(jittered[m], exact[m] + 1.2) << m;
  }
}

}  // namespace
}  // namespace gpurent::monitor
