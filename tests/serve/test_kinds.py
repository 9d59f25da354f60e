"""Serve kinds: `vllm` and the generic `command`, each passing the served model name exactly once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm_servers import free_port, llama_server_binary, make_model

ROOT = Path(__file__).parents[2]
VLLM_EXAMPLE = ROOT / "docs" / "examples" / "hopper-vllm.yaml"


def envbuilder(*args, env=None, timeout=300):
    proc = subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _matrix(tmp_path, serve: str) -> Path:
    path = tmp_path / "m.yaml"
    head = (ROOT / "matrices" / "cpu-llamacpp.yaml").read_text().split("\nserve:")[0]
    path.write_text(head.replace("target: cpu-llamacpp", "target: m") + "\nserve:\n" + serve)
    return path


def test_vllm_example_dry_run_is_the_exact_command():
    proc = envbuilder("serve", str(VLLM_EXAMPLE), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "OMP_NUM_THREADS=8 vllm serve Qwen/Qwen2.5-7B-Instruct --host 0.0.0.0 --port 8000 "
        "--served-model-name qwen2.5-7b --tensor-parallel-size 1 --max-model-len 8192 "
        "--gpu-memory-utilization 0.9 --max-num-seqs 256",
        "# ready: GET http://127.0.0.1:8000/health -> 200 within 900 s; then /v1/models",
    ]


def test_command_kind_fills_placeholders_as_whole_arguments(tmp_path):
    matrix = _matrix(tmp_path, """  kind: command
  model: /models/a b;rm -rf x.gguf
  served_model_name: tiny
  port: 9001
  command: [my-server, --weights, "{model}", "--listen={host}:{port}", --name, "{served_model_name}",
            --json, '{"threads": 4}']
  args: [--verbose]
  ready_path: /ready
""")
    proc = envbuilder("serve", str(matrix), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "my-server --weights '/models/a b;rm -rf x.gguf' --listen=127.0.0.1:9001 --name tiny "
        """--json '{"threads": 4}' --verbose""",
        "# ready: GET http://127.0.0.1:9001/ready -> 200 within 900 s; then /v1/models",
    ]
    proc = envbuilder("serve", str(matrix), "--dry-run", "--binary", "/opt/my-server")
    assert proc.stdout.startswith("/opt/my-server --weights ")


@pytest.mark.parametrize("serve, message", [
    ("  kind: vllm\n  model: m\n  served_model_name: x\n  args: [--served-model-name, y]\n",
     "args repeat --served-model-name"),
    ("  kind: sglang\n  model: m\n  args: [--port=1]\n", "args repeat --port"),
    ("  kind: llama.cpp\n  model: m\n  args: [--alias, y]\n", "args repeat --alias"),
    ("  kind: command\n  model: m\n", "kind `command` needs `command:`"),
    ("  kind: command\n  model: m\n  command: [s, '{modle}']\n", "unknown placeholder(s) {modle}"),
    ("  kind: command\n  model: m\n  served_model_name: x\n  command: [s, '{model}']\n",
     "has no {served_model_name}"),
    ("  kind: vllm\n  model: m\n  command: [s]\n", "`command:` is for kind `command`"),
])
def test_bad_serve_profiles_are_bad_input(tmp_path, serve, message):
    proc = envbuilder("serve", str(_matrix(tmp_path, serve)), "--dry-run")
    assert proc.returncode == 2, proc.stdout
    assert message in proc.stderr and "m.yaml" in proc.stderr


def test_each_kind_has_its_own_default_port(tmp_path):
    for kind, port in (("vllm", 8000), ("sglang", 30000), ("llama.cpp", 8080)):
        proc = envbuilder("serve", str(_matrix(tmp_path, f"  kind: {kind}\n  model: m\n")), "--dry-run")
        assert f"--port {port} " in proc.stdout.splitlines()[0] + " ", kind


@pytest.mark.servers
def test_command_kind_serves_and_smokes_a_real_server(tmp_path):
    """llama-server started through `kind: command`: placeholders, the readiness probe, the served name."""
    binary = llama_server_binary()
    model = make_model("gguf", tmp_path / "tiny.gguf")
    matrix = _matrix(tmp_path, f"""  kind: command
  model: {model}
  served_model_name: tiny-cmd
  port: {free_port()}
  command: [{binary}, -m, "{{model}}", --host, "{{host}}", --port, "{{port}}", --alias, "{{served_model_name}}",
            -np, "2", -c, "2048"]
  ready_path: /health
  startup_timeout_s: 120
smoke:
  api: completions
  prompt_tokens: 16
  max_tokens: 16
  warmup_requests: 1
  concurrency: [1, 2]
  requests_per_level: 4
  thresholds:
    - {{metric: error_rate, max: 0}}
""")
    proc = envbuilder("serve", str(matrix), "--smoke", "--exit", "--log", str(tmp_path / "s.log"),
                      "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["passed"] and report["server"]["kind"] == "command"
    assert "tiny-cmd" in json.dumps(report["server"])
