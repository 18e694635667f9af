# Attention Lab. Two commands do everything on a fresh machine:
#   make run    install what the app needs (once) and start it on http://127.0.0.1:8501
#               (this machine only; `make run HOST=0.0.0.0` opens it to the classroom network)
#   make test   install what the app and its tests need (once), then run every test
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
HOST ?= 127.0.0.1

.PHONY: run test lint check browser bench clean

run: $(VENV)/.deps-run
	$(PY) -m ui.serve --server.address $(HOST) --server.port $(PORT)

test: $(VENV)/.deps-test lint browser
	$(PY) -m core.lessons check
	$(PY) -m pytest

# ruff (pinned in requirements-dev.txt, settings in pyproject.toml). The format check waits until the
# whole tree has been formatted once: `make lint RUFF_FORMAT=1`, then flip the default to 1.
RUFF_FORMAT ?= 0
lint: $(VENV)/.deps-test
	$(VENV)/bin/ruff check .
ifeq ($(RUFF_FORMAT),1)
	$(VENV)/bin/ruff format --check .
endif

check: $(VENV)/.deps-run
	$(PY) -m core.lessons check

bench: $(VENV)/.deps-test browser
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps-run: requirements.txt requirements-assets.txt | $(VENV)/bin/python
	$(PY) -m pip install -qq --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -qq --disable-pip-version-check --no-deps -r requirements-assets.txt
	touch $@

$(VENV)/.deps-test: requirements.txt requirements-dev.txt $(VENV)/.deps-run
	$(PY) -m pip install -qq --disable-pip-version-check -r requirements-dev.txt
	touch $@

# Browser tests drive Debian's Chromium (never `playwright install`, which downloads a browser).
browser:
	@bash scripts/ensure-browser.sh

clean:
	rm -rf $(VENV) artifacts .pytest_cache
