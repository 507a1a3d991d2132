#!/usr/bin/env bash
# Device call 1 of 2 (scripts/device/prepare.sh): install the wheels `webgpt train bc`
# imports into /tmp/site, keep the first part of the base, check the imports.
#   carry: .gpu/whl .gpu/part1 .gpu/scripts   (prepare.sh's ASIDE moved out: 64 MiB)
set -euo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .gpu/whl/*.whl
cp .gpu/part1/base.gguf.xz.part1 /tmp/
python3 -c "import torch, transformers, peft; print(torch.__version__, transformers.__version__, peft.__version__, torch.cuda.get_device_name())"
PYTHONPATH=/tmp/site:$PWD python3 -c "import webgpt.learning.bc, webgpt.agent.model, trl; print('imports ok')"
