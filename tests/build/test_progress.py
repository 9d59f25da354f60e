"""BuildKit plain progress: steps, cache hits and the failing step's tail (recorded engine output)."""

from __future__ import annotations

from envbuilder.build.progress import Progress

# Recorded from docker 20.10's BuildKit with --progress=plain on this project's CPU target.
RECORDED = """\
#4 [base 1/2] FROM docker.io/library/debian:bookworm-slim
#4 DONE 0.0s

#5 [base 2/2] RUN --mount=type=cache,target=/var/cache/apt apt-get update
#5 CACHED

#17 [build-llama-cpp-python 3/4] RUN cmake --build /opt/envbuilder/build/cmake --target llama-server
#17 sha256:1b65517d1947d1754676d8bade00d4c1a9441301978e08287d94456cee28206c
#17 CACHED

#8 [python 2/2] RUN pip install --require-hashes -r venv.txt
#8 0.512 Collecting numpy==2.4.6
#8 1.204 ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.
#8 1.205     numpy==2.4.6 from https://files/numpy.whl:
#8 ERROR: executor failed running [/bin/sh -c pip install]: exit code: 1
------
 > [python 2/2] RUN pip install --require-hashes -r venv.txt:
------
"""


def feed(text: str) -> Progress:
    progress = Progress()
    for line in text.splitlines():
        progress.feed(line)
    return progress


def test_steps_know_their_stage_and_cache_state() -> None:
    progress = feed(RECORDED)
    llama = progress.stage_steps("build-llama-cpp-python")
    assert len(llama) == 1 and llama[0].cached and "--target llama-server" in llama[0].instruction
    assert progress.steps[5].cached and progress.steps[5].stage == "base"
    assert not progress.steps[8].cached


def test_failure_report_names_the_step_and_shows_its_output() -> None:
    report = feed(RECORDED).failure_report()
    assert report.startswith("step [python 2/2] RUN pip install")
    assert "exit code: 1" in report
    assert "DO NOT MATCH THE HASHES" in report and "numpy==2.4.6 from" in report
    assert "sha256:1b655" not in report


def test_no_failure_no_report() -> None:
    assert feed("#4 [base 1/2] FROM x\n#4 DONE 0.1s\n").failure_report() == ""
