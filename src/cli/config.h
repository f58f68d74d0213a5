// The CLI's connection settings: which server to talk to, with which API key.
//
// Precedence, lowest first: the built-in default URL < the config file < the environment
// (GPURENT_URL, GPURENT_API_KEY) < flags (--url, --api-key); an empty value counts as unset. The
// file is TOML with the string keys `url` and `api_key`, at $GPURENT_CONFIG if set, else
// $XDG_CONFIG_HOME/gpurent/config.toml, else ~/.config/gpurent/config.toml. It holds a secret, so
// it is written with mode 0600 (its directory 0700 when created here) and replaced atomically.
// A missing file is no error; an unreadable or malformed one is (code "invalid_config").
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpurent::cli {

inline constexpr std::string_view kDefaultUrl = "http://127.0.0.1:8080";

// Reads an environment variable; unset and empty both read as nullopt. Tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup process_environment();

struct ConfigValues {
  std::optional<std::string> url;
  std::optional<std::string> api_key;
};

struct Settings {
  std::string url;
  std::string api_key;  // "" when none is configured anywhere
};

Result<std::filesystem::path> config_path(const EnvLookup& env);
Result<ConfigValues> read_config(const std::filesystem::path& path);
// Writes the values that are set, replacing the whole file.
Status write_config(const std::filesystem::path& path, const ConfigValues& values);

// Points the CLI at a server (what `gpurent dev` does on start): sets `url`, and `api_key` when
// given (else the file's key stays), in the config file `env` names. Returns the file's path. A
// malformed existing file is reported, not overwritten.
Result<std::filesystem::path> save_connection(const EnvLookup& env, const std::string& url,
                                              const std::optional<std::string>& api_key);

// flags: what the command line gave. The file is read only when the flags and the environment
// leave something open, so a broken file does not get in the way of an explicit command line.
Result<Settings> resolve_settings(const EnvLookup& env, const ConfigValues& flags);

}  // namespace gpurent::cli
