// What every command of the CLI shares: its output streams and environment, the global flags
// (--url, --api-key, -o), the API client made from them on first use, and the one action the
// parsed command line chose.
//
// Commands are Status-returning functions; the Context turns an Error into the exit code and the
// message on stderr: code "usage" -> 2 ("error: <message>"), anything else -> 1
// ("error: <detail> (<code>)", plus a hint for the usual causes). Process roles (server, dev,
// agent) return their own exit code.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "cli/config.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/json.h"

namespace gpurent::cli {

struct Io {
  std::ostream& out;
  std::ostream& err;
  EnvLookup env;
};

enum class OutputFormat { kTable, kJson };

class Context {
 public:
  explicit Context(Io io) : io_(std::move(io)) {}
  // The chosen action refers back to its Context.
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  std::ostream& out() { return io_.out; }
  std::ostream& err() { return io_.err; }
  const EnvLookup& env() const { return io_.env; }

  // Bound to the global flags by the parser; "" = not given.
  std::string& url_flag() { return url_flag_; }
  std::string& api_key_flag() { return api_key_flag_; }
  std::string& output_flag() { return output_flag_; }

  OutputFormat output() const;
  Timestamp now() const { return clock_.now(); }

  // The client for the resolved settings (see config.h), made on first use.
  Result<client::ApiClient*> api();

  // Prints a result as JSON, or in the table form `view` renders; passes an error on.
  using View = std::function<std::string(const Json&)>;
  Status show(Result<Json> result, const View& view);
  // Calls the API and shows what it answered.
  Status call_and_show(const std::function<Result<Json>(client::ApiClient&)>& call,
                       const View& view);

  void set_command(std::function<Status()> command);
  void set_process(std::function<int()> process);
  bool has_action() const { return static_cast<bool>(action_); }
  // Runs the chosen action and returns the process exit code.
  int run();

  // Prints the error as described above and returns its exit code.
  int report(const Error& error);

 private:
  Io io_;
  std::string url_flag_;
  std::string api_key_flag_;
  std::string output_flag_ = "table";
  SystemClock clock_;
  std::optional<client::ApiClient> api_;
  bool api_key_missing_ = false;
  std::function<int()> action_;
};

}  // namespace gpurent::cli
