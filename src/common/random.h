// Randomness, in two kinds that must not be mixed up.
//
// Rng is a seeded, deterministic generator (splitmix64): the controller draws ids from it so that a
// simulation replays exactly from its seed. Secrets (API keys, join tokens, node credentials) come
// from the operating system through libsodium and never enter the controller: it only sees hashes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpurent {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, bound); bound must be > 0.
  uint64_t uniform(uint64_t bound);
  // prefix + 16 characters of lowercase base32 (80 bits): "i-3kq9x2m4a7c1d0ef".
  std::string id(std::string_view prefix);

 private:
  uint64_t state_;
};

// A seed from the operating system's entropy, for a server that wants fresh ids after a restart.
uint64_t os_random_seed();

// A new secret: prefix + 43 characters of base64url (256 random bits).
std::string new_secret(std::string_view prefix);
// The hex BLAKE2b-256 digest under which a secret is stored and looked up. The secrets are 256-bit
// random strings, so a fast hash is right: there is nothing to brute-force.
std::string hash_secret(std::string_view secret);
// The lowercase hex SHA-256 of bytes (uploads are checked with it, as `sha256sum` prints it).
std::string sha256_hex(std::string_view bytes);

}  // namespace gpurent
