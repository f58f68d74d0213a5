#include "cli/context.h"

#include <fmt/format.h>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <chrono>
#include <thread>

#include "cli/args.h"
#include "cli/output.h"

namespace gpurent::cli {
namespace {

std::optional<std::string> given(const std::string& flag) {
  return flag.empty() ? std::nullopt : std::optional<std::string>(flag);
}

}  // namespace

OutputFormat Context::output() const {
  return output_flag_ == "json" ? OutputFormat::kJson : OutputFormat::kTable;
}

Result<Settings> Context::settings() const {
  return resolve_settings(io_.env, {.url = given(url_flag_), .api_key = given(api_key_flag_)});
}

Result<client::ApiClient*> Context::api() {
  if (!api_) {
    GPURENT_TRY(resolved, settings());
    GPURENT_TRY(made, client::ApiClient::create(resolved.url, resolved.api_key));
    api_key_missing_ = resolved.api_key.empty();
    api_.emplace(std::move(made));
  }
  return &*api_;
}

Status Context::confirm(std::string_view question, std::string_view confirm_flag) {
  const auto answer =
      io_.ask ? io_.ask(fmt::format("{} [y/N] ", question)) : std::optional<std::string>();
  if (!answer) {
    return fail(usage_error(
        fmt::format("{} Pass {} to go ahead without being asked", question, confirm_flag)));
  }
  if (*answer == "y" || *answer == "Y" || *answer == "yes") return {};
  return fail(Error::conflict("not_confirmed", "nothing was done"));
}

Status Context::show(Result<Json> result, const View& view) {
  if (!result) return fail(std::move(result).error());
  io_.out << (output() == OutputFormat::kJson ? pretty_json(*result) : view(*result)) << std::flush;
  return {};
}

Status Context::call_and_show(const std::function<Result<Json>(client::ApiClient&)>& call,
                              const View& view) {
  GPURENT_TRY(client, api());
  return show(call(*client), view);
}

void Context::add_watch_option(CLI::App& command) {
  command
      .add_flag("--watch{2}", watch_seconds_,
                "show it again every 2 s (--watch=SECONDS) until interrupted (Ctrl-C)")
      ->check(CLI::Range(1, 3600));
}

void Context::set_command(std::function<Status()> command) {
  action_ = [this, command = std::move(command)] {
    if (watch_seconds_ == 0) {
      const Status status = command();
      return status ? 0 : report(status.error());
    }
    for (;;) {
      // As watch(1): on a terminal each frame replaces the last; piped, frames follow each other.
      // Under -o json a frame is the JSON alone, so that a reader takes one document after
      // another.
      if (output() == OutputFormat::kTable) {
        if (io_.out_is_terminal) io_.out << "\x1b[H\x1b[2J";
        io_.out << fmt::format("Every {}s: {}\n\n", watch_seconds_, format_rfc3339(now()))
                << std::flush;
      }
      if (const Status status = command(); !status) return report(status.error());
      std::this_thread::sleep_for(std::chrono::seconds(watch_seconds_));
    }
  };
}

void Context::set_process(std::function<int()> process) { action_ = std::move(process); }

int Context::run() { return action_(); }

int Context::report(const Error& error) {
  if (error.code == kUsageCode) {
    io_.err << fmt::format("error: {}\nRun with --help for more information.\n",
                           sanitize(error.message));
    return 2;
  }
  if (output_flag_ == "json") {
    // A script reading -o json gets the failure in the form it reads, as the API's problem+json.
    io_.out << Json{{"status", http_status(error.kind)},
                    {"title", error_kind_title(error.kind)},
                    {"code", error.code},
                    {"detail", error.message}}
                   .dump(2)
            << "\n";
  } else {
    io_.err << fmt::format("error: {} ({})\n", sanitize(error.message), error.code);
  }
  if (error.code == "connection_failed") {
    io_.err << "hint: is the server running? `gpurent dev` starts one on this machine; --url or "
               "GPURENT_URL points elsewhere.\n";
  } else if (error.kind == ErrorKind::kUnauthenticated && api_key_missing_) {
    io_.err << "hint: no API key is configured: pass --api-key, set GPURENT_API_KEY, or put "
               "api_key in the config file.\n";
  }
  return 1;
}

}  // namespace gpurent::cli
