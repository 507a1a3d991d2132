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


class PostgresServer:
    """A throwaway cluster in its own folder on a free loopback port; stop() and start()
    again keep its data and port (an outage and a recovery, for the service's tests)."""

    def __init__(self) -> None:
        # Its own folder under /tmp: pytest's are private to root, whom PostgreSQL refuses.
        self.folder = Path(tempfile.mkdtemp(prefix="webgpt-postgres-"))
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self.data, self.port, self.bin_dir = self.folder / "data", free_port(), postgres_bin()
        subprocess.run(
            _as_owner(
                [str(self.bin_dir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "webgpt"]
            ),
            check=True,
            capture_output=True,
        )
        self.url = f"postgresql://webgpt@127.0.0.1:{self.port}/postgres"
        self._server: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.folder / "server.log").open("ab")
        self._server = subprocess.Popen(
            _as_owner(
                [
                    str(self.bin_dir / "postgres"),
                    "-D",
                    str(self.data),
                    "-k",
                    str(self.folder),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-c",
                    "fsync=on",
                ]
            ),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline or self._server.poll() is not None:
                    raise RuntimeError((self.folder / "server.log").read_text()) from None
                time.sleep(0.1)

    def stop(self) -> None:
        """A fast shutdown: open connections are cut, as in an outage. pg_ctl waits until
        the server is gone (signalling runuser would leave it dying, its lock file behind)."""
        if self._server is not None:
            pg_ctl = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w"]
            subprocess.run(_as_owner([*pg_ctl, "stop"]), check=True, capture_output=True)
            self._server.wait(timeout=30)
            self._server = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a throwaway cluster; yields the URL of its `postgres` database."""
    server = PostgresServer()
    try:
        server.start()
        yield server.url
    finally:
        server.remove()


def fresh_database(server_url: str) -> str:
    """A new empty database on the server; its URL."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + "/" + name
