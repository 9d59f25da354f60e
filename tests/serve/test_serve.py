"""`envbuilder serve`: the exact command, a real llama-server child, readiness, signals, clean stop."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from llm_servers import free_port, llama_server_binary, make_model

MATRICES = Path(__file__).parents[2] / "matrices"


def envbuilder(*args, env=None, timeout=300):
    proc = subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_dry_run_is_the_sm120_recipe():
    proc = envbuilder("serve", "blackwell-sm120", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.splitlines()[0]
    for piece in ("NCCL_P2P_LEVEL=SYS", "SGLANG_ENABLE_DEEP_GEMM=0", "SGLANG_ENABLE_JIT_DEEPGEMM=0",
                  "python3 -m sglang.launch_server --model-path lukealonso/GLM-5-NVFP4", "--tp 8",
                  "--quantization modelopt_fp4", "--attention-backend flashinfer",
                  "--moe-runner-backend flashinfer_cutlass", "--kv-cache-dtype bf16", "--disable-custom-all-reduce",
                  "--reasoning-parser glm45", "--tool-call-parser glm47", "--mem-fraction-static 0.9",
                  """'{"enable_multithread_load": true, "num_threads": 8}'"""):
        assert piece in line, piece
    assert "/health_generate" in proc.stdout


def test_model_and_binary_overrides():
    proc = envbuilder("serve", "cpu-llamacpp", "--dry-run", "--binary", "/opt/bin/llama-server",
                      env={"ENVBUILDER_MODEL": "/m/x.gguf"})
    assert proc.stdout.startswith("/opt/bin/llama-server -m /m/x.gguf --host 127.0.0.1")
    proc = envbuilder("serve", "cpu-llamacpp", "--dry-run", "--model", "/flag.gguf", env={"ENVBUILDER_MODEL": "/env.gguf"})
    assert " -m /flag.gguf " in proc.stdout


def test_target_without_serve_block_is_bad_input(tmp_path):
    text = (MATRICES / "cpu-llamacpp.yaml").read_text().split("\nserve:")[0] + "\n"
    (tmp_path / "cpu-llamacpp.yaml").write_text(text)
    proc = envbuilder("serve", str(tmp_path / "cpu-llamacpp.yaml"), "--dry-run")
    assert proc.returncode == 2 and "has no `serve:` block" in proc.stderr


@pytest.fixture(scope="module")
def cpu_target(tmp_path_factory):
    """The shipped cpu-llamacpp matrix on a free port, with a real tiny GGUF and the built llama-server."""
    binary = llama_server_binary()
    root = tmp_path_factory.mktemp("target")
    model = make_model("gguf", root / "tiny.gguf")
    text = (MATRICES / "cpu-llamacpp.yaml").read_text().replace("port: 8080", f"port: {free_port()}")
    (root / "cpu-llamacpp.yaml").write_text(text)
    env = {"ENVBUILDER_MODEL": str(model), "ENVBUILDER_SERVER_BINARY": str(binary)}
    return root / "cpu-llamacpp.yaml", env


@pytest.mark.servers
def test_serve_smoke_exit_in_one_command(cpu_target, tmp_path):
    matrix, env = cpu_target
    proc = envbuilder("serve", str(matrix), "--smoke", "--exit", "--log", str(tmp_path / "server.log"),
                      "--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["target"] == "cpu-llamacpp" and report["passed"] and report["server"]["kind"] == "llama.cpp"
    assert [lv["concurrency"] for lv in report["levels"]] == [1, 4, 16]
    assert all(run["output_tokens"] == 32 * 64 for lv in report["levels"] for run in lv["runs"])
    assert "ready after" in proc.stderr and "server stopped" in proc.stderr
    assert "HTTP server is listening" in (tmp_path / "server.log").read_text() or (tmp_path / "server.log").stat().st_size


@pytest.mark.servers
def test_crashing_server_fails_fast_with_its_log(cpu_target, tmp_path):
    matrix, env = cpu_target
    proc = envbuilder("serve", str(matrix), "--exit", "--log", str(tmp_path / "s.log"),
                      env={**env, "ENVBUILDER_MODEL": str(tmp_path / "missing.gguf")})
    assert proc.returncode == 3
    # seen as the process exiting, not as the startup deadline passing (no wall-clock bound: CI is loaded)
    assert "exited with status" in proc.stderr and "before it was ready" in proc.stderr
    assert "not ready after" not in proc.stderr
    assert "missing.gguf" in proc.stderr  # the server's own last log lines explain why


@pytest.mark.servers
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_server_cleanly(cpu_target, tmp_path, signum):
    matrix, env = cpu_target
    port = int(matrix.read_text().split("port: ")[1].split()[0])
    log = tmp_path / "s.log"
    proc = subprocess.Popen([sys.executable, "-m", "envbuilder", "serve", str(matrix), "--log", str(log)],
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    serving = threading.Event()

    def read_stderr() -> None:
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("serving;"):
                serving.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        # The signal goes in once serve says it is serving, not after a guessed sleep: a signal
        # during start-up is an abort (exit 130), which is a different test.
        assert serving.wait(120), "".join(lines)
        proc.send_signal(signum)
        proc.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "".join(lines)
    assert proc.returncode == 0, err
    assert "server stopped (status 0)" in err and "Traceback" not in err  # one signal: its own clean exit
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
    assert log.stat().st_size > 0
