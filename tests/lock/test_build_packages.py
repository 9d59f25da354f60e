"""The lock's `[[build-package]]` section read as hostile input: each rule that ties it to the recipes'
`tools` refuses a lock that breaks it, exit 2 naming the line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from envbuilder.lock import io

SHIPPED = Path(__file__).resolve().parents[2] / "locks" / "blackwell-sm120.lock.toml"
WHEEL = 'file = "wheel-0.48.0-py3-none-any.whl"'


def _text() -> str:
    text = SHIPPED.read_text()
    assert '"wheel==0.48.0",' in text and WHEEL in text
    return text


@pytest.mark.parametrize(("edit", "key", "message"), [
    (lambda t: t.replace('    "wheel==0.48.0",\n', '    "wheel==0.47.0",\n', 1), "package[",
     "'wheel==0.47.0' has no build-package entry"),
    (lambda t: t.replace('    "wheel==0.48.0",\n', "", 1), "build-package[3].name", "no source build's tool"),
    (lambda t: t.replace(WHEEL + '\nkind = "wheel"', 'file = "wheel-0.48.0.tar.gz"\nkind = "sdist"'),
     "build-package[3].artifacts", "hashed wheels only"),
    (lambda t: t.replace('[build-package.source]\nindex = "pypi"', '[build-package.source]\nindex = "pypi"\n'
                                                                   'git = "https://example.invalid/x.git"', 1),
     "build-package[0].source.git", "unknown key"),
    (lambda t: t.replace('[build-package.source]\nindex = "pypi"', '[build-package.source]\nindex = "mirror"', 1),
     "build-package[0].source.index", "not one of the lock's indexes"),
], ids=["tool-without-entry", "orphan-entry", "sdist-entry", "git-source", "unknown-index"])
def test_a_broken_build_package_section_is_bad_input(edit, key, message):
    text = edit(_text())
    with pytest.raises(io.BadLock) as err:
        io.loads(text, "edited.lock.toml")
    assert err.value.exit_code == 2 and err.value.key.startswith(key) and message in str(err.value), str(err.value)
    assert err.value.line is not None


def test_the_shipped_section_reads_and_writes_back_byte_for_byte():
    lock = io.loads(_text(), str(SHIPPED))
    assert [p.pin for p in lock.build_packages] == ["ninja==1.13.2", "packaging==26.4", "psutil==7.2.2",
                                                    "wheel==0.48.0"]
    assert io.dumps(lock) == _text()
