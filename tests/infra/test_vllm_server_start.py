"""How `infra.vllm_server.start` places a server's processes on CPUs: a server bound to a
core list starts on those cores alone (so torch's core count at import never pins it onto a
core a serving worker keeps busy) and its front end may use every core once it answers. The
server here is a real process answering /v1/models over HTTP, not vLLM: what is checked is
the launch, which is the same for both."""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from webgpt.infra.errors import VLLMServerError
from webgpt.infra.vllm_server import ServerConfig, free_port, parse_cpu_list, start, stop

# Writes the CPUs it was started on to argv[1], then serves /v1/models listing argv[3].
FAKE_SERVER = """
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
with open(sys.argv[1], "w") as out:
    json.dump(sorted(os.sched_getaffinity(0)), out)
class Models(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": sys.argv[3]}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[2])), Models).serve_forever()
"""


@dataclass(frozen=True)
class FakeServerConfig(ServerConfig):
    started_on: Path = Path()

    def command(self) -> list[str]:
        return [sys.executable, "-c", FAKE_SERVER, str(self.started_on), str(self.port),
                self.served_name]  # fmt: skip


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WEBGPT_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to tell apart")
def test_a_server_bound_to_a_core_starts_there_and_its_front_end_widens_once_it_answers(
    home: Path,
) -> None:
    everywhere = os.sched_getaffinity(0)
    bound = max(everywhere)
    config = FakeServerConfig(
        Path("unused"), "fake", port=free_port(), cpu_bind=str(bound), device="cpu",
        started_on=home / "started-on.json",
    )  # fmt: skip
    running = start(config, lambda line: None, timeout_s=60, record=False)
    try:
        assert config.started_on.read_text() == f"[{bound}]"  # from its first instruction
        threads = [int(task.name) for task in Path(f"/proc/{running.pid}/task").iterdir()]
        for thread in threads:  # every thread of the front end
            assert os.sched_getaffinity(thread) == everywhere
        assert os.sched_getaffinity(0) == everywhere  # the starting thread is put back
    finally:
        stop(running)


@pytest.mark.parametrize("cpu_bind", ["auto", "nobind"])
def test_a_server_vllm_binds_itself_starts_where_its_starter_runs(
    home: Path, cpu_bind: str
) -> None:
    config = FakeServerConfig(
        Path("unused"), "fake", port=free_port(), cpu_bind=cpu_bind, device="cpu",
        started_on=home / "started-on.json",
    )  # fmt: skip
    running = start(config, lambda line: None, timeout_s=60, record=False)
    stop(running)
    assert config.started_on.read_text() == str(sorted(os.sched_getaffinity(0)))


def test_core_lists_read_as_vllm_and_taskset_write_them() -> None:
    assert parse_cpu_list("1") == {1}
    assert parse_cpu_list("8-11") == {8, 9, 10, 11}
    assert parse_cpu_list("5,2-4") == {2, 3, 4, 5}
    assert ServerConfig(Path("m"), "m", cpu_bind="0-1|3", device="cpu").start_cpus() == {0, 1, 3}
    assert ServerConfig(Path("m"), "m", cpu_bind="auto", device="cpu").start_cpus() is None
    assert ServerConfig(Path("m"), "m", cpu_bind="3", device="cuda").start_cpus() is None
    for bad in ["", "one", "2-1", "1-", "-1"]:
        with pytest.raises(VLLMServerError, match="is not a CPU list"):
            parse_cpu_list(bad)


def test_a_core_list_the_starter_may_not_run_on_is_refused_before_any_start(home: Path) -> None:
    outside = max(os.sched_getaffinity(0)) + 1
    config = FakeServerConfig(
        Path("unused"), "fake", port=free_port(), cpu_bind=str(outside), device="cpu",
        started_on=home / "started-on.json",
    )  # fmt: skip
    with pytest.raises(VLLMServerError, match="none of which this process may run on"):
        start(config, lambda line: None, timeout_s=60, record=False)
    assert not config.started_on.exists()
