# The two commands of the README are `make demo` and `make test`; each installs first.
VENV := .venv/bin
QUESTION ?= What does json.dumps do?

.PHONY: install lock demo test test-fast lint goldens bench corpus

install:
	bash scripts/install.sh

# Resolve every dependency anew into requirements/linux-x86_64-{cpu,cuda}.txt (with hashes);
# install.sh installs exactly those. Then `make install test` and commit the locks.
lock:
	bash scripts/lock.sh

# Builds the offline web where there is none or where it is of an older format (a search
# of it fails and says so).
corpus: install
	@$(VENV)/webgpt corpus search index --count 1 >/dev/null 2>&1 || $(VENV)/webgpt corpus build

# The main job on the embedded default (scripts/demo.sh): browse the offline web with a
# scripted demonstration, answer with the default policy (SmolLM2-135M on the local vLLM
# server, started on first use and left running; `webgpt model stop` ends it), then serve
# and answer over HTTP with the SDK.
demo: corpus
	QUESTION="$(QUESTION)" bash scripts/demo.sh

test: install
	$(VENV)/ruff check .
	$(VENV)/ruff format --check .
	$(VENV)/mypy
	$(VENV)/mypy --strict client/webgpt_client
	bash scripts/validate-deploy.sh
	$(VENV)/pytest

# The tests that start no heavy process and train nothing, on every core: about 2 minutes
# on 2 cores (README.md). `make test` runs them all, one at a time.
test-fast:
	$(VENV)/pytest -m "not slow" -n auto

lint:
	$(VENV)/ruff check --fix .
	$(VENV)/ruff format .
	$(VENV)/mypy

goldens:
	$(VENV)/python -m tests.browser.goldens --regenerate

bench: corpus
	$(VENV)/python benchmarks/browser_bench.py
	$(VENV)/python benchmarks/agent_bench.py
	$(VENV)/python benchmarks/grammar_bench.py
	$(VENV)/python benchmarks/reward_bench.py
	$(VENV)/python benchmarks/best_of_n_bench.py
	$(VENV)/python benchmarks/service_bench.py
	$(VENV)/python benchmarks/bc_bench.py
	$(VENV)/python benchmarks/export_bench.py
