// A PostgreSQL connection through libpq: statements with text parameters, their results as an
// owned handle, and a pipeline that sends many prepared statements before reading any result
// (one round trip per batch instead of one per row: a billing tick writes a row per running
// workload).
//
// Thread-safety: one thread at a time per connection.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::store::pg {

struct ClearResult {
  void operator()(PGresult* result) const { PQclear(result); }
};
using ResultHandle = std::unique_ptr<PGresult, ClearResult>;

// A statement's parameters, in text form (PostgreSQL casts them to the columns' types).
class Params {
 public:
  Params() = default;
  template <class... Args>
  explicit Params(const Args&... args) {
    (add(args), ...);
  }
  void add(std::string_view text) { values_.emplace_back(text); }
  void add(const std::string& text) { values_.emplace_back(text); }
  void add(const char* text) { values_.emplace_back(text); }
  void add(int64_t value) { values_.emplace_back(std::to_string(value)); }
  void add(int value) { values_.emplace_back(std::to_string(value)); }
  void add(double value);  // the shortest text that reads back as the same double
  void add(std::optional<int> value) {
    if (value) {
      add(*value);
    } else {
      values_.emplace_back(std::nullopt);
    }
  }
  int size() const { return static_cast<int>(values_.size()); }
  // Pointers into this object, valid while it lives unchanged.
  std::vector<const char*> pointers() const;
  std::vector<int> lengths() const;

 private:
  std::vector<std::optional<std::string>> values_;
};

// The SQLSTATE PostgreSQL reports, when a statement failed in the database (not in the client).
std::string_view sqlstate(const PGresult* result);

class Connection {
 public:
  // `url` is a libpq connection URI (postgres://user@host:port/db?options) or key=value string.
  static Result<Connection> open(const std::string& url);
  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;

  // One or more statements without parameters (migrations, BEGIN, COMMIT).
  Status exec(std::string_view sql);
  // One statement; a result that is not a success is an Error naming `sql`.
  Result<ResultHandle> query(std::string_view sql, const Params& params = Params());
  Result<ResultHandle> query_prepared(const std::string& name, const Params& params);
  Status prepare(const std::string& name, std::string_view sql);
  // The server process serving this connection (pg_backend_pid()).
  int backend_pid() const { return PQbackendPID(conn_.get()); }
  bool in_transaction() const;
  PGconn* get() const { return conn_.get(); }

  // An Error "internal" naming `what`, with PostgreSQL's message; when the database reported a
  // SQLSTATE, its code is "sqlstate_" and the SQLSTATE.
  Error error(std::string_view what, const PGresult* result = nullptr) const;

 private:
  struct Finish {
    void operator()(PGconn* conn) const { PQfinish(conn); }
  };
  explicit Connection(PGconn* conn) : conn_(conn) {}
  Result<ResultHandle> checked(PGresult* result, std::string_view what) const;
  std::unique_ptr<PGconn, Finish> conn_;
};

// Prepared statements sent one after another without waiting, their results read in batches.
// Results are read every kBatch statements and at finish(): an error is reported by the send()
// that read it or by finish(), and once one failed the rest of the batch fails with it, so the
// transaction it ran in must be rolled back. The connection is back in normal mode once finish()
// returned or the pipeline is destroyed.
class Pipeline {
 public:
  explicit Pipeline(Connection& connection);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Sends prepared statement `name`. When `affected_rows` is given, the statement must change
  // exactly that many rows, else the error is `mismatch`.
  Status send(const std::string& name, const Params& params,
              std::optional<int64_t> affected_rows = std::nullopt, std::string mismatch = {});
  Status finish();

 private:
  static constexpr size_t kBatch = 1000;
  struct Expectation {
    std::string name;
    std::optional<int64_t> affected_rows;
    std::string mismatch;
  };
  Status read_results();  // syncs, then reads every result sent so far
  Connection& connection_;
  std::vector<Expectation> sent_;
  bool active_ = false;
};

}  // namespace gpurent::store::pg
