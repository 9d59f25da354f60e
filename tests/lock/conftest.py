import pytest

from tests.resolve.project import project  # noqa: F401  (fixture)
from tests.resolve.project import publish


@pytest.fixture
def locked(project, default_index):
    """`app>=1` locked once: app 1.0, lib 2.0, util 1.0."""
    publish(default_index, "app", "1.0", ["lib>=1", "util"])
    publish(default_index, "lib", "1.0")
    publish(default_index, "lib", "2.0", ["util>=1"])
    publish(default_index, "util", "1.0")
    project.write_matrix("app", {"app": ">=1"})
    result = project.run("lock", "app")
    assert result.rc == 0 and "wrote locks/app.lock.toml: 3 packages" in result.err, result.text
    return project
