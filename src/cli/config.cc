#include "cli/config.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <toml.hpp>

namespace gpurent::cli {
namespace {

namespace fs = std::filesystem;

Error invalid_config(const fs::path& path, std::string_view why) {
  return {ErrorKind::kInvalidArgument, "invalid_config",
          fmt::format("config file {}: {}", path.string(), why)};
}

Error write_failed(const fs::path& path, std::string_view why) {
  return Error::internal(fmt::format("cannot write config file {}: {}", path.string(), why));
}

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string toml_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out += "\"";
  return out;
}

void fill(std::optional<std::string>& target, const std::optional<std::string>& source) {
  if (!target && source && !source->empty()) target = source;
}

}  // namespace

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

Result<fs::path> config_path(const EnvLookup& env) {
  if (auto explicit_path = env("GPURENT_CONFIG")) return fs::path(*explicit_path);
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  if (auto xdg = env("XDG_CONFIG_HOME"); xdg && fs::path(*xdg).is_absolute()) {
    return fs::path(*xdg) / "gpurent" / "config.toml";
  }
  if (auto home = env("HOME")) return fs::path(*home) / ".config" / "gpurent" / "config.toml";
  return fail(Error::invalid("invalid_config",
                             "no config file location: neither GPURENT_CONFIG, XDG_CONFIG_HOME "
                             "nor HOME is set"));
}

Result<ConfigValues> read_config(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (ec) return fail(invalid_config(path, ec.message()));
    return ConfigValues{};
  }
  ConfigValues values;
  try {
    const toml::value data = toml::parse(path);
    const auto read = [&](const char* key, std::optional<std::string>& out) -> Status {
      if (!data.contains(key)) return {};
      const toml::value& value = data.at(key);
      if (!value.is_string()) {
        return fail(invalid_config(path, fmt::format("'{}' must be a string", key)));
      }
      out = value.as_string().str;
      return {};
    };
    if (auto status = read("url", values.url); !status) return fail(status.error());
    if (auto status = read("api_key", values.api_key); !status) return fail(status.error());
  } catch (const std::exception& e) {
    // toml11 reports syntax errors and unreadable files by throwing.
    return fail(invalid_config(path, e.what()));
  }
  return values;
}

Status write_config(const fs::path& path, const ConfigValues& values) {
  std::string content = "# gpurent CLI configuration\n";
  if (values.url) content += fmt::format("url = {}\n", toml_quote(*values.url));
  if (values.api_key) content += fmt::format("api_key = {}\n", toml_quote(*values.api_key));

  std::error_code ec;
  if (const fs::path dir = path.parent_path(); !dir.empty()) {
    const bool created = fs::create_directories(dir, ec);
    if (ec) return fail(write_failed(path, ec.message()));
    // Only a directory made here is ours to restrict; an existing one keeps its mode.
    if (created) fs::permissions(dir, fs::perms::owner_all, ec);
  }
  // Write a sibling and rename it over the file, so a reader never sees half a file and the
  // secret never sits in a file with wider permissions.
  fs::path temp = path;
  temp += fmt::format(".tmp{}", ::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail(write_failed(path, std::strerror(errno)));
  bool ok = ::fchmod(fd, 0600) == 0;
  std::string_view rest = content;
  while (ok && !rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) rest.remove_prefix(static_cast<size_t>(n));
  }
  ok = ok && ::fsync(fd) == 0;
  const int saved_errno = errno;
  ::close(fd);
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = ok ? errno : saved_errno;
    ::unlink(temp.c_str());
    return fail(write_failed(path, std::strerror(error)));
  }
  return {};
}

Result<fs::path> save_connection(const EnvLookup& env, const std::string& url,
                                 const std::optional<std::string>& api_key) {
  GPURENT_TRY(path, config_path(env));
  GPURENT_TRY(values, read_config(path));
  values.url = url;
  if (api_key) values.api_key = api_key;
  if (auto written = write_config(path, values); !written) return fail(written.error());
  return path;
}

Result<Settings> resolve_settings(const EnvLookup& env, const ConfigValues& flags) {
  ConfigValues merged;
  fill(merged.url, flags.url);
  fill(merged.api_key, flags.api_key);
  fill(merged.url, env("GPURENT_URL"));
  fill(merged.api_key, env("GPURENT_API_KEY"));
  if (!merged.url || !merged.api_key) {
    // Without any location there is simply no file to read.
    if (auto path = config_path(env)) {
      GPURENT_TRY(file, read_config(*path));
      fill(merged.url, file.url);
      fill(merged.api_key, file.api_key);
    }
  }
  return Settings{.url = merged.url.value_or(std::string(kDefaultUrl)),
                  .api_key = merged.api_key.value_or("")};
}

}  // namespace gpurent::cli
