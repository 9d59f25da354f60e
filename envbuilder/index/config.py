"""Where the default index is and which CA bundle to trust: the user's pip/uv setup decides.

envbuilder carries no index host of its own, so a user behind a mirror or a corporate proxy gets
the same index and the same trust as their `pip install` without configuring anything twice.
Only the *primary* index matters: extra indexes and find-links are pip-local conveniences that a
reproducible lock must not silently depend on.
"""

from __future__ import annotations

import configparser
import os
import ssl
import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import platformdirs

from envbuilder.errors import BadInput

#: Environment variables naming the primary index, most specific first (pip, then uv).
INDEX_ENV_VARS = ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL")
#: Environment variables naming a CA bundle, most specific first (pip, OpenSSL, requests).
CERT_ENV_VARS = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
# pip reads [global] then the command's own section; `install` is the one a user configures.
_SECTIONS = ("global", "install")


def pip_config_files() -> list[Path]:
    """pip's configuration files in pip's override order (later files win).

    Mirrors pip: global (site config dirs), user (legacy ~/.pip and the XDG dir), site
    (sys.prefix), then PIP_CONFIG_FILE. PIP_CONFIG_FILE=/dev/null means "no files at all", and an
    existing PIP_CONFIG_FILE suppresses the user files, exactly as pip does.
    """
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    global_files = [
        Path(d) / "pip.conf" for d in platformdirs.site_config_dir("pip", multipath=True).split(os.pathsep)
    ]
    if sys.platform.startswith("linux") and Path("/etc/pip.conf") not in global_files:
        global_files.append(Path("/etc/pip.conf"))
    user_files = [Path.home() / ".pip" / "pip.conf", Path(platformdirs.user_config_dir("pip")) / "pip.conf"]
    files = list(global_files)
    if not (env_file and Path(env_file).exists()):
        files += user_files
    files.append(Path(sys.prefix) / "pip.conf")
    if env_file:
        files.append(Path(env_file))
    return files


def _pip_config_values(key: str) -> Iterator[tuple[Path, str]]:
    """Yield (file, value) for `key` from every pip config file, in override order."""
    for path in pip_config_files():
        if not path.is_file():
            continue
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except configparser.Error as exc:
            raise BadInput(f"{path}: pip configuration file cannot be parsed: {exc}") from exc
        for section in _SECTIONS:
            if not parser.has_section(section):
                continue
            for name, value in parser.items(section):
                if name.replace("_", "-") == key and value.strip():
                    yield path, value.strip()


def _pip_config_value(key: str) -> str | None:
    values = list(_pip_config_values(key))
    return values[-1][1] if values else None


def _pip_builtin_index() -> str:
    """pip's own default index, read from pip so that no host is written in envbuilder."""
    try:
        from pip._internal.models.index import PyPI  # noqa: PLC0415 - lazy: pip is heavy and optional
    except ImportError as exc:
        raise BadInput(
            "no package index is configured and pip is not importable to supply its default: "
            "set PIP_INDEX_URL (or UV_DEFAULT_INDEX) to your index's simple API URL"
        ) from exc
    return str(PyPI.simple_url)


def default_index_url() -> str:
    """The primary index URL: PIP_INDEX_URL, UV_DEFAULT_INDEX/UV_INDEX_URL, pip config, pip default."""
    for var in INDEX_ENV_VARS:
        value = os.environ.get(var, "").strip()
        if value:
            # pip allows several whitespace-separated URLs in env vars only for extra indexes;
            # for the primary index take the first as pip does for list-typed options.
            return value.split()[0]
    configured = _pip_config_value("index-url")
    if configured:
        return configured.split()[0]
    return _pip_builtin_index()


def ca_bundle() -> Path | None:
    """The CA bundle a user's pip would trust, or None for the system default store."""
    for var in CERT_ENV_VARS:
        value = os.environ.get(var, "").strip()
        if value:
            return _existing_bundle(Path(value), var)
    configured = _pip_config_value("cert")
    if configured:
        return _existing_bundle(Path(configured).expanduser(), "pip config `cert`")
    return None


def _existing_bundle(path: Path, origin: str) -> Path:
    if not path.exists():
        raise BadInput(f"{origin} names a CA bundle that does not exist: {path}")
    return path


@lru_cache(maxsize=4)
def _ssl_context_for(bundle: Path | None) -> ssl.SSLContext:
    if bundle is None:
        return ssl.create_default_context()
    if bundle.is_dir():
        return ssl.create_default_context(capath=str(bundle))
    return ssl.create_default_context(cafile=str(bundle))


def ssl_context() -> ssl.SSLContext:
    """One TLS context per bundle: loading a CA bundle costs ~20 ms, so it is built once."""
    return _ssl_context_for(ca_bundle())
