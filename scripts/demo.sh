#!/usr/bin/env bash
# The main job on the embedded default (`make demo`): browse the offline web by hand, let
# the default policy answer from the command line, then serve and answer over HTTP with the
# SDK. The local vLLM server is started on first use and left running (`webgpt model stop`).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv/bin
QUESTION=${QUESTION:-"What does json.dumps do?"}
PORT=${PORT:-8080}
# Greedy, so every run prints the same answer, and `webgpt eval`'s action limit: the json
# entry is the ninth line holding "json.dumps(" (eight usage examples come first), so the
# policy needs 13 actions to find, quote and answer it, 15 since the question is read as
# asking for an explanation, which collects three quotes (docs/training.md).
ASK=(--max-actions 20 --temperature 0)

echo "== 1. browsing by hand (examples/demo-commands.txt)"
"$VENV/webgpt" browse --question "$QUESTION" < examples/demo-commands.txt

echo "== 2. the default policy answers (webgpt answer): a factoid, a how/why question, and"
echo "   one the offline web cannot answer, which it declines"
for asked in "$QUESTION" "How does a refrigerator keep food cold?" \
  "Who won the 2030 FIFA World Cup?"; do
  echo "-- $asked"
  "$VENV/webgpt" answer "$asked" "${ASK[@]}"
done

echo "== 3. the service answers (webgpt serve + the Python SDK)"
"$VENV/webgpt" serve --port "$PORT" &
service=$!
trap 'kill "$service" 2>/dev/null; wait "$service" 2>/dev/null || true' EXIT
"$VENV/python" - "$PORT" <<'PY'
import sys, time, httpx
url = f"http://127.0.0.1:{sys.argv[1]}/readyz"
for _ in range(600):
    try:
        if httpx.get(url, timeout=2).status_code == 200:
            sys.exit(0)
    except httpx.HTTPError:
        pass
    time.sleep(1)
sys.exit("the service did not become ready")
PY
WEBGPT_BASE_URL="http://127.0.0.1:$PORT" "$VENV/python" client/examples/answer.py "$QUESTION" "${ASK[@]}"
