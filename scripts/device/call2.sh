#!/usr/bin/env bash
# Device call 2 of 2, on the machine call 1 left warm: rebuild the base from its two parts,
# convert it, check every tensor against this machine's conversion, train, and return the
# published checkpoint under $OUT. Arguments: `webgpt train bc` options, with
# --base /tmp/base and demonstrations from /tmp/data/ (the files prepare.sh compressed).
#   carry: .gpu/part2 .gpu/data .gpu/scripts   (prepare.sh's ASIDE moved out: 64 MiB)
set -euo pipefail
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
started=$(date +%s)
mkdir -p /tmp/gguf /tmp/data
for f in .gpu/data/*.xz; do xz -d -T0 -c "$f" > "/tmp/data/$(basename "$f" .xz)"; done
if [ ! -f /tmp/base/model.safetensors ]; then
  test -f /tmp/base.gguf.xz.part1 || { echo "part 1 is gone: the machine was given back"; exit 3; }
  cat /tmp/base.gguf.xz.part1 .gpu/part2/base.gguf.xz.part2 | xz -d -T0 \
    > /tmp/gguf/SmolLM2-135M-Instruct.Q4_1.gguf
  python3 - <<'PY'
import hashlib, json, lzma, shutil
from pathlib import Path
import torch
from safetensors import safe_open
from webgpt.agent.model import convert_gguf
out, meta = Path("/tmp/base"), Path(".gpu/scripts/base_meta")
convert_gguf(Path("/tmp/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"), out)
for f in meta.iterdir():  # this machine's tokenizer and config: only the tensors differ
    if f.suffix == ".xz":
        (out / f.stem).write_bytes(lzma.decompress(f.read_bytes()))
    else:
        shutil.copy(f, out / f.name)
want = json.loads(Path(".gpu/scripts/base_tensors.json").read_text())
with safe_open(str(out / "model.safetensors"), "pt") as f:
    differ = [k for k in f.keys() if want.get(k) != hashlib.sha256(
        f.get_tensor(k).contiguous().view(-1).view(torch.uint8).numpy().tobytes()).hexdigest()]
print(f"base tensors identical to this machine's conversion: {len(want) - len(differ)} of {len(want)}")
if differ:
    raise SystemExit(f"the base differs: {differ[:5]}")
PY
fi
echo "base ready after $(( $(date +%s) - started )) s"
python3 - "$@" <<'PY' 2>&1 | tee "$OUT/train.log"
import os, shutil, sys
from webgpt.infra.trainer_options import parse_config
from webgpt.learning.bc import BCConfig, train_bc
result = train_bc(parse_config(BCConfig, sys.argv[1:], "webgpt train bc"), log=print)
for published in result.checkpoint.iterdir():  # adapter, manifest, config: back with the reply
    shutil.copy(published, os.environ["OUT"])
PY
echo "done after $(( $(date +%s) - started )) s"
