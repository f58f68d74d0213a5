#include "agent/runtime/workload_files.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "agent/files.h"
#include "agent/runtime/runtime.h"
#include "common/json.h"

namespace gpurent::agent {

Result<Launch> read_launch(const std::filesystem::path& dir) {
  GPURENT_TRY(text, read_file(dir / kLaunchFile));
  GPURENT_TRY(json, parse_json_object(text));
  GPURENT_TRY(command, optional_string_list(json, "command", kMaxCommandArgs, kMaxArgBytes));
  // The runtime adds its own variables to at most kMaxEnvEntries of the spec's.
  GPURENT_TRY(env, optional_string_map(json, "env", kMaxEnvEntries + 16, kMaxArgBytes));
  GPURENT_TRY(cwd, required_string(json, "cwd", 4096));
  GPURENT_TRY(tenant_id, optional_string(json, "tenant_id", 256));
  if (command.empty()) return fail(Error::invalid("invalid_launch", "the command is empty"));
  Launch launch{std::move(command), std::move(env), std::move(cwd), tenant_id.value_or(""), {}};
  if (const auto sandbox = json.find("sandbox"); sandbox != json.end()) {
    GPURENT_TRY(parsed, parse_sandbox(*sandbox));
    launch.sandbox = std::move(parsed);
  }
  return launch;
}

Json launch_json(const Launch& launch) {
  Json json = {{"command", launch.command},
               {"env", launch.env},
               {"cwd", launch.cwd},
               {"tenant_id", launch.tenant_id}};
  if (launch.sandbox) json["sandbox"] = sandbox_json(*launch.sandbox);
  return json;
}

Status write_exit_record(const std::filesystem::path& dir, const ExitRecord& record) {
  Json json = {{"exit_code", record.exit_code}, {"message", record.message}};
  if (record.never_started) json["never_started"] = true;
  return write_file_atomic(dir / kExitFile, json.dump() + "\n");
}

Result<ExitRecord> read_exit_record(const std::filesystem::path& dir) {
  GPURENT_TRY(text, read_file(dir / kExitFile));
  GPURENT_TRY(json, parse_json_object(text));
  GPURENT_TRY(code, required_int(json, "exit_code", 0, 255));
  GPURENT_TRY(message, optional_string(json, "message", 4096));
  const auto never_started = json.find("never_started");
  return ExitRecord{
      static_cast<int>(code), message.value_or(""),
      never_started != json.end() && never_started->is_boolean() && never_started->get<bool>()};
}

Status write_shim_state(const std::filesystem::path& dir, const ShimState& state) {
  Json json = {{"shim_pid", state.pid}, {"shim_start_time", state.start_time}};
  if (state.sandbox_init != 0) json["sandbox_init"] = state.sandbox_init;
  return write_file_atomic(dir / kStateFile, json.dump() + "\n");
}

Result<ShimState> read_shim_state(const std::filesystem::path& dir) {
  GPURENT_TRY(text, read_file(dir / kStateFile));
  GPURENT_TRY(json, parse_json_object(text));
  GPURENT_TRY(pid, required_int(json, "shim_pid", 1, std::numeric_limits<pid_t>::max()));
  GPURENT_TRY(start, required_int(json, "shim_start_time", 0, std::numeric_limits<int64_t>::max()));
  GPURENT_TRY(init, optional_int(json, "sandbox_init", 1, std::numeric_limits<pid_t>::max()));
  return ShimState{static_cast<pid_t>(pid), static_cast<uint64_t>(start),
                   static_cast<pid_t>(init.value_or(0))};
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  auto text = read_file(fmt::format("/proc/{}/stat", pid), 4096);
  if (!text) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are counted from
  // the last ')'. The state is field 3 and the start time field 22.
  const size_t paren = text->rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(*text).substr(paren + 1);
  ProcStat stat;
  for (int field = 3; field <= 22; ++field) {
    const size_t begin = rest.find_first_not_of(' ');
    if (begin == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(begin);
    const size_t end = std::min(rest.find(' '), rest.size());
    const std::string_view token = rest.substr(0, end);
    if (field == 3) stat.state = token.front();
    if (field == 22) {
      const auto [ptr, ec] =
          std::from_chars(token.data(), token.data() + token.size(), stat.start_time);
      if (ec != std::errc() || ptr != token.data() + token.size()) return std::nullopt;
    }
    rest.remove_prefix(end);
  }
  return stat;
}

bool still_running(pid_t pid, uint64_t start_time) {
  const auto stat = read_proc_stat(pid);
  return stat && stat->start_time == start_time && stat->state != 'Z' && stat->state != 'X';
}

}  // namespace gpurent::agent
