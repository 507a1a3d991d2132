"""The `webgpt` entry point itself."""

import signal
import subprocess
import sys

# A command that holds a resource until it ends (as `webgpt eval` holds the vLLM server it
# started for the run), run through the real entry point in its own process.
HOLDER = """
import argparse, sys, time
import service.cli as cli

def run(args):
    try:
        print("holding", flush=True)
        time.sleep(60)
    finally:
        print("released", flush=True)

class Parser:
    def parse_args(self, argv):
        return argparse.Namespace(run=run, verbose=False)

cli.build_parser = Parser
sys.exit(cli.main([]))
"""


def test_sigterm_ends_a_command_through_its_cleanup() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "holding\n"
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert out == "released\n", err
    assert process.returncode == 130  # as after Ctrl-C
