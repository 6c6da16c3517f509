# Two commands on a fresh machine: `make serve` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip --quiet --quiet --disable-pip-version-check
# `serve` installs what serving needs; `test` adds the test extra (linters, type checker, the
# openai SDK, agent-framework's OpenAI clients, ...). Each has its own stamp.
SERVE_STAMP := $(VENV)/.installed-serve
TEST_STAMP := $(VENV)/.installed-test
# agent-framework: .venv has the newest supported releases, exactly (constraints/newest.txt: a
# venv made before a new release moves to it); .venv-oldest the oldest (constraints/oldest.txt),
# on which `make test` also runs the tests that touch the framework (README: supported
# agent-framework releases).
NEWEST := constraints/newest.txt
OLDEST := constraints/oldest.txt
OLDEST_VENV ?= .venv-oldest
OLDEST_BIN := $(OLDEST_VENV)/bin
OLDEST_STAMP := $(OLDEST_VENV)/.installed-test

.PHONY: serve test lint typecheck pytest pytest-oldest migrate bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# Editable: the command serves this checkout as it is edited (no reinstall after a change).
$(SERVE_STAMP): pyproject.toml setup.py $(NEWEST) | $(BIN)/python
	$(PIP) install -e . -c $(NEWEST)
	touch $(SERVE_STAMP)

$(TEST_STAMP): pyproject.toml setup.py $(NEWEST) | $(BIN)/python
	$(PIP) install -e '.[test]' -c $(NEWEST)
	touch $(TEST_STAMP) $(SERVE_STAMP)

$(OLDEST_BIN)/python:
	$(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_BIN)/pip --quiet --quiet --disable-pip-version-check install --upgrade pip

$(OLDEST_STAMP): pyproject.toml setup.py $(OLDEST) | $(OLDEST_BIN)/python
	$(OLDEST_BIN)/pip --quiet --quiet --disable-pip-version-check install -e '.[test]' -c $(OLDEST)
	touch $(OLDEST_STAMP)

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

# tests/agents/test_releases.py pauses a response under the oldest release and answers it under
# the newest (and back): the oldest venv is made first.
pytest: $(TEST_STAMP) $(OLDEST_STAMP)
	DURABLE_RESPONSES_OLDEST_PYTHON=$(abspath $(OLDEST_BIN))/python \
	  $(BIN)/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadgroup --durations=15 $(PYTEST_ARGS)

# The oldest supported agent-framework: the type check and the tests of what differs between
# the releases (README: supported agent-framework releases): the private names and the restore
# fix (test_af_private), agents and orchestrations with their tools, approvals and sessions as
# the host shows them (test_apps, test_examples), the per-run options the host passes
# (test_request_options), the framework's spans (test_traces), the journal's chat and function
# middleware across kill -9 (journal/test_approvals). The rest of the suite drives the host
# through the same framework calls; it runs on the newest (`pytest`, which also pauses a
# response under the oldest and answers it under the newest: test_releases).
OLDEST_TESTS ?= tests/runtime/test_af_private.py tests/agents/test_apps.py tests/agents/test_examples.py \
  tests/agents/test_request_options.py tests/ops/test_traces.py tests/journal/test_approvals.py
pytest-oldest: $(OLDEST_STAMP)
	$(OLDEST_BIN)/mypy --cache-dir .mypy_cache/oldest
	$(OLDEST_BIN)/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadgroup --durations=10 \
	  $(OLDEST_TESTS)

test: lint typecheck pytest pytest-oldest

bench: $(TEST_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) $(OLDEST_VENV) data
