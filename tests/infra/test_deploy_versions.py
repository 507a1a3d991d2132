"""The deployment files name the checkpoints this build ships: a new default version cannot
leave compose or Kubernetes serving the one before (scripts/validate-deploy.sh checks
their form)."""

from pathlib import Path

import yaml

from webgpt.agent.model import DEFAULT_QUOTE_RANKER_VERSION

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_the_quote_ranker_overlays_serve_the_shipped_ranker() -> None:
    env = dict(
        line.split("=", 1)
        for line in (DEPLOY / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert env["QUOTE_RANKER_VERSION"] == DEFAULT_QUOTE_RANKER_VERSION
    config = yaml.safe_load((DEPLOY / "k8s" / "quote-ranker" / "config.yaml").read_text())
    assert config["data"]["quote-ranker-version"] == DEFAULT_QUOTE_RANKER_VERSION
    assert config["data"]["quote-ranker"] == f"/registry/reward/{DEFAULT_QUOTE_RANKER_VERSION}"
