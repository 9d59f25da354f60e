"""Every matrix shipped in matrices/ loads, and `envbuilder targets` lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envbuilder.matrix import load_target, shipped_targets

REPO = Path(__file__).resolve().parents[2]
SHIPPED = shipped_targets(REPO)


def test_the_expected_targets_are_shipped():
    assert {"blackwell-sm120", "blackwell-sm120-main", "hopper-sm90", "cpu-llamacpp"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_matrix_loads(name: str):
    target = load_target(name, REPO)
    assert target.name == name and target.packages
    assert target.digest.startswith("sha256:") and len(target.digest) == 71
    for spec in target.packages.values():
        if spec.git is not None:
            assert len(spec.rev) == 40


def test_shipped_facts():
    bw = load_target("blackwell-sm120", REPO)
    assert (bw.hardware.gpu.arch, bw.hardware.gpu.count, bw.hardware.driver.min) == ("sm_120", 8, "590.48.01")
    assert (bw.platform.python, bw.toolchain.cuda) == ("3.12", "12.8")
    assert bw.packages["torch"].version == "==2.9.1"
    assert bw.packages["flash-attn"].from_sdist and bw.packages["flash-attn"].metadata is not None
    assert bw.spec("transformers").override
    main = load_target("blackwell-sm120-main", REPO)
    assert main.spec("sglang").git and main.spec("torch") == bw.spec("torch")  # inherited
    cpu = load_target("cpu-llamacpp", REPO)
    assert cpu.spec("llama-cpp-python").version == "==0.3.36" and cpu.spec("llama-cpp-python").from_sdist
    assert cpu.hardware.gpu is None


def test_targets_lists_the_shipped_targets(monkeypatch, capsys):
    from envbuilder.cli import main

    monkeypatch.setenv("ENVBUILDER_ROOT", str(REPO))
    with pytest.raises(SystemExit) as exit_:
        main(["targets", "--json"])
    assert exit_.value.code == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["target"] for r in rows] == SHIPPED
    by_name = {r["target"]: r for r in rows}
    assert by_name["blackwell-sm120"]["gpu"] == "8x sm_120" and by_name["cpu-llamacpp"]["gpu"] == "cpu"
    with pytest.raises(SystemExit) as exit_:
        main(["targets"])
    assert exit_.value.code == 0
    table = capsys.readouterr().out
    for name in SHIPPED:
        assert name in table
