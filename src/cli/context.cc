#include "cli/context.h"

#include <fmt/format.h>

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

Result<client::ApiClient*> Context::api() {
  if (!api_) {
    GPURENT_TRY(settings, resolve_settings(
                              io_.env, {.url = given(url_flag_), .api_key = given(api_key_flag_)}));
    GPURENT_TRY(made, client::ApiClient::create(settings.url, settings.api_key));
    api_key_missing_ = settings.api_key.empty();
    api_.emplace(std::move(made));
  }
  return &*api_;
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

void Context::set_command(std::function<Status()> command) {
  action_ = [this, command = std::move(command)] {
    const Status status = command();
    return status ? 0 : report(status.error());
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
