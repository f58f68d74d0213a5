"""Connection settings, found as the CLI finds them (src/cli/config.h).

Precedence, lowest first: the default URL < the config file < the environment (GPURENT_URL,
GPURENT_API_KEY) < explicit arguments; an empty value counts as unset. The file is TOML with the
string keys `url` and `api_key`, at $GPURENT_CONFIG if set, else
$XDG_CONFIG_HOME/gpurent/config.toml (an absolute XDG_CONFIG_HOME only), else
~/.config/gpurent/config.toml. A missing file is no error; a malformed one is (ConfigError). The
file is read only when the arguments and the environment leave something open.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from typing import Mapping, Optional

from .errors import ConfigError

DEFAULT_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True)
class Settings:
    url: str
    api_key: str  # "" when none is configured anywhere


def _get(env: Mapping[str, str], name: str) -> Optional[str]:
    value = env.get(name)
    return value if value else None


def config_path(env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    env = os.environ if env is None else env
    if explicit := _get(env, "GPURENT_CONFIG"):
        return explicit
    xdg = _get(env, "XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "gpurent", "config.toml")
    if home := _get(env, "HOME"):
        return os.path.join(home, ".config", "gpurent", "config.toml")
    return None


def read_config(path: str) -> dict[str, str]:
    """The file's `url` and `api_key` (those present and non-empty); {} for a missing file."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from e
    out = {}
    for key in ("url", "api_key"):
        if key in data:
            if not isinstance(data[key], str):
                raise ConfigError(f"{path}: {key} must be a string")
            if data[key]:
                out[key] = data[key]
    return out


def resolve_settings(url: Optional[str] = None, api_key: Optional[str] = None,
                     env: Optional[Mapping[str, str]] = None) -> Settings:
    env = os.environ if env is None else env
    url = url or _get(env, "GPURENT_URL")
    api_key = api_key or _get(env, "GPURENT_API_KEY")
    if not url or not api_key:
        path = config_path(env)
        file_values = read_config(path) if path else {}
        url = url or file_values.get("url")
        api_key = api_key or file_values.get("api_key")
    return Settings(url=url or DEFAULT_URL, api_key=api_key or "")
