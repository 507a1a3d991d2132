"""Real HTTP servers on 127.0.0.1 for tests: uvicorn in a background thread."""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from webgpt.infra.vllm_server import free_port

__all__ = ["COMMAND_ENV", "free_port", "serve"]

# The variables of a `webgpt` command a test starts. The scripted policies answer without
# the shipped quote ranker (a 135M model prepared from a registry package; tests/conftest.py
# turns it off in this process too); a test of the ranker names one.
COMMAND_ENV = {"PATH": "/usr/bin:/bin", "WEBGPT_QUOTE_RANKER": "none"}


@contextmanager
def serve(app: ASGIApp) -> Iterator[str]:
    """Run app on a free loopback port; yields its base URL ("http://127.0.0.1:PORT")."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="auto",  # the app closes its clients on shutdown
        ws="none",
        loop="asyncio",  # uvloop (installed with vLLM) misbehaves in a non-main thread
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    # 60 s: start-up includes the app's lifespan (migrations, a first readiness check),
    # slow on a loaded 2-core machine.
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def wait_until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Poll condition until it holds; fail the test after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
