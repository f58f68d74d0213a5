#include "store/postgres/connection.h"

#include <fmt/format.h>

namespace gpurent::store::pg {

void Params::add(double value) { values_.emplace_back(fmt::format("{}", value)); }

std::vector<const char*> Params::pointers() const {
  std::vector<const char*> out;
  out.reserve(values_.size());
  for (const auto& value : values_) out.push_back(value ? value->c_str() : nullptr);
  return out;
}

std::vector<int> Params::lengths() const {
  std::vector<int> out;
  out.reserve(values_.size());
  for (const auto& value : values_) out.push_back(value ? static_cast<int>(value->size()) : 0);
  return out;
}

std::string_view sqlstate(const PGresult* result) {
  const char* code = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  return code ? code : "";
}

Result<Connection> Connection::open(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  Connection connection(conn);
  if (!conn) return fail(Error::internal("postgres: out of memory"));
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return fail(Error::internal(fmt::format("cannot connect to PostgreSQL: {}", message)));
  }
  // Notices (e.g. "relation already exists, skipping") are not the server's log's business.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return connection;
}

Error Connection::error(std::string_view what, const PGresult* result) const {
  std::string message = result ? PQresultErrorMessage(result) : PQerrorMessage(conn_.get());
  if (message.empty()) message = PQerrorMessage(conn_.get());
  while (!message.empty() && message.back() == '\n') message.pop_back();
  const auto code = sqlstate(result);
  Error error = Error::internal(fmt::format("postgres: {}: {}", what, message));
  if (!code.empty()) error.code = fmt::format("sqlstate_{}", code);
  return error;
}

Result<ResultHandle> Connection::checked(PGresult* raw, std::string_view what) const {
  ResultHandle result(raw);
  const auto status = PQresultStatus(raw);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return fail(error(what, raw));
  }
  return result;
}

Status Connection::exec(std::string_view sql) {
  GPURENT_TRY(result, checked(PQexec(conn_.get(), std::string(sql).c_str()), sql));
  (void)result;
  return {};
}

Result<ResultHandle> Connection::query(std::string_view sql, const Params& params) {
  const auto values = params.pointers();
  const auto lengths = params.lengths();
  return checked(PQexecParams(conn_.get(), std::string(sql).c_str(), params.size(), nullptr,
                              values.data(), lengths.data(), nullptr, 0),
                 sql);
}

Result<ResultHandle> Connection::query_prepared(const std::string& name, const Params& params) {
  const auto values = params.pointers();
  const auto lengths = params.lengths();
  return checked(PQexecPrepared(conn_.get(), name.c_str(), params.size(), values.data(),
                                lengths.data(), nullptr, 0),
                 name);
}

Status Connection::prepare(const std::string& name, std::string_view sql) {
  GPURENT_TRY(result,
              checked(PQprepare(conn_.get(), name.c_str(), std::string(sql).c_str(), 0, nullptr),
                      fmt::format("prepare {}", name)));
  (void)result;
  return {};
}

bool Connection::in_transaction() const { return PQtransactionStatus(conn_.get()) != PQTRANS_IDLE; }

Pipeline::Pipeline(Connection& connection) : connection_(connection) {}

Pipeline::~Pipeline() {
  if (active_) (void)read_results();
}

Status Pipeline::send(const std::string& name, const Params& params,
                      std::optional<int64_t> affected_rows, std::string mismatch) {
  PGconn* conn = connection_.get();
  if (!active_) {
    if (PQenterPipelineMode(conn) != 1) return fail(connection_.error("enter pipeline mode"));
    active_ = true;
  }
  const auto values = params.pointers();
  const auto lengths = params.lengths();
  if (PQsendQueryPrepared(conn, name.c_str(), params.size(), values.data(), lengths.data(), nullptr,
                          0) != 1) {
    return fail(connection_.error(name));
  }
  sent_.push_back({name, affected_rows, std::move(mismatch)});
  if (sent_.size() >= kBatch) return read_results();
  return {};
}

Status Pipeline::finish() { return active_ ? read_results() : Status(); }

Status Pipeline::read_results() {
  PGconn* conn = connection_.get();
  Status outcome;
  const auto first_error = [&outcome](Error error) {
    if (outcome) outcome = fail(std::move(error));
  };
  if (PQpipelineSync(conn) != 1) first_error(connection_.error("pipeline sync"));
  for (const auto& expectation : sent_) {
    ResultHandle result(PQgetResult(conn));
    if (!result) {
      first_error(connection_.error(expectation.name));
      break;
    }
    const auto status = PQresultStatus(result.get());
    if (status == PGRES_FATAL_ERROR) {
      first_error(connection_.error(expectation.name, result.get()));
    } else if (status == PGRES_PIPELINE_ABORTED) {
      first_error(Error::internal(
          fmt::format("postgres: {}: not run after an earlier error", expectation.name)));
    } else if (expectation.affected_rows &&
               std::to_string(*expectation.affected_rows) != PQcmdTuples(result.get())) {
      first_error(Error::internal(expectation.mismatch));
    }
    while (ResultHandle rest{PQgetResult(conn)}) {
    }  // the statement's end
  }
  sent_.clear();
  // The sync point's own result, then nothing is pending and normal mode may resume.
  while (ResultHandle result{PQgetResult(conn)}) {
    if (PQresultStatus(result.get()) == PGRES_PIPELINE_SYNC) break;
  }
  if (PQexitPipelineMode(conn) != 1) first_error(connection_.error("exit pipeline mode"));
  active_ = false;
  return outcome;
}

}  // namespace gpurent::store::pg
