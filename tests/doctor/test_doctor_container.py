"""Container runtime checks: from recorded engine answers, and against the real engine (-m docker)."""

from __future__ import annotations

import pytest

from envbuilder.doctor.capacity import container_facts_from_engine, probe_container
from envbuilder.doctor.checks import _nvidia_runtime, container_checks, Context
from envbuilder.doctor.model import DriverFacts, Gpu, HostFacts
from envbuilder.doctor.sources import HostSources
from envbuilder.knowledge import load_knowledge
from tests.conftest import require_tool

# As docker-py's version() and info() answered on the CI machine's engine (trimmed to the keys read).
VERSION = {"Version": "20.10.24+dfsg1", "ApiVersion": "1.41"}
INFO_PLAIN = {"Runtimes": {"io.containerd.runc.v2": {}, "io.containerd.runtime.v1.linux": {}, "runc": {}},
              "DefaultRuntime": "runc"}
INFO_NVIDIA = {"Runtimes": {**INFO_PLAIN["Runtimes"], "nvidia": {"path": "nvidia-container-runtime"}},
               "DefaultRuntime": "nvidia"}
GPU = Gpu(index=0, name="NVIDIA H200", memory_mib=143771, compute_capability="9.0")


def test_nvidia_runtime_from_engine_info():
    facts = container_facts_from_engine(VERSION, INFO_NVIDIA)
    check = _nvidia_runtime(facts, has_gpus=True)
    assert check.status == "pass" and check.found == "runtime nvidia (default)"


def test_gpu_host_without_nvidia_runtime_fails():
    facts = container_facts_from_engine(VERSION, INFO_PLAIN)
    check = _nvidia_runtime(facts, has_gpus=True)
    assert check.status == "fail" and "nvidia-ctk runtime configure" in check.fix


def test_cdi_spec_counts(tmp_path):
    (tmp_path / "etc/cdi").mkdir(parents=True)
    (tmp_path / "etc/cdi/nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n")
    facts = probe_container(HostSources(root=tmp_path, environ={"DOCKER_HOST": "unix:///nonexistent.sock"}))
    assert facts.engine is None and facts.engine_error
    assert facts.cdi_specs == ("/etc/cdi/nvidia.yaml",)
    host = HostFacts(driver=DriverFacts(version="580.159.04", gpus=(GPU,)), container=facts)
    checks = {c.id: c for c in container_checks(Context(host=host, knowledge=load_knowledge()))}
    assert checks["container.docker"].status == "fail"
    assert checks["container.nvidia-runtime"].status == "pass"


@pytest.mark.docker
def test_real_engine_is_found():
    facts = probe_container(HostSources())
    require_tool("a docker engine", facts.engine, f"{facts.engine_error}; .ci/parts/10-docker.sh starts one")
    assert "API" in facts.engine and "runc" in facts.runtimes
    assert facts.buildkit, facts.buildkit_error
