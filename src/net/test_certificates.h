// Certificates made for tests (never for use): a CA, and certificates it or they themselves sign,
// with their PEM forms and files in a temporary directory.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace gpurent::net::testing {

template <class T, void (*Free)(T*)>
struct OpenSslDeleter {
  void operator()(T* object) const { Free(object); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, OpenSslDeleter<X509, X509_free>>;

struct TestCertificate {
  KeyPtr key;
  CertPtr cert;
  std::string cert_pem;
  std::string key_pem;
};

struct CertificateSpec {
  std::string common_name = "gpurent test";
  std::string alt_names;  // "DNS:localhost,IP:127.0.0.1"; "" for none
  bool is_ca = false;
  const TestCertificate* issuer = nullptr;  // null: self-signed
};

inline void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
}

inline std::string pem_of(int (*write)(BIO*, void*), void* object) {
  BIO* out = BIO_new(BIO_s_mem());
  write(out, object);
  char* data = nullptr;
  const long size = BIO_get_mem_data(out, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(out);
  return pem;
}

inline TestCertificate make_certificate(const CertificateSpec& spec) {
  static long serial = 1;
  TestCertificate made;
  made.key.reset(EVP_EC_gen("P-256"));
  made.cert.reset(X509_new());
  X509* cert = made.cert.get();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, made.key.get());
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                             -1, 0);
  X509* issuer = spec.issuer ? spec.issuer->cert.get() : cert;
  X509_set_issuer_name(cert, X509_get_subject_name(issuer));
  if (!spec.alt_names.empty()) add_extension(cert, issuer, NID_subject_alt_name, spec.alt_names);
  if (spec.is_ca) {
    add_extension(cert, issuer, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(cert, issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
  }
  X509_sign(cert, spec.issuer ? spec.issuer->key.get() : made.key.get(), EVP_sha256());
  made.cert_pem = pem_of(
      [](BIO* out, void* x) { return PEM_write_bio_X509(out, static_cast<X509*>(x)); }, cert);
  made.key_pem = pem_of(
      [](BIO* out, void* k) {
        return PEM_write_bio_PrivateKey(out, static_cast<EVP_PKEY*>(k), nullptr, nullptr, 0,
                                        nullptr, nullptr);
      },
      made.key.get());
  return made;
}

// A directory of the test's files, removed with it.
class TempFiles {
 public:
  explicit TempFiles(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() /
             ("gpurent-" + tag + "-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~TempFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempFiles(const TempFiles&) = delete;
  TempFiles& operator=(const TempFiles&) = delete;

  std::string write(const std::string& name, const std::string& text) const {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace gpurent::net::testing
