"""A package whose wheels need a newer glibc than the target is reported as that, not as an sdist problem."""

from __future__ import annotations

from tests.resolve.project import publish
from tests.support.dists import make_sdist


def test_wheel_for_newer_glibc_names_glibc_not_static_metadata(project, default_index):
    publish(default_index, "fast", "2.0", tags="cp311-cp311-manylinux_2_39_x86_64")
    publish(default_index, "fast", "2.0", tags="cp311-cp311-manylinux_2_41_x86_64")
    default_index.add(make_sdist("fast", "2.0", metadata_version="2.1"))  # dependencies only known by building
    project.write_matrix("old-glibc", {"fast": "==2.0"}, python="3.11", libc="glibc_2.36")
    result = project.run("lock", "old-glibc")
    assert result.rc == 2, result.text
    assert ("fast 2.0 has no wheel that installs on the target: its oldest wheel needs glibc 2.39 "
            "(manylinux_2_39_x86_64) and the target has glibc 2.36 (platform.libc: glibc_2.36)") in result.err
    assert "correct platform.libc" in result.err and "Traceback" not in result.err


def test_wheel_for_another_python_names_python(project, default_index):
    publish(default_index, "fast", "2.0", tags="cp313-cp313-manylinux_2_17_x86_64")
    default_index.add(make_sdist("fast", "2.0", metadata_version="2.1"))
    project.write_matrix("py311", {"fast": "==2.0"}, python="3.11", libc="glibc_2.36")
    result = project.run("lock", "py311")
    assert result.rc == 2
    assert "its wheels are for cp313-cp313, not CPython 3.11 (platform.python)" in result.err


def test_sdist_only_package_keeps_the_static_metadata_advice(project, default_index):
    default_index.add(make_sdist("slow", "1.0", metadata_version="2.1"))
    project.write_matrix("sdist-only", {"slow": "==1.0"}, python="3.11", libc="glibc_2.36")
    result = project.run("lock", "sdist-only")
    assert result.rc == 2
    assert "static metadata for it in the matrix" in result.err and "no wheel" not in result.err
