"""Profiles: where the service is and which key to use, from the environment and a config file.

Flags given to the CLI win, then the environment (``SHEETCALC_URL``, ``SHEETCALC_API_KEY``,
``SHEETCALC_ADMIN_EMAIL``, ``SHEETCALC_ADMIN_PASSWORD``), then the profile in the config file
(``$SHEETCALC_CONFIG``, else ``$XDG_CONFIG_HOME/sheetcalc/config.toml``, else
``~/.config/sheetcalc/config.toml``) named by ``--profile``, ``SHEETCALC_PROFILE``, the file's
``default_profile``, or ``default``::

    default_profile = "dev"

    [profiles.dev]
    url = "http://127.0.0.1:8000"
    api_key = "acme_6f1c..."
    admin_email = "admin@acme.example"
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Profile:
    name: str
    url: str
    api_key: str | None
    admin_email: str | None
    admin_password: str | None
    source: str


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("SHEETCALC_CONFIG"):
        return Path(env["SHEETCALC_CONFIG"])
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "sheetcalc" / "config.toml"


def load_profile(name: str | None = None, *, env: Mapping[str, str] | None = None, **flags: str | None) -> Profile:
    """The settings in force: ``flags`` (url, api_key, admin_email, admin_password), then the
    environment, then the named profile of the config file."""
    env = os.environ if env is None else env
    path = config_path(env)
    document = tomllib.loads(path.read_text()) if path.is_file() else {}
    chosen = name or env.get("SHEETCALC_PROFILE") or document.get("default_profile") or "default"
    profiles = document.get("profiles", {})
    if (name or env.get("SHEETCALC_PROFILE")) and chosen not in profiles:
        raise ValueError(f"no profile {chosen!r} in {path}")
    stored = profiles.get(chosen, {})

    def pick(key: str, variable: str) -> str | None:
        return flags.get(key) or env.get(variable) or stored.get(key)

    return Profile(
        name=chosen, url=(pick("url", "SHEETCALC_URL") or DEFAULT_URL).rstrip("/"),
        api_key=pick("api_key", "SHEETCALC_API_KEY"), admin_email=pick("admin_email", "SHEETCALC_ADMIN_EMAIL"),
        admin_password=pick("admin_password", "SHEETCALC_ADMIN_PASSWORD"), source=str(path),
    )
