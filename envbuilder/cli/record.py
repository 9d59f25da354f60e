"""`--record` for `serve --smoke` and `smoke`: options, and everything settled before the run starts.

Why settle it first: which lock, which image, where the record goes and this host's fingerprint
are all knowable before minutes of model loading; a mistake there is bad input now, not a lost run.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import click

from envbuilder.errors import BadInput

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def record_options(func):
    options = [
        click.option("--record", "do_record", is_flag=True,
                     help="after a passing run, write a validated record (and its report) beside the matrix"),
        click.option("--record-failure", is_flag=True, help="record a failed run too, marked failed"),
        click.option("--records", "records_dir", type=click.Path(file_okay=False, path_type=Path),
                     help="folder for the record [matrices/TARGET.validated]"),
        click.option("--lock", "record_lock", type=click.Path(dir_okay=False, path_type=Path),
                     help="the lock the server runs from, when not inside an envbuilder image "
                          "[locks/TARGET.lock.toml]"),
        click.option("--image", "record_image", metavar="IMAGE",
                     help="the image the server runs in (its id and lock digest come from the docker engine)"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _lock_file(root: Path, target: str, given: Path | None) -> Path | None:
    if given is not None:
        return given
    from envbuilder.lock import lock_path

    default = lock_path(root, target)
    return default if default.exists() else None


def _default_dir(environ: dict, root: Path, target: str) -> Path:
    """The project's `matrices/TARGET.validated`; inside an image, the mounted project in the working dir.

    Inside an image the tool's own project folder dies with the container, so the record goes to
    the project mounted at the working directory (`docker run -v "$PWD:/workspace"`), or nowhere.
    """
    from envbuilder.validated import store

    if not environ.get("ENVBUILDER_IMAGE_MANIFEST"):
        return store.records_dir(root, target)
    here = Path.cwd()
    if (here / "matrices").is_dir():
        return store.records_dir(here, target)
    raise BadInput(f"option --record: inside an image the record would vanish with the container; mount your "
                   f"project at the working directory (docker run -v \"$PWD:{here}\") or pass --records DIR on a "
                   "mounted volume")


def record_request(kw: dict, *, target: str | None, endpoint: str, server):
    """The RecordRequest for this run, or None without --record / --record-failure."""
    if not (kw["do_record"] or kw["record_failure"]):
        return None
    if not target:
        raise BadInput("option --record: needs --target, so the record lands beside that target's matrix")
    host = urlsplit(endpoint).hostname or ""
    if host not in LOOPBACK:
        raise BadInput(f"option --record: the endpoint {endpoint!r} is not on this host, so this host's fingerprint "
                       "would be recorded for another machine's run; run `smoke --record` on the server's host")
    from envbuilder.matrix import project_root
    from envbuilder.validated import fingerprint, provenance
    from envbuilder.validated.recorder import RecordRequest

    environ = dict(os.environ)
    image = (provenance.image_from_engine(kw["record_image"]) if kw["record_image"]
             else provenance.image_in_env(environ))
    root = project_root()
    lock = provenance.lock_identity(environ, _lock_file(root, target, kw["record_lock"]), image)
    if lock is None:
        raise BadInput(f"option --record: which lock is this? run inside an envbuilder image, or pass --image IMAGE "
                       f"or --lock FILE (no locks/{target}.lock.toml here)")
    directory = kw["records_dir"] or _default_dir(environ, root, target)
    return RecordRequest(directory=directory, lock=lock, host=fingerprint.probe(), server=server, image=image,
                         record_failure=kw["record_failure"])


def write_record(request, report) -> None:
    from envbuilder.console import make_console

    from envbuilder.validated.recorder import record_run

    console = make_console(stderr=True, soft_wrap=True)
    path = record_run(report, request)
    if path is None:
        console.print("not recorded: the run did not pass (--record-failure records failed runs too)")
    else:
        console.print(f"recorded {'a FAILED run' if not report.passed else 'a passing run'}: {path}", markup=False)
