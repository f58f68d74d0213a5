#include "common/random.h"

#include <sodium.h>

#include <array>
#include <cstdlib>

#include "common/sodium_init.h"

namespace gpurent {

void ensure_sodium() {
  if (sodium_init() < 0) std::abort();
}

namespace {

constexpr std::string_view kBase32 = "0123456789abcdefghjkmnpqrstvwxyz";

}  // namespace

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rng::uniform(uint64_t bound) {
  // Rejection sampling keeps the distribution exact.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t value;
  do {
    value = next();
  } while (value >= limit);
  return value % bound;
}

std::string Rng::id(std::string_view prefix) {
  std::string out(prefix);
  uint64_t a = next(), b = next();
  for (int i = 0; i < 16; ++i) {
    uint64_t& src = i < 8 ? a : b;
    out.push_back(kBase32[src & 31]);
    src >>= 5;
  }
  return out;
}

uint64_t os_random_seed() {
  ensure_sodium();
  uint64_t seed;
  randombytes_buf(&seed, sizeof seed);
  return seed;
}

std::string new_secret(std::string_view prefix) {
  ensure_sodium();
  std::array<unsigned char, 32> bytes;
  randombytes_buf(bytes.data(), bytes.size());
  std::array<char, sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_URLSAFE_NO_PADDING)> text;
  sodium_bin2base64(text.data(), text.size(), bytes.data(), bytes.size(),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  return std::string(prefix) + text.data();
}

std::string sha256_hex(std::string_view bytes) {
  ensure_sodium();
  std::array<unsigned char, crypto_hash_sha256_BYTES> digest;
  crypto_hash_sha256(digest.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                     bytes.size());
  std::array<char, 2 * crypto_hash_sha256_BYTES + 1> hex;
  sodium_bin2hex(hex.data(), hex.size(), digest.data(), digest.size());
  return std::string(hex.data(), 2 * crypto_hash_sha256_BYTES);
}

std::string hash_secret(std::string_view secret) {
  ensure_sodium();
  std::array<unsigned char, 32> digest;
  crypto_generichash(digest.data(), digest.size(),
                     reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), nullptr,
                     0);
  std::array<char, 65> hex;
  sodium_bin2hex(hex.data(), hex.size(), digest.data(), digest.size());
  return std::string(hex.data(), 64);
}

}  // namespace gpurent
