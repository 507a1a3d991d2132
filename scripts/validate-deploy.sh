#!/usr/bin/env bash
# Validates deploy/ without a container engine (none runs on these machines):
# Dockerfiles with hadolint, the compose file with `docker-compose config` (parses and
# interpolates, no engine needed), Kubernetes manifests against the API schemas.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv/bin

echo "hadolint: deploy/*.Dockerfile"
"$VENV/hadolint" deploy/*.Dockerfile

echo "compose: deploy/docker-compose.yml (+ each override: reward, quote ranker)"
export WEBGPT_API_KEYS=validate SEARXNG_SECRET=validate REWARD_VERSION=validate
export POSTGRES_PASSWORD=validate QUOTE_RANKER_VERSION=validate
docker-compose -f deploy/docker-compose.yml config -q
docker-compose -f deploy/docker-compose.yml -f deploy/docker-compose.reward.yml config -q
docker-compose -f deploy/docker-compose.yml -f deploy/docker-compose.quote-ranker.yml config -q

echo "kubernetes: deploy/k8s/**/*.yaml (overlay patches are partial: checked as built)"
mapfile -t patches < <(for k in deploy/k8s/*/kustomization.yaml; do
  { grep 'path:' "$k" || true; } | sed "s#.*path: *#$(dirname "$k")/#"; done)
mapfile -t manifests < <(find deploy/k8s -name '*.yaml' ! -name kustomization.yaml | sort |
  grep -v -x -F -f <(printf '%s\n' "${patches[@]}"))
"$VENV/kubernetes-validate" --strict --quiet "${manifests[@]}"
if command -v kubectl > /dev/null; then  # each kustomization as kustomize builds it
  built=$(mktemp -d)
  for kustomization in $(find deploy/k8s -name kustomization.yaml | sort); do
    folder=$(dirname "$kustomization")
    kubectl kustomize "$folder" > "$built/$(echo "$folder" | tr / _).yaml"
  done
  "$VENV/kubernetes-validate" --strict --quiet "$built"/*.yaml
  rm -r "$built"
fi
# What kustomize would read exists, and each overlay patch names an object of its base.
"$VENV/python" - <<'PY'
import pathlib, sys
import yaml

def objects(folder):
    """(kind, namespace, name) of everything a kustomization folder applies."""
    spec = yaml.safe_load((folder / "kustomization.yaml").read_text())
    found = set()
    for entry in spec.get("resources", []):
        target = (folder / entry).resolve()
        if target.is_dir():
            found |= objects(target)
        elif target.is_file():
            for doc in yaml.safe_load_all(target.read_text()):
                meta = doc["metadata"]
                found.add((doc["kind"], meta.get("namespace"), meta["name"]))
        else:
            sys.exit(f"{folder}/kustomization.yaml lists missing {entry}")
    for patch in spec.get("patches", []):
        doc = yaml.safe_load((folder / patch["path"]).read_text())
        key = (doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])
        if key not in found:
            sys.exit(f"{folder}: patch {patch['path']} targets {key}, which the base lacks")
    return found

for kustomization in sorted(pathlib.Path("deploy/k8s").rglob("kustomization.yaml")):
    objects(kustomization.parent)

# Feedback lives in the shared database, never in a pod's or container's own storage.
deployment = next(yaml.safe_load_all(pathlib.Path("deploy/k8s/base/service.yaml").read_text()))
compose = yaml.safe_load(pathlib.Path("deploy/docker-compose.yml").read_text())
k8s_env = {e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
for where, env in (("k8s", k8s_env), ("compose", set(compose["services"]["webgpt"]["environment"]))):
    if "WEBGPT_DATABASE_URL" not in env or "WEBGPT_FEEDBACK_DB" in env:
        sys.exit(f"{where}: the service must store feedback through WEBGPT_DATABASE_URL")
    if "WEBGPT_RENDER_URL" not in env:
        sys.exit(f"{where}: Chromium must run in the renderer, not in the service")
# The renderer runs hostile scripts: it gets no secret, in either deployment.
renderer_docs = list(yaml.safe_load_all(pathlib.Path("deploy/k8s/base/renderer.yaml").read_text()))
if "secret" in yaml.safe_dump(renderer_docs[0]).lower() or "environment" in compose["services"]["renderer"]:
    sys.exit("the renderer must hold no secrets")
PY
echo "deploy/ is valid"
