# Attention Lab. Two commands do everything on a fresh machine:
#   make run    install what the app needs (once) and start it on http://127.0.0.1:8501
#               (this machine only; `make run HOST=0.0.0.0` opens it to the classroom network)
#   make test   install what the app and its tests need (once), then run every test
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
HOST ?= 127.0.0.1

.PHONY: run test lint check browser nginx bench load soak gpu-check clean

run: $(VENV)/.deps-run
	$(PY) -m ui.serve --server.address $(HOST) --server.port $(PORT)

test: $(VENV)/.deps-test lint browser nginx
	$(PY) -m core.lessons check
	$(PY) -m pytest

# ruff (pinned in requirements-dev.txt, settings in pyproject.toml): lint and format, checked first by
# `make test`. `make lint RUFF_FORMAT=0` skips the format check while a change is in progress.
RUFF_FORMAT ?= 1
lint: $(VENV)/.deps-test
	$(VENV)/bin/ruff check .
ifeq ($(RUFF_FORMAT),1)
	$(VENV)/bin/ruff format --check .
endif

check: $(VENV)/.deps-run
	$(PY) -m core.lessons check

bench: $(VENV)/.deps-test browser
	for b in bench/bench_*.py; do case $$b in *soak*) continue;; esac; echo "== $$b"; $(PY) $$b || exit 1; done

# A term of use without a restart (~20-30 min on 2 cores): RSS after 500 and 2,000 reruns.
soak: $(VENV)/.deps-test
	$(PY) bench/bench_soak.py --marks 500 2000

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps-run: requirements.txt requirements-assets.txt | $(VENV)/bin/python
	$(PY) -m pip install -qq --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -qq --disable-pip-version-check --no-deps -r requirements-assets.txt
	touch $@

$(VENV)/.deps-test: requirements.txt requirements-dev.txt $(VENV)/.deps-run
	$(PY) -m pip install -qq --disable-pip-version-check -r requirements-dev.txt
	touch $@

# A class on one server: 30 protocol-level sessions edit lesson 4 for a minute, then a burst of 30.
load: $(VENV)/.deps-test
	$(PY) bench/bench_load.py --sessions 30 --page self-attention --interval 15 --duration 60 --burst 1

# Every lesson's model on the GPU (says so and exits 0 where there is no CUDA).
gpu-check: $(VENV)/.deps-run
	$(PY) -m core.gpu_check

# Debian's nginx, the load balancer of `python -m ui.cluster` (tests/e2e/test_cluster.py starts one).
nginx:
	@bash scripts/ensure-nginx.sh

# Browser tests drive Debian's Chromium (never `playwright install`, which downloads a browser).
browser:
	@bash scripts/ensure-browser.sh

clean:
	rm -rf $(VENV) artifacts .pytest_cache
