from tests.resolve.project import project  # noqa: F401  (fixture)
