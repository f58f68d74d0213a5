// Secrets at rest and secrets compared.
//
// SecretBox seals the secrets a server keeps (the console's and the services proxy's signing key,
// in its data directory or shared through PostgreSQL) under a key of its own, the key file
// (`[secrets] key_file`, server/server_config.h): a copy of the data directory or of the database
// alone no longer signs anyone in. A sealed value is text, "sealed:v1:" + base64(nonce ‖ ciphertext
// ‖ tag), made with XChaCha20-Poly1305 (libsodium's crypto_aead_xchacha20poly1305_ietf) under a
// fresh random nonce per value, and bound to what it is (`purpose`, the associated data) so that
// one sealed value cannot be passed off as another. The version lets a later format be told apart.
//
// Contract:
// - open() gives back the plaintext only under the key and purpose it was sealed with; any other
//   key, purpose, or a single changed character is Error "secret_unsealable" (kInternal), never a
//   wrong plaintext. A caller that gets it must stop, not make a new secret: the old one is still
//   what browsers and other servers hold, and a restored key file brings it back.
// - is_sealed() tells a sealed value from one stored before sealing existed (the caller migrates
//   those: opens nothing, seals the plaintext and writes it back).
// - The key file is 32 random bytes, mode 0600, made by load_or_create() when missing; one that is
//   another size, or readable by anyone but its owner, is refused.
// Thread-safety: a SecretBox is immutable; any thread may seal and open.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpurent {

class SecretBox {
 public:
  static constexpr size_t kKeyBytes = 32;

  // Reads the key file at `path`, or creates it (32 random bytes, mode 0600) when there is none.
  // Error "invalid_key_file" naming the file and what is wrong with it.
  static Result<SecretBox> load_or_create(const std::string& path);
  // A box over a key held in memory (tests; a key of another size is a programming error).
  explicit SecretBox(std::string_view key, std::string path = "(in memory)");

  std::string seal(std::string_view plaintext, std::string_view purpose) const;
  Result<std::string> open(std::string_view sealed, std::string_view purpose) const;

  const std::string& path() const { return path_; }

 private:
  std::array<unsigned char, kKeyBytes> key_{};
  std::string path_;  // for messages
};

// Whether `text` is a sealed value (of any version), as opposed to a plaintext stored before.
bool is_sealed(std::string_view text);

// Whether a presented secret is the expected one, in time that depends on their lengths only (both
// are hashed, and the digests compared with sodium_memcmp): a `==` that stops at the first
// difference lets a caller who can time many tries learn the secret piece by piece.
bool secrets_equal(std::string_view presented, std::string_view expected);

}  // namespace gpurent
