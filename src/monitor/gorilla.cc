#include "monitor/gorilla.h"

#include <bit>

#include <fmt/format.h>

namespace gpurent::monitor {
namespace {

constexpr uint64_t low_bits(int bits) {
  return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// Reads a two's-complement number of `bits` bits.
int64_t sign_extend(uint64_t value, int bits) {
  if (bits >= 64) return static_cast<int64_t>(value);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((value ^ sign) - sign);
}

}  // namespace

void BitWriter::write(uint64_t value, int bits) {
  if (bits == 0) return;
  value &= low_bits(bits);
  const int used = static_cast<int>(bit_size_ % 64);
  if (used == 0) {
    // Grow by a quarter rather than doubling: an open chunk's slack is memory held per series.
    if (words_.size() == words_.capacity()) words_.reserve(words_.size() + words_.size() / 4 + 4);
    words_.push_back(0);
  }
  const int room = 64 - used;
  if (bits <= room) {
    words_.back() |= value << (room - bits);
  } else {
    const int rest = bits - room;
    words_.back() |= value >> rest;
    if (words_.size() == words_.capacity()) words_.reserve(words_.size() + words_.size() / 4 + 4);
    words_.push_back(value << (64 - rest));
  }
  bit_size_ += static_cast<size_t>(bits);
}

uint64_t BitReader::read(int bits) {
  if (bits == 0) return 0;
  if (position_ + static_cast<size_t>(bits) > bit_size_) {
    exhausted_ = true;
    position_ = bit_size_;
    return 0;
  }
  const size_t word = position_ / 64;
  const int offset = static_cast<int>(position_ % 64);
  const int available = 64 - offset;
  position_ += static_cast<size_t>(bits);
  if (bits <= available) return (words_[word] << offset) >> (64 - bits);
  const int rest = bits - available;
  const uint64_t high = words_[word] & low_bits(available);
  return (high << rest) | (words_[word + 1] >> (64 - rest));
}

Status Chunk::append(int64_t t_ms, double value) {
  if (t_ms < 0) {
    return fail(Error::invalid("negative_timestamp",
                               fmt::format("timestamp {} ms is before the Unix epoch", t_ms)));
  }
  const uint64_t value_bits = std::bit_cast<uint64_t>(value);
  if (count_ == 0) {
    bits_.write(static_cast<uint64_t>(t_ms), 64);
    bits_.write(value_bits, 64);
    first_t_ = last_t_ = t_ms;
    last_value_bits_ = value_bits;
    count_ = 1;
    return {};
  }
  if (t_ms <= last_t_) {
    return fail(
        Error::invalid("sample_out_of_order",
                       fmt::format("sample at {} ms is not after the series' last sample at {} ms",
                                   t_ms, last_t_)));
  }
  // Both deltas lie in (0, 2^63) because timestamps are non-negative, so this cannot overflow.
  const int64_t delta = t_ms - last_t_;
  const int64_t dod = delta - last_delta_;
  const auto raw = static_cast<uint64_t>(dod);
  if (dod == 0) {
    bits_.write(0, 1);
  } else if (dod >= -64 && dod <= 63) {
    bits_.write((uint64_t{0b10} << 7) | (raw & low_bits(7)), 2 + 7);
  } else if (dod >= -256 && dod <= 255) {
    bits_.write((uint64_t{0b110} << 9) | (raw & low_bits(9)), 3 + 9);
  } else if (dod >= -2048 && dod <= 2047) {
    bits_.write((uint64_t{0b1110} << 12) | (raw & low_bits(12)), 4 + 12);
  } else {
    bits_.write(0b1111, 4);
    bits_.write(raw, 64);
  }
  last_delta_ = delta;
  last_t_ = t_ms;

  const uint64_t x = value_bits ^ last_value_bits_;
  last_value_bits_ = value_bits;
  ++count_;
  if (x == 0) {
    bits_.write(0, 1);
    return {};
  }
  // Leading zeros are capped at 31, the most that 5 bits can say; the block then starts early.
  const int leading = std::min(std::countl_zero(x), 31);
  const int trailing = std::countr_zero(x);
  if (leading_ >= 0 && leading >= leading_ && trailing >= trailing_) {
    bits_.write(0b10, 2);
    bits_.write(x >> trailing_, 64 - leading_ - trailing_);
    return {};
  }
  const int length = 64 - leading - trailing;
  bits_.write((uint64_t{0b11} << 11) | (static_cast<uint64_t>(leading) << 6) |
                  static_cast<uint64_t>(length - 1),
              2 + 5 + 6);
  bits_.write(x >> trailing, length);
  leading_ = leading;
  trailing_ = trailing;
  return {};
}

double Chunk::last_value() const { return std::bit_cast<double>(last_value_bits_); }

Chunk::Iterator::Iterator(const Chunk& chunk)
    : reader_(chunk.bits_.words().data(), chunk.bits_.bit_size()), remaining_(chunk.count_) {}

bool Chunk::Iterator::next(Sample* out) {
  if (remaining_ == 0) return false;
  --remaining_;
  if (index_++ == 0) {
    t_ = static_cast<int64_t>(reader_.read(64));
    value_bits_ = reader_.read(64);
  } else {
    int bits = 0;
    if (!reader_.read_bit()) {
      bits = 0;
    } else if (!reader_.read_bit()) {
      bits = 7;
    } else if (!reader_.read_bit()) {
      bits = 9;
    } else if (!reader_.read_bit()) {
      bits = 12;
    } else {
      bits = 64;
    }
    if (bits > 0) delta_ += sign_extend(reader_.read(bits), bits);
    t_ += delta_;
    if (reader_.read_bit()) {
      if (reader_.read_bit()) {
        leading_ = static_cast<int>(reader_.read(5));
        trailing_ = 64 - leading_ - (static_cast<int>(reader_.read(6)) + 1);
      }
      value_bits_ ^= reader_.read(64 - leading_ - trailing_) << trailing_;
    }
  }
  *out = {t_, std::bit_cast<double>(value_bits_)};
  return true;
}

std::vector<Sample> Chunk::decode() const {
  std::vector<Sample> samples;
  samples.reserve(count_);
  Sample sample;
  for (Iterator it = begin(); it.next(&sample);) samples.push_back(sample);
  return samples;
}

}  // namespace gpurent::monitor
