"""A throw-away PostgreSQL server for a gradebook: the tests, the benchmark, or an instructor trying
``GRADEBOOK_URL`` out before pointing it at the department's server.

Uses the machine's own PostgreSQL binaries (Debian: ``/usr/lib/postgresql/<version>/bin``), in a
temporary folder, on a free loopback port, trusting local connections only. As root, ``initdb``
and ``pg_ctl`` refuse to run, so they run as the ``postgres`` system user.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class NoPostgres(RuntimeError):
    """No PostgreSQL binaries on this machine."""


def binaries() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise NoPostgres(
        "no PostgreSQL server binaries (initdb, pg_ctl): on Debian/Ubuntu `apt-get install postgresql`"
    )


def _run(*args: str) -> None:
    user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    done = subprocess.run([*user, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(args)}` failed: {(done.stderr or done.stdout).strip()[-500:]}")


@contextmanager
def temporary_server(database: str = "gradebook") -> Iterator[str]:
    """Start a server with one empty ``database``; yields its SQLAlchemy URL; stops and removes it."""
    bindir = binaries()
    folder = Path(tempfile.mkdtemp(prefix="course-postgres-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        data = folder / "data"
        _run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        _run(
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-w",
            "-l",
            str(folder / "server.log"),
            "-o",
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1",
            "start",
        )
        try:
            _run(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", database)
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/{database}"
        finally:
            _run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
