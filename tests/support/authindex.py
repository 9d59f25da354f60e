"""A real package index that demands credentials: pypiserver with basic auth on 127.0.0.1.

`AuthIndex(folder)` serves the wheels in `folder` (PEP 503 HTML with sha256 fragments) and answers
401 to any listing or download without the right user and password. The password holds characters
that URLs must percent-encode, so a leak in any spelling (plain, %-encoded, base64 as in an
Authorization header) can be looked for: `forms()` lists them.
"""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx


def pypiserver_problem() -> str | None:
    try:
        import passlib.apache  # noqa: F401, PLC0415
        import pypiserver  # noqa: F401, PLC0415
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install -e '.[test]' installs pypiserver and passlib)"
    return None


class AuthIndex:
    user = "ci-reader"
    password = "s3cr3t/p@ss:w0rd+envbuilder-" + "9f3a7c"

    def __init__(self, folder: Path):
        self.folder = folder
        self.proc: subprocess.Popen[bytes] | None = None
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]

    @property
    def bare_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple/"

    @property
    def url(self) -> str:
        """The index URL with percent-encoded credentials, as a user would put in PIP_INDEX_URL."""
        return f"http://{quote(self.user, safe='')}:{quote(self.password, safe='')}@127.0.0.1:{self.port}/simple/"

    def forms(self) -> list[str]:
        """Every spelling of the secret that must never appear anywhere."""
        basic = f"{self.user}:{self.password}".encode()
        return [self.password, quote(self.password, safe=""), quote(self.password),
                base64.b64encode(basic).decode(), base64.b64encode(self.password.encode()).decode(),
                base64.urlsafe_b64encode(basic).decode()]

    def start(self) -> AuthIndex:
        from passlib.apache import HtpasswdFile  # noqa: PLC0415

        htpasswd = self.folder.parent / "htpasswd"
        ht = HtpasswdFile(str(htpasswd), new=True)
        ht.set_password(self.user, self.password)
        ht.save()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(self.port),
             "-a", "download,list", "-P", str(htpasswd), "--disable-fallback", "--hash-algo", "sha256",
             str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("pypiserver did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def __enter__(self) -> AuthIndex:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
