// Gorilla compression of one time series: a chunk of (timestamp, double) samples.
//
// The encoding is the one of Facebook's Gorilla (Pelkonen et al., "Gorilla: A Fast, Scalable,
// In-Memory Time Series Database", VLDB 2015), section 4.1:
//   - header: the first timestamp and the first value, 64 bits each, verbatim;
//   - timestamps: the delta of deltas D = (t[n] - t[n-1]) - (t[n-1] - t[n-2]) (the delta before
//     the second sample counts as 0), written as '0' when D = 0, '10' + 7 bits when D is in
//     [-64, 63], '110' + 9 bits in [-256, 255], '1110' + 12 bits in [-2048, 2047], else '1111' +
//     64 bits (the paper uses 32; timestamps here are milliseconds and gaps may be months);
//   - values: X = bits(v[n]) XOR bits(v[n-1]); '0' when X = 0; else '1' then either '0' + the
//     meaningful bits when X's leading and trailing zeros fit inside the previous block, or '1' +
//     5 bits of leading zeros (capped at 31) + 6 bits of block length minus one + the block.
// Values are compared as bit patterns, so every double round-trips exactly: -0.0, NaN payloads,
// infinities and denormals included.
//
// Contract: append-only and strictly in time order. A timestamp at or before the last one (a
// duplicate or out-of-order sample) or a negative one is refused with an error value and leaves
// the chunk unchanged. Timestamps are milliseconds since the Unix epoch.
//
// Thread-safety: none; a chunk has one owner. Iterators are invalidated by append.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/result.h"

namespace gpurent::monitor {

struct Sample {
  int64_t t_ms = 0;
  double value = 0;
};

// Appends bit fields, most significant bit first, into 64-bit words.
class BitWriter {
 public:
  // Writes the low `bits` bits of `value`; 0 <= bits <= 64.
  void write(uint64_t value, int bits);
  size_t bit_size() const { return bit_size_; }
  const std::vector<uint64_t>& words() const { return words_; }
  size_t capacity_bytes() const { return words_.capacity() * sizeof(uint64_t); }
  // Gives back the growth slack once nothing more will be written.
  void shrink_to_fit() { words_.shrink_to_fit(); }

 private:
  std::vector<uint64_t> words_;
  size_t bit_size_ = 0;
};

// Reads what a BitWriter wrote. Reading past the end yields zero bits and sets exhausted().
class BitReader {
 public:
  BitReader(const uint64_t* words, size_t bit_size) : words_(words), bit_size_(bit_size) {}
  // Reads `bits` bits (0 <= bits <= 64) as an unsigned number.
  uint64_t read(int bits);
  bool read_bit() { return read(1) != 0; }
  bool exhausted() const { return exhausted_; }

 private:
  const uint64_t* words_;
  size_t bit_size_;
  size_t position_ = 0;
  bool exhausted_ = false;
};

class Chunk {
 public:
  // Refuses (kInvalidArgument "sample_out_of_order" / "negative_timestamp") without changing
  // the chunk.
  Status append(int64_t t_ms, double value);

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Valid when !empty().
  int64_t first_time() const { return first_t_; }
  int64_t last_time() const { return last_t_; }
  double last_value() const;

  // The encoded size, and the memory the chunk holds (encoding plus growth slack plus itself).
  size_t encoded_bytes() const { return (bits_.bit_size() + 7) / 8; }
  size_t memory_bytes() const { return sizeof(Chunk) + bits_.capacity_bytes(); }
  // Call when the chunk is complete: its memory then equals its encoding (rounded to words).
  void seal() { bits_.shrink_to_fit(); }

  // Decodes the samples in order. Usage: for (Chunk::Iterator it = c.begin(); it.next(&s);) ...
  class Iterator {
   public:
    explicit Iterator(const Chunk& chunk);
    bool next(Sample* out);

   private:
    BitReader reader_;
    size_t remaining_;
    size_t index_ = 0;
    int64_t t_ = 0;
    int64_t delta_ = 0;
    uint64_t value_bits_ = 0;
    int leading_ = 0;
    int trailing_ = 0;
  };
  Iterator begin() const { return Iterator(*this); }
  std::vector<Sample> decode() const;

 private:
  BitWriter bits_;
  size_t count_ = 0;
  int64_t first_t_ = 0;
  int64_t last_t_ = 0;
  int64_t last_delta_ = 0;
  uint64_t last_value_bits_ = 0;
  // The previous XOR block: -1 until one has been written.
  int leading_ = -1;
  int trailing_ = 0;
};

}  // namespace gpurent::monitor
