#include "net/tls.h"

#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/ssl/context.hpp>

#include <fmt/format.h>

namespace gpurent::net {

namespace ssl = boost::asio::ssl;

namespace {

Error invalid_files(std::string_view what, const std::string& path,
                    const boost::system::error_code& ec) {
  return Error::invalid("invalid_tls_files",
                        fmt::format("cannot use the TLS {} '{}': {}", what, path, ec.message()));
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string();
}

// "CN=api.example, expires Mar  1 00:00:00 2027 GMT".
std::string describe(const X509* certificate) {
  if (certificate == nullptr) return "no certificate";
  const std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(certificate), 0, XN_FLAG_RFC2253);
  BIO_puts(bio.get(), ", expires ");
  ASN1_TIME_print(bio.get(), X509_get0_notAfter(certificate));
  return bio_text(bio.get());
}

}  // namespace

TlsContext::~TlsContext() = default;

Result<std::shared_ptr<TlsContext>> TlsContext::load(const TlsFiles& files) {
  std::shared_ptr<TlsContext> made(new TlsContext());
  made->ssl_ = std::make_unique<ssl::context>(ssl::context::tls_server);
  ssl::context& context = *made->ssl_;
  SSL_CTX* native = context.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  boost::system::error_code ec;
  context.use_certificate_chain_file(files.cert_file, ec);
  if (ec) return fail(invalid_files("certificate", files.cert_file, ec));
  context.use_private_key_file(files.key_file, ssl::context::pem, ec);
  if (ec) return fail(invalid_files("key", files.key_file, ec));
  if (SSL_CTX_check_private_key(native) != 1) {
    return fail(Error::invalid(
        "invalid_tls_files", fmt::format("the TLS key '{}' is not the key of the certificate '{}'",
                                         files.key_file, files.cert_file)));
  }
  if (!files.client_ca_file.empty()) {
    context.load_verify_file(files.client_ca_file, ec);
    if (ec) return fail(invalid_files("client CA", files.client_ca_file, ec));
    // Names the CA in the handshake, so that a client with several certificates picks its own.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca_file.c_str());
    if (names == nullptr) {
      return fail(Error::invalid(
          "invalid_tls_files",
          fmt::format("the TLS client CA '{}' holds no certificate", files.client_ca_file)));
    }
    SSL_CTX_set_client_CA_list(native, names);
    // Asked for, not required: whether a route needs one is the server's decision.
    context.set_verify_mode(ssl::verify_peer);
    // Resumed sessions keep their client's verified certificate only under a session id context.
    static constexpr unsigned char kSessionContext[] = "gpurent";
    SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
    made->asks_client_certificates_ = true;
  }
  made->description_ = describe(SSL_CTX_get0_certificate(native));
  return made;
}

}  // namespace gpurent::net
