// What every command of the CLI shares: its output streams and environment, the global flags
// (--url, --api-key, -o), the API client made from them on first use, and the one action the
// parsed command line chose.
//
// Commands are Status-returning functions; the Context turns an Error into the exit code and the
// message on stderr: code "usage" -> 2 ("error: <message>"), anything else -> 1
// ("error: <detail> (<code>)", plus a hint for the usual causes). Process roles (server, dev,
// agent) return their own exit code.
#pragma once

#include <concepts>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>

#include "cli/config.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/json.h"

namespace CLI {
class App;
}

namespace gpurent::cli {

// Asks the person at the terminal a question and returns the line typed; nullopt when there is
// no terminal to ask (stdin is not one), or the input ended.
using Ask = std::function<std::optional<std::string>(std::string_view question)>;

struct Io {
  std::ostream& out;
  std::ostream& err;
  EnvLookup env;
  Ask ask = {};                  // empty: nobody to ask
  bool out_is_terminal = false;  // --watch clears the screen between frames only on a terminal
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
  // Whether the person agrees to `question` (a y/yes answer). A usage error, saying to pass
  // `confirm_flag`, when there is no terminal to ask; "nothing was done" when they decline.
  Status confirm(std::string_view question, std::string_view confirm_flag);

  // Bound to the global flags by the parser; "" = not given.
  std::string& url_flag() { return url_flag_; }
  std::string& api_key_flag() { return api_key_flag_; }
  std::string& output_flag() { return output_flag_; }

  OutputFormat output() const;
  Timestamp now() const { return clock_.now(); }

  // The server and API key the flags, the environment and the config file name (config.h).
  Result<Settings> settings() const;
  // The client for the resolved settings, made on first use.
  Result<client::ApiClient*> api();

  // Prints a result as JSON, or in the table form `view` renders; passes an error on.
  using View = std::function<std::string(const Json&)>;
  Status show(Result<Json> result, const View& view);
  // Calls the API and shows what it answered.
  Status call_and_show(const std::function<Result<Json>(client::ApiClient&)>& call,
                       const View& view);
  // The same for a typed answer (client::Answer): -o json prints the server's JSON as it came, the
  // table form is `view` of the typed body.
  template <class T>
  using TypedView = std::type_identity_t<std::function<std::string(const T&)>>;
  template <class T>
  Status show(Result<client::Answer<T>> answer, const TypedView<T>& view) {
    if (!answer) return fail(std::move(answer).error());
    const T& value = answer->value;
    return show(std::move(answer->json), [&](const Json&) { return view(value); });
  }
  template <class Call,
            class T =
                typename std::invoke_result_t<Call, client::ApiClient&>::value_type::value_type>
  requires std::same_as<std::invoke_result_t<Call, client::ApiClient&>, Result<client::Answer<T>>>
      Status call_and_show(const Call& call, const TypedView<T>& view) {
    GPURENT_TRY(client, api());
    return show(call(*client), view);
  }

  // Adds `--watch[=SECONDS]` to a listing: the command then runs again every SECONDS (2 by
  // default) until it fails or is interrupted, each table under a line saying when it was taken
  // (under -o json, one JSON document after another).
  void add_watch_option(CLI::App& command);
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
  int watch_seconds_ = 0;  // 0: run once
  SystemClock clock_;
  std::optional<client::ApiClient> api_;
  bool api_key_missing_ = false;
  std::function<int()> action_;
};

}  // namespace gpurent::cli
