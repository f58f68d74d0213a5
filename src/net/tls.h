// TLS for HttpServer: a certificate and key loaded from PEM files, and optionally the CA that
// clients' certificates must chain to (mutual TLS).
//
// - Protocols: TLS 1.2 and 1.3 only, OpenSSL's default cipher suites (forward secret, AEAD
//   first), no compression, no renegotiation.
// - Clients' certificates are asked for only when client_ca_file is set, and are then optional
//   at the handshake: a connection without one (a browser, the CLI) is served, and what it may
//   do is the server's decision per route (the control plane asks one of its agents). A
//   certificate that is presented must chain to the client CA, or the handshake fails.
// - Reloading: a TlsContext is immutable once loaded. Whoever reloads the files loads a new one
//   and hands it to HttpServer::set_tls; connections already open keep the one they began with.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"

namespace boost::asio::ssl {
class context;
}

namespace gpurent::net {

struct TlsFiles {
  std::string cert_file;       // PEM: the server's certificate, then its chain
  std::string key_file;        // PEM: its private key
  std::string client_ca_file;  // PEM: the CA of clients' certificates; "": none asked for
  bool operator==(const TlsFiles&) const = default;
};

class TlsContext {
 public:
  // Errors: "invalid_tls_files" naming the file and OpenSSL's reason (unreadable, not PEM, the
  // key does not match the certificate).
  static Result<std::shared_ptr<TlsContext>> load(const TlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  boost::asio::ssl::context& ssl() const { return *ssl_; }
  bool asks_client_certificates() const { return asks_client_certificates_; }
  // The certificate's subject and expiry, for the log ("CN=api.example, expires 2027-03-01").
  const std::string& description() const { return description_; }

 private:
  TlsContext() = default;
  std::unique_ptr<boost::asio::ssl::context> ssl_;
  bool asks_client_certificates_ = false;
  std::string description_;
};

}  // namespace gpurent::net
