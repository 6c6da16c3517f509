# Two commands on a fresh machine: `make serve` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip --quiet --quiet --disable-pip-version-check
# `serve` installs what serving needs; `test` adds the test extra (linters, type checker, the
# openai SDK, agent-framework's OpenAI clients, ...). Each has its own stamp.
SERVE_STAMP := $(VENV)/.installed-serve
TEST_STAMP := $(VENV)/.installed-test

.PHONY: serve test lint typecheck pytest migrate bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# Editable: the command serves this checkout as it is edited (no reinstall after a change).
$(SERVE_STAMP): pyproject.toml setup.py | $(BIN)/python
	$(PIP) install -e .
	touch $(SERVE_STAMP)

$(TEST_STAMP): pyproject.toml setup.py | $(BIN)/python
	$(PIP) install -e '.[test]'
	touch $(TEST_STAMP) $(SERVE_STAMP)

# `make serve APP=package.module:factory` serves your app (default: the built-in example);
# other `serve` options go in SERVE_ARGS, e.g. `make serve SERVE_ARGS="--port 9000"`.
APP ?=
SERVE_ARGS ?=
serve: $(SERVE_STAMP)
	$(BIN)/durable-responses serve $(if $(APP),--app '$(APP)') $(SERVE_ARGS)

migrate: $(SERVE_STAMP)
	$(BIN)/durable-responses migrate

lint: $(TEST_STAMP)
	$(BIN)/ruff check server tests bench migrations setup.py
	$(BIN)/ruff format --check server tests bench migrations setup.py

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

# Two workers (pytest-xdist) on this two-core machine: most tests wait (leases, ticks, a
# restarting database), so two at a time gain (serial 9:46, two workers 6:15, same tests and
# load). Three were faster still when the machine was quiet (5:52 against 9:31), but with
# other users on the machine's PostgreSQL (max_connections 100) three workers' servers ran it
# out of connections. PYTEST_WORKERS=0 runs everything in one process.
PYTEST_WORKERS ?= 2

pytest: $(TEST_STAMP)
	$(BIN)/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadgroup --durations=15 $(PYTEST_ARGS)

test: lint typecheck pytest

bench: $(TEST_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) data
