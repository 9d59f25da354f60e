"""The same matrix locks to the same closure, every artifact hashed and sized, whatever the index offers:
PEP 691 JSON or PEP 503 HTML pages, PEP 658 metadata or not, HTTP range reads or not."""

from __future__ import annotations

import pytest

from tests.resolve.project import publish
from tests.support.dists import make_sdist

VARIANTS = [
    pytest.param({}, id="json+pep658+ranges"),
    pytest.param({"pep658": False}, id="json, no pep658"),
    pytest.param({"pep658": False, "ranges": False}, id="no pep658, no ranges"),
    pytest.param({"formats": ("html",)}, id="html only"),
    pytest.param({"formats": ("html",), "pep658": False, "ranges": False}, id="html, no pep658, no ranges"),
]


@pytest.mark.parametrize("switches", VARIANTS)
def test_every_index_flavour_locks_the_closure_with_hashed_sized_artifacts(project, default_index, switches):
    publish(default_index, "app", "1.0", ["lib>=1", 'win; sys_platform == "win32"'])
    publish(default_index, "lib", "2.0", tags="cp312-cp312-manylinux_2_28_x86_64")
    default_index.add(make_sdist("pk", "1.0", requires_dist=["app"], metadata_version="2.2"))
    for key, value in switches.items():
        setattr(default_index, key, value)
    project.write_matrix("flavour", {"pk": "==1.0"})
    result = project.run("lock", "flavour")
    assert result.rc == 0, result.text
    lock = project.read_lock("flavour")
    assert {p.name: p.version for p in lock.packages} == {"pk": "1.0", "app": "1.0", "lib": "2.0"}
    for package in lock.packages:
        (artifact,) = package.artifacts
        assert len(artifact.sha256) == 64 and artifact.size and artifact.size > 0, (switches, artifact)
    if not switches.get("ranges", True) and not switches.get("pep658", True):
        assert default_index.requests("lib-2.0-cp312-cp312-manylinux_2_28_x86_64.whl")  # downloaded whole
