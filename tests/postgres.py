"""A real PostgreSQL server for tests: Debian's `postgresql` package (scripts/install.sh),
a throwaway cluster in a temporary folder, listening on a free loopback port."""

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests.servers import free_port


def postgres_bin() -> Path:
    """The newest installed server's bin folder."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name)
    )
    if not found:
        raise RuntimeError("PostgreSQL is not installed: run scripts/install.sh")
    return found[-1].parent


def _as_owner(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the postgres user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a throwaway cluster; yields the URL of its `postgres` database."""
    # Its own folder under /tmp: pytest's are private to root, whom PostgreSQL refuses.
    folder = Path(tempfile.mkdtemp(prefix="webgpt-postgres-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port, bin_dir = folder / "data", free_port(), postgres_bin()
    subprocess.run(
        _as_owner([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "webgpt"]),
        check=True,
        capture_output=True,
    )
    log = (folder / "server.log").open("wb")
    server = subprocess.Popen(
        _as_owner(
            [
                str(bin_dir / "postgres"),
                "-D",
                str(data),
                "-k",
                str(folder),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-c",
                "fsync=on",
            ]
        ),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"postgresql://webgpt@127.0.0.1:{port}/postgres"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError((folder / "server.log").read_text()) from None
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(server_url: str) -> str:
    """A new empty database on the server; its URL."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + "/" + name
