#!/usr/bin/env bash
# Validates deploy/ without a container engine (none runs on these machines):
# Dockerfiles with hadolint, the compose file with `docker-compose config` (parses and
# interpolates, no engine needed), Kubernetes manifests against the API schemas.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv/bin

echo "hadolint: deploy/*.Dockerfile"
"$VENV/hadolint" deploy/*.Dockerfile

echo "compose: deploy/docker-compose.yml"
WEBGPT_API_KEYS=validate SEARXNG_SECRET=validate docker-compose -f deploy/docker-compose.yml config -q

echo "kubernetes: deploy/k8s/*.yaml"
manifests=()
for file in deploy/k8s/*.yaml; do
  [ "$(basename "$file")" = kustomization.yaml ] || manifests+=("$file")
done
"$VENV/kubernetes-validate" --strict --quiet "${manifests[@]}"
# Every resource kustomize would apply exists.
"$VENV/python" - <<'PY'
import pathlib, sys
import yaml
folder = pathlib.Path("deploy/k8s")
listed = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
missing = [name for name in listed if not (folder / name).is_file()]
sys.exit(f"kustomization.yaml lists missing files: {missing}" if missing else 0)
PY
echo "deploy/ is valid"
