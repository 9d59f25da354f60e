"""Validated records: smoke runs kept as evidence that a lock ran well on some hardware.

    matrices/<target>.validated/<date>-<report sha12>.toml          the record (envbuilder.validated.model)
    matrices/<target>.validated/<date>-<report sha12>.report.json   the smoke report it vouches for

`recorder` writes them after `serve --smoke --record`, `check` re-verifies them against their
reports, `evidence` answers the gate's and doctor's questions. See docs/validated.md.
"""
