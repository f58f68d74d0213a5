#include "common/secret_box.h"

#include <fmt/format.h>
#include <sodium.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "common/assert.h"
#include "common/files.h"
#include "common/sodium_init.h"

namespace gpurent {
namespace {

constexpr std::string_view kSealedPrefix = "sealed:";
constexpr std::string_view kSealedV1 = "sealed:v1:";
constexpr size_t kNonceBytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
constexpr size_t kTagBytes = crypto_aead_xchacha20poly1305_ietf_ABYTES;
constexpr int kBase64 = sodium_base64_VARIANT_ORIGINAL;
static_assert(SecretBox::kKeyBytes == crypto_aead_xchacha20poly1305_ietf_KEYBYTES);

const unsigned char* bytes(std::string_view text) {
  return reinterpret_cast<const unsigned char*>(text.data());
}

Error invalid_key_file(const std::string& path, std::string_view why) {
  return Error::invalid("invalid_key_file", fmt::format("the secrets key file {} {}", path, why));
}

}  // namespace

SecretBox::SecretBox(std::string_view key, std::string path) : path_(std::move(path)) {
  GPURENT_ASSERT(key.size() == kKeyBytes, "a secrets key of {} bytes", key.size());
  std::memcpy(key_.data(), key.data(), kKeyBytes);
}

Result<SecretBox> SecretBox::load_or_create(const std::string& path) {
  ensure_sodium();
  auto read = read_file(path, kKeyBytes + 1);
  if (!read && read.error().code == "file_not_found") {
    std::string key(kKeyBytes, '\0');
    randombytes_buf(key.data(), key.size());
    if (auto written = write_file_atomic(path, key, 0600); !written) {
      return fail(invalid_key_file(path, "cannot be created: " + written.error().message));
    }
    return SecretBox(key, path);
  }
  if (!read) return fail(invalid_key_file(path, "cannot be read: " + read.error().message));
  if (read->size() != kKeyBytes) {
    return fail(invalid_key_file(
        path, fmt::format("holds {} bytes, not a key of {} (a damaged or truncated copy?)",
                          read->size(), kKeyBytes)));
  }
  // As ssh does with a private key: one that others could read may already be theirs.
  std::error_code ec;
  const auto permissions = std::filesystem::status(path, ec).permissions();
  if (ec || (permissions & (std::filesystem::perms::group_all |
                            std::filesystem::perms::others_all)) != std::filesystem::perms::none) {
    return fail(invalid_key_file(path, "may be read by others than its owner: chmod 600 it"));
  }
  return SecretBox(*read, path);
}

std::string SecretBox::seal(std::string_view plaintext, std::string_view purpose) const {
  ensure_sodium();
  std::vector<unsigned char> sealed(kNonceBytes + plaintext.size() + kTagBytes);
  randombytes_buf(sealed.data(), kNonceBytes);
  unsigned long long length = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(sealed.data() + kNonceBytes, &length, bytes(plaintext),
                                             plaintext.size(), bytes(purpose), purpose.size(),
                                             nullptr, sealed.data(), key_.data());
  std::string text(sodium_base64_ENCODED_LEN(sealed.size(), kBase64), '\0');
  sodium_bin2base64(text.data(), text.size(), sealed.data(), sealed.size(), kBase64);
  text.resize(std::strlen(text.c_str()));
  return std::string(kSealedV1) + text;
}

Result<std::string> SecretBox::open(std::string_view sealed, std::string_view purpose) const {
  ensure_sodium();
  if (!sealed.starts_with(kSealedV1)) {
    return fail(
        Error{ErrorKind::kInternal, "secret_unsealable",
              fmt::format("the stored {} is not sealed in a form this version reads "
                          "(\"{}\"): was it written by a later gpurent?",
                          purpose, sealed.substr(0, sealed.find(':', kSealedPrefix.size())))});
  }
  const std::string_view text = sealed.substr(kSealedV1.size());
  std::vector<unsigned char> raw(text.size());
  size_t raw_length = 0;
  std::string plaintext;
  if (sodium_base642bin(raw.data(), raw.size(), text.data(), text.size(), nullptr, &raw_length,
                        nullptr, kBase64) == 0 &&
      raw_length >= kNonceBytes + kTagBytes) {
    plaintext.resize(raw_length - kNonceBytes - kTagBytes);
    unsigned long long length = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(
            reinterpret_cast<unsigned char*>(plaintext.data()), &length, nullptr,
            raw.data() + kNonceBytes, raw_length - kNonceBytes, bytes(purpose), purpose.size(),
            raw.data(), key_.data()) == 0) {
      return plaintext;
    }
  }
  return fail(Error{
      ErrorKind::kInternal, "secret_unsealable",
      fmt::format("the stored {} cannot be opened with the key in {}: it was sealed under another "
                  "key (a lost or replaced key file, or one that differs between the servers of "
                  "one store?) or has been altered. Put back the key file it was sealed with",
                  purpose, path_)});
}

bool is_sealed(std::string_view text) { return text.starts_with(kSealedPrefix); }

bool secrets_equal(std::string_view presented, std::string_view expected) {
  ensure_sodium();
  std::array<unsigned char, 32> a;
  std::array<unsigned char, 32> b;
  crypto_generichash(a.data(), a.size(), bytes(presented), presented.size(), nullptr, 0);
  crypto_generichash(b.data(), b.size(), bytes(expected), expected.size(), nullptr, 0);
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace gpurent
