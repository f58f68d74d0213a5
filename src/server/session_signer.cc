#include "server/session_signer.h"

#include <fmt/format.h>
#include <sodium.h>

#include <array>
#include <charconv>
#include <vector>

#include "common/files.h"

namespace gpurent::server {
namespace {

constexpr size_t kSessionKeyBytes = crypto_auth_hmacsha256_KEYBYTES;
// What a sealed session key is bound to (SecretBox's purpose).
constexpr std::string_view kPurpose = "session key";

Error invalid_session() {
  return {ErrorKind::kUnauthenticated, "invalid_session",
          "the login ticket or session is invalid or expired; run `gpurent jupyter ID` again"};
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::string hex(const unsigned char* data, size_t size) {
  std::string out(size * 2, '\0');
  sodium_bin2hex(out.data(), out.size() + 1, data, size);
  return out;
}

}  // namespace

SessionSigner::SessionSigner(std::string key) : key_(std::move(key)) {}

SessionSigner SessionSigner::random() {
  std::string key(kSessionKeyBytes, '\0');
  randombytes_buf(key.data(), key.size());
  return SessionSigner(std::move(key));
}

std::string SessionSigner::sealed_key(const SecretBox& box) const {
  return box.seal(key_, kPurpose);
}

Result<SessionSigner> SessionSigner::from_stored(std::string_view stored, const SecretBox& box) {
  std::string key;
  if (is_sealed(stored)) {
    GPURENT_TRY(opened, box.open(stored, kPurpose));
    key = std::move(opened);
  } else {
    key.assign(kSessionKeyBytes, '\0');
    size_t length = 0;
    if (sodium_hex2bin(reinterpret_cast<unsigned char*>(key.data()), key.size(), stored.data(),
                       stored.size(), nullptr, &length, nullptr) != 0 ||
        length != kSessionKeyBytes || stored.size() != kSessionKeyBytes * 2) {
      key.clear();
    }
  }
  if (key.size() != kSessionKeyBytes) {
    return fail(Error::internal("the stored session key is not a key"));
  }
  return SessionSigner(std::move(key));
}

Result<SessionSigner> SessionSigner::load_or_create(const std::string& path, const SecretBox& box) {
  auto stored = read_file(path, 4096);
  if (!stored && stored.error().code != "file_not_found") return fail(std::move(stored).error());
  if (stored && is_sealed(*stored)) {
    auto signer = from_stored(*stored, box);
    if (!signer && signer.error().code == "secret_unsealable") {
      return fail(Error{signer.error().kind, signer.error().code,
                        fmt::format("{}: {} (or delete {} for a new session key, which signs "
                                    "every browser out)",
                                    path, signer.error().message, path)});
    }
    return signer;
  }
  // No key yet, or one written before keys were sealed: the key's bytes themselves.
  if (stored && stored->size() != kSessionKeyBytes) {
    return fail(Error::internal(fmt::format("{} is not a session key ({} bytes, want {})", path,
                                            stored->size(), kSessionKeyBytes)));
  }
  SessionSigner signer = stored ? SessionSigner(std::move(*stored)) : random();
  GPURENT_CHECK(write_file_atomic(path, signer.sealed_key(box), 0600));
  return signer;
}

std::string SessionSigner::mac(std::string_view text) const {
  std::array<unsigned char, crypto_auth_hmacsha256_BYTES> out;
  crypto_auth_hmacsha256(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                         text.size(), reinterpret_cast<const unsigned char*>(key_.data()));
  return hex(out.data(), out.size());
}

std::string SessionSigner::sign(TokenKind kind, std::string_view instance_id,
                                std::string_view tenant_id, Timestamp expires) const {
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(expires.time_since_epoch()).count();
  const std::string text =
      fmt::format("{}.{}.{}.{}", static_cast<char>(kind), instance_id, tenant_id, seconds);
  return text + "." + mac(text);
}

Result<SessionClaims> SessionSigner::verify(std::string_view token, TokenKind kind,
                                            Timestamp now) const {
  const size_t last = token.rfind('.');
  if (last == std::string_view::npos || token.size() > 512) return fail(invalid_session());
  const std::string_view text = token.substr(0, last);
  if (!secrets_equal(token.substr(last + 1), mac(text))) {
    return fail(invalid_session());
  }
  // Signed by this server, so the fields are as it wrote them.
  std::vector<std::string_view> fields;
  for (size_t start = 0;;) {
    const size_t dot = text.find('.', start);
    fields.push_back(text.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (fields.size() != 4 || fields[0].size() != 1 || fields[0][0] != static_cast<char>(kind)) {
    return fail(invalid_session());
  }
  int64_t expiry = 0;
  const auto [ptr, ec] =
      std::from_chars(fields[3].data(), fields[3].data() + fields[3].size(), expiry);
  if (ec != std::errc() ||
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() >= expiry) {
    return fail(invalid_session());
  }
  return SessionClaims{std::string(fields[1]), std::string(fields[2])};
}

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t semi = header.find(';');
    const std::string_view pair = trim(header.substr(0, semi));
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && trim(pair.substr(0, eq)) == name) {
      return std::string(trim(pair.substr(eq + 1)));
    }
    if (semi == std::string_view::npos) break;
    header.remove_prefix(semi + 1);
  }
  return std::nullopt;
}

std::string without_cookie(std::string_view header, std::string_view name) {
  std::string out;
  while (!header.empty()) {
    const size_t semi = header.find(';');
    const std::string_view pair = trim(header.substr(0, semi));
    const size_t eq = pair.find('=');
    const bool named = eq != std::string_view::npos && trim(pair.substr(0, eq)) == name;
    if (!pair.empty() && !named) {
      if (!out.empty()) out += "; ";
      out += pair;
    }
    if (semi == std::string_view::npos) break;
    header.remove_prefix(semi + 1);
  }
  return out;
}

bool origin_matches_host(std::string_view origin, std::string_view host) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.starts_with(scheme)) return !host.empty() && origin.substr(scheme.size()) == host;
  }
  return false;
}

}  // namespace gpurent::server
