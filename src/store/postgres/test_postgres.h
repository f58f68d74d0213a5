// Throwaway databases for tests, on the test PostgreSQL that scripts/test-postgres.sh starts
// (scripts/test.sh passes its URL in GPURENT_TEST_POSTGRES). Without that variable the
// PostgreSQL tests skip, unless GPURENT_REQUIRE_POSTGRES=1 (set by scripts/test.sh, so that CI
// cannot pass them by skipping) makes them fail.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/random.h"
#include "store/postgres/connection.h"

namespace gpurent::store::pg {

class TestPostgres {
 public:
  // The test server's URL, or nullopt when there is none.
  static std::optional<std::string> server() {
    const char* url = std::getenv("GPURENT_TEST_POSTGRES");
    if (url && *url) return std::string(url);
    return std::nullopt;
  }
  // Why a test without a server skips, or fails when one is required.
  static bool required() {
    const char* required = std::getenv("GPURENT_REQUIRE_POSTGRES");
    return required && std::string(required) == "1";
  }

  TestPostgres() = default;
  TestPostgres(const TestPostgres&) = delete;
  TestPostgres& operator=(const TestPostgres&) = delete;
  ~TestPostgres() {
    for (const auto& name : created_) {
      (void)admin().exec(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", name));
    }
  }

  // A new empty database; its URL.
  std::string create(std::string_view label) {
    const std::string name = fmt::format("test_{}_{:x}", label, os_random_seed() & 0xffffffffff);
    auto created = admin().exec(fmt::format("CREATE DATABASE {}", name));
    EXPECT_TRUE(created) << created.error().message;
    created_.push_back(name);
    return url_of(name);
  }

 private:
  static std::string url_of(const std::string& database) {
    const std::string base = server().value_or("");
    return base.substr(0, base.rfind('/') + 1) + database;
  }
  Connection& admin() {
    if (!admin_) {
      auto opened = Connection::open(server().value_or(""));
      EXPECT_TRUE(opened) << opened.error().message;
      admin_.emplace(std::move(*opened));
    }
    return *admin_;
  }

  std::optional<Connection> admin_;
  std::vector<std::string> created_;
};

// Skips the calling test when no test server is set (fails it when one is required).
#define GPURENT_NEED_POSTGRES()                                                                \
  do {                                                                                         \
    if (!::gpurent::store::pg::TestPostgres::server()) {                                       \
      if (::gpurent::store::pg::TestPostgres::required()) {                                    \
        FAIL() << "GPURENT_REQUIRE_POSTGRES=1 but GPURENT_TEST_POSTGRES is not set";           \
      }                                                                                        \
      GTEST_SKIP() << "no test PostgreSQL: GPURENT_TEST_POSTGRES=$(scripts/test-postgres.sh)"; \
    }                                                                                          \
  } while (false)

}  // namespace gpurent::store::pg
