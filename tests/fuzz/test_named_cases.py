"""The tracebacks and silent accepts issue 11 found, each as a case with its exact message."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from envbuilder.doctor.nvidia import parse_saved, parse_smi_csv, parse_smi_q
from envbuilder.errors import BadInput
from envbuilder.matrix import load_target

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "fixtures" / "h200"
MATRIX = (REPO / "matrices" / "cpu-llamacpp.yaml").read_text()


def _matrix(tmp_path: Path, text: str | bytes) -> Path:
    (tmp_path / "matrices").mkdir(exist_ok=True)
    path = tmp_path / "matrices" / "t.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_yaml_alias_bomb_is_refused_fast(tmp_path: Path):
    bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for parent, child in zip("bcdefghi", "abcdefgh"):
        bomb += f"{parent}: &{parent} [" + ",".join([f"*{child}"] * 9) + "]\n"
    _matrix(tmp_path, "schema: 1\n" + bomb)
    began = time.monotonic()
    with pytest.raises(BadInput, match=r"t\.yaml:\d+: YAML aliases expand to more than 100,000 values"):
        load_target("t", tmp_path)
    assert time.monotonic() - began < 10  # was: MemoryError after 71 s and 2.9 GB


@pytest.mark.parametrize("tag", ["!!python/object/apply:os.system ['true']", "!!python/name:os.system x", "!custom 1"])
def test_yaml_tags_are_refused(tmp_path: Path, tag: str):
    _matrix(tmp_path, MATRIX.replace("description:", f"description: {tag}\nx_description:", 1))
    with pytest.raises(BadInput, match=r"t\.yaml:\d+: YAML tag .* is not allowed"):
        load_target("t", tmp_path)


def test_a_huge_matrix_is_refused_before_parsing(tmp_path: Path):
    _matrix(tmp_path, MATRIX + "#" + "x" * (2 << 20) + "\n")
    with pytest.raises(BadInput, match=r"t\.yaml: [\d,]+ bytes; a matrix may be at most 1,048,576"):
        load_target("t", tmp_path)


def test_nan_threshold_and_slash_in_a_package_name_are_refused(tmp_path: Path):
    assert "{metric: output_tok_s, at: min, min: 20}" in MATRIX
    _matrix(tmp_path, MATRIX.replace("{metric: output_tok_s, at: min, min: 20}", "{metric: output_tok_s, at: min, min: .nan}"))
    with pytest.raises(BadInput, match=r"t\.yaml:\d+: key 'smoke.thresholds.0.min'.*finite"):
        load_target("t", tmp_path)
    _matrix(tmp_path, MATRIX.replace("packages:\n", "packages:\n  evil/../x: '==1'\n", 1))
    with pytest.raises(BadInput, match=r"t\.yaml:\d+: key 'packages'.*'evil/../x' is not a package name"):
        load_target("t", tmp_path)


def test_doctor_ten_megabyte_line_is_bad_input():
    with pytest.raises(BadInput, match=r"gpus\.csv: [\d,]+ characters"):
        parse_saved((H200 / "nvidia-smi.csv").read_text() + "y" * (10 << 20), "gpus.csv")
    with pytest.raises(BadInput, match=r"gpus\.csv:\d+: not nvidia-smi CSV output: field larger than field limit"):
        parse_smi_csv('"' + "y" * 200_000 + '\n', "gpus.csv")


def test_doctor_empty_driver_version_is_bad_input():
    text = (H200 / "nvidia-smi-q.txt").read_text()
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Driver Version"))
    lines[at] = "Driver Version                            :"
    with pytest.raises(BadInput, match=rf"q\.txt:{at + 1}: key 'Driver Version': empty"):
        parse_smi_q("\n".join(lines), "q.txt")


@pytest.mark.parametrize("row, key", [("NVIDIA H200, abc MiB, 580.159.04, 9.0", "memory.total"),
                                      ("NVIDIA H200, 143771 MiB, 580.159.04, nine", "compute_cap"),
                                      ("NVIDIA H200, 143771 MiB, five-eighty, 9.0", "driver_version")])
def test_doctor_silent_accepts_are_bad_input(row: str, key: str):
    with pytest.raises(BadInput, match=rf"gpus\.csv:2: key '{key}': '[^']*' is not"):
        parse_smi_csv(f"name, memory.total [MiB], driver_version, compute_cap\n{row}\n", "gpus.csv")
    # what nvidia-smi really prints for a value it does not know stays unknown, not an error
    facts = parse_smi_csv("NVIDIA H200, [N/A], 580.159.04, [N/A]\n", "gpus.csv")
    assert facts.gpus[0].memory_mib is None and facts.gpus[0].compute_capability is None


def test_q_output_abc_mib_and_compute_capability_nine_name_their_line():
    lines = (H200 / "nvidia-smi-q.txt").read_text().splitlines()
    total = lines.index("        Total                                          : 143771 MiB")
    bad = [*lines[:total], "        Total                                          : abc MiB", *lines[total + 1:]]
    with pytest.raises(BadInput, match=rf"q\.txt:{total + 1}: key 'FB Memory Usage/Total': 'abc MiB' is not a size"):
        parse_smi_q("\n".join(bad), "q.txt")
    product = next(i for i, line in enumerate(lines) if "Product Name" in line)
    nine = [*lines[:product + 1], "    Compute Capability                                 : nine", *lines[product + 1:]]
    with pytest.raises(BadInput, match=rf"q\.txt:{product + 2}: key 'Compute Capability': 'nine' is not"):
        parse_smi_q("\n".join(nine), "q.txt")


def test_build_dry_run_with_a_directory_as_lock_is_exit_2(tmp_path: Path):
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "envbuilder", "build", "cpu-llamacpp", "--dry-run", "--lock",
                           str(tmp_path)], capture_output=True, text=True, env={**os.environ, "ENVBUILDER_ROOT": str(REPO)})
    assert proc.returncode == 2 and "is a directory" in proc.stderr and "Traceback" not in proc.stderr


def test_a_recursive_yaml_alias_is_refused(tmp_path: Path):
    _matrix(tmp_path, "schema: 1\ntarget: t\nloop: &a [1, *a]\n")
    with pytest.raises(BadInput, match=r"t\.yaml:3: a YAML alias refers to a value that contains it"):
        load_target("t", tmp_path)


def test_credentials_in_a_matrix_url_are_refused_without_echoing_them(tmp_path: Path):
    _matrix(tmp_path, MATRIX.replace("packages:\n", "packages:\n  evil: {git: 'https://bob:hunter2@git.example/x.git', "
                                     "rev: '" + "a" * 40 + "', metadata: {version: '1', requires_dist: []}}\n", 1))
    with pytest.raises(BadInput) as err:
        load_target("t", tmp_path)
    assert "carries credentials" in str(err.value) and "hunter2" not in str(err.value)


def test_a_credential_in_serve_env_is_refused(tmp_path: Path):
    """serve.env is copied into the image with the matrix: a token there would be in a layer."""
    _matrix(tmp_path, MATRIX.replace("  model: /models/tiny.gguf", "  env: {HF_TOKEN: hf_abc, TOKENIZERS_PARALLELISM: 'false'}\n"
                                     "  model: /models/tiny.gguf", 1))
    with pytest.raises(BadInput, match=r"t\.yaml:\d+: key 'serve.env'.*HF_TOKEN looks like a credential") as err:
        load_target("t", tmp_path)
    assert "TOKENIZERS_PARALLELISM" not in str(err.value)
