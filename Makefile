# Attention Lab. Two commands do everything on a fresh machine:
#   make run    install what the app needs (once) and start it on http://127.0.0.1:8501
#               (this machine only; `make run HOST=0.0.0.0` opens it to the classroom network)
#   make test   install what the app and its tests need (once), then run every test
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
HOST ?= 127.0.0.1

.PHONY: run test check browser bench clean

run: $(VENV)/.deps-run
	$(PY) -m ui.serve --server.address $(HOST) --server.port $(PORT)

test: $(VENV)/.deps-test browser
	$(PY) -m core.lessons check
	$(PY) -m pytest

check: $(VENV)/.deps-run
	$(PY) -m core.lessons check

bench: $(VENV)/.deps-test browser
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps-run: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install -qq --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.deps-test: requirements.txt requirements-dev.txt $(VENV)/.deps-run
	$(PY) -m pip install -qq --disable-pip-version-check -r requirements-dev.txt
	touch $@

# Browser tests drive Debian's Chromium (never `playwright install`, which downloads a browser).
browser:
	@bash scripts/ensure-browser.sh

clean:
	rm -rf $(VENV) artifacts .pytest_cache
