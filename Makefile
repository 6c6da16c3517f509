# Two commands on a fresh machine: `make serve` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Each venv installs through its own uv (bootstrapped by the venv's pip): pip asks the package
# index one request at a time and each answer takes ~2 s here; uv asks in parallel. Both venvs
# of `make test`, side by side at load ~38: 428 s with uv, 1452 s with pip, the same releases.
# The venv keeps its pip (tests/test_install.py builds a wheel with it).
BOOTSTRAP = $(1)/pip --quiet --quiet --disable-pip-version-check install uv
UV_INSTALL = $(1)/uv pip install --quiet --python $(1)/python
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

.PHONY: serve test lint typecheck typecheck-oldest pytest pytest-oldest migrate bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(call BOOTSTRAP,$(BIN))

# Editable: the command serves this checkout as it is edited (no reinstall after a change).
$(SERVE_STAMP): pyproject.toml setup.py $(NEWEST) | $(BIN)/python
	$(call UV_INSTALL,$(BIN)) -e . -c $(NEWEST)
	touch $(SERVE_STAMP)

$(TEST_STAMP): pyproject.toml setup.py $(NEWEST) | $(BIN)/python
	$(call UV_INSTALL,$(BIN)) -e '.[test]' -c $(NEWEST)
	touch $(TEST_STAMP) $(SERVE_STAMP)

$(OLDEST_BIN)/python:
	$(PYTHON) -m venv $(OLDEST_VENV)
	$(call BOOTSTRAP,$(OLDEST_BIN))

$(OLDEST_STAMP): pyproject.toml setup.py $(OLDEST) | $(OLDEST_BIN)/python
	$(call UV_INSTALL,$(OLDEST_BIN)) -e '.[test]' -c $(OLDEST)
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

# The type check against the oldest release's framework (its own cache: the releases' types differ).
# `make test` runs the two at once: each is one process, one core.
typecheck-oldest: $(OLDEST_STAMP)
	$(OLDEST_BIN)/mypy --cache-dir .mypy_cache/oldest

# The suite runs on each release (the oldest leaves out the tests marked `once`, below); most of
# its time is spent waiting (leases, ticks, kills and restarts, a restarting database) as well as
# computing, so more tests run at a time than there are cores. RELEASES_AT_ONCE=1: `make test`
# runs the newest and the oldest release's passes at the same time (`make -j2`, each pass's
# output printed whole when it ends), each with PYTEST_WORKERS pytest-xdist workers
# (PYTEST_WORKERS=0: one process; PYTEST_ARGS narrows both passes, e.g. to one file);
# RELEASES_AT_ONCE=0 runs them one after the other. Measured on this two-core machine, clean
# clones, both passes whole: two workers each, 13:56 (21.1 CPU-minutes); three each, 14:55
# (24.5 CPU-minutes: the two cores were busy already, more workers only contend); PostgreSQL
# (max_connections 300) peaked at 138 and 173 connections. With the oldest pass shorter (`once`,
# below) it ends first (9:26 of 11:59 for the newest, two workers each) and the newest runs on
# alone with cores to spare: the newest pass has three workers, the oldest two.
PYTEST_WORKERS ?= 3
OLDEST_WORKERS ?= 2
RELEASES_AT_ONCE ?= 1
PYTEST_FLAGS := -q -p no:cacheprovider --dist loadgroup --durations=25
AT_ONCE := $(if $(filter 1,$(RELEASES_AT_ONCE)),-j2 --output-sync=target)

# tests/agents/test_releases.py pauses a response under the oldest release and answers it under
# the newest (and back): the oldest venv is made first.
pytest: $(TEST_STAMP) $(OLDEST_STAMP)
	DURABLE_RESPONSES_OLDEST_PYTHON=$(abspath $(OLDEST_BIN))/python \
	  $(BIN)/pytest $(PYTEST_FLAGS) -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The suite on the oldest supported release (README: supported agent-framework releases) but
# for the tests marked `once` (tests/conftest.py ONCE, with each one's reason): they run no
# agent-framework code a release can change (the store, the wire protocol, PostgreSQL's poolers
# and faults, webhooks, retention, packaging, `serve --workers`, pytest-xdist's grouping) or
# cover both releases by themselves (the container tests, test_releases). A clean-clone .ci/run took 13:56 with them in both passes, the oldest
# pass 12:13 of it (~25% of its test time theirs), on two cores that both passes keep busy.
OLDEST_SELECT ?= -m 'not once'
pytest-oldest: $(OLDEST_STAMP)
	$(OLDEST_BIN)/pytest $(PYTEST_FLAGS) -n $(OLDEST_WORKERS) $(OLDEST_SELECT) $(PYTEST_ARGS)

# The two venvs install at once (their time is spent waiting on the package index).
test:
	$(MAKE) $(AT_ONCE) $(TEST_STAMP) $(OLDEST_STAMP)
	$(MAKE) lint
	$(MAKE) $(AT_ONCE) typecheck typecheck-oldest
	$(MAKE) $(AT_ONCE) pytest pytest-oldest

bench: $(TEST_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) $(OLDEST_VENV) data
