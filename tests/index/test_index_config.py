"""The default index and CA bundle come from the user's pip/uv configuration."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envbuilder.errors import BadInput
from envbuilder.index import config

VARS = ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    return monkeypatch


def test_precedence_pip_env_then_uv_then_config(clean_env: pytest.MonkeyPatch, tmp_path: Path):
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = http://mirror.invalid/global/simple\n"
                    "[install]\nindex_url = http://mirror.invalid/install/simple\n")
    clean_env.setenv("PIP_CONFIG_FILE", str(conf))
    assert config.default_index_url() == "http://mirror.invalid/install/simple"  # [install] beats [global]
    clean_env.setenv("UV_INDEX_URL", "http://uv-legacy.example.org/simple")
    assert config.default_index_url() == "http://uv-legacy.example.org/simple"
    clean_env.setenv("UV_DEFAULT_INDEX", "http://uv.example.org/simple")
    assert config.default_index_url() == "http://uv.example.org/simple"
    clean_env.setenv("PIP_INDEX_URL", "http://pip.example.org/simple")
    assert config.default_index_url() == "http://pip.example.org/simple"


def test_user_config_file_is_read(clean_env: pytest.MonkeyPatch, tmp_path: Path):
    clean_env.delenv("PIP_CONFIG_FILE")
    user = tmp_path / "home" / ".config" / "pip" / "pip.conf"
    user.parent.mkdir(parents=True)
    user.write_text("[global]\nindex-url = http://user.example.org/simple\nextra-index-url = file:///elsewhere\n")
    files = config.pip_config_files()
    assert user in files
    if not any(p.is_file() and "index-url" in p.read_text() and p != user for p in files[files.index(user) + 1:]):
        assert config.default_index_url() == "http://user.example.org/simple"


def test_dev_null_means_no_config_and_pip_supplies_the_default(clean_env: pytest.MonkeyPatch):
    from pip._internal.models.index import PyPI

    assert config.pip_config_files() == []
    assert config.default_index_url() == PyPI.simple_url


def test_ca_bundle(clean_env: pytest.MonkeyPatch, tmp_path: Path):
    assert config.ca_bundle() is None
    bundle = tmp_path / "ca.pem"
    bundle.write_text("")
    clean_env.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    assert config.ca_bundle() == bundle
    clean_env.setenv("PIP_CERT", str(tmp_path / "missing.pem"))
    with pytest.raises(BadInput, match="PIP_CERT names a CA bundle that does not exist"):
        config.ca_bundle()


def test_broken_pip_config_is_bad_input(clean_env: pytest.MonkeyPatch, tmp_path: Path):
    conf = tmp_path / "pip.conf"
    conf.write_text("index-url = no section header\n")
    clean_env.setenv("PIP_CONFIG_FILE", str(conf))
    with pytest.raises(BadInput, match="pip configuration file cannot be parsed"):
        config.default_index_url()


def test_no_index_host_in_the_index_package():
    root = Path(config.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "pypi.org" not in text and "pythonhosted" not in text, path
