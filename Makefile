# taskq: the two commands a new user needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
DEMO_STAMP := $(VENV)/.installed

.PHONY: demo test lint docs schema screenshots bench bench-quick bench-fleet clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The editable install leaves src/ uncompiled, and where PYTHONDONTWRITEBYTECODE is set
# (as on this project's CI machine) every process would compile taskq again at start:
# ~100 ms of CPU for each worker a test or the demo starts. compileall writes the .pyc
# files once (a stale one is simply recompiled in memory).
$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	$(PY) -m compileall -q src
	touch $@

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m compileall -q src
	touch $@ $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	cd $(CURDIR) && $(VENV)/bin/taskq demo

# Finds or starts a Postgres (scripts/ensure_postgres.py), then runs the whole suite
# against both stores.
test: $(STAMP)
	@dsn=$$($(PY) scripts/ensure_postgres.py) || exit 1; \
	echo "taskq tests: Postgres at $$dsn"; \
	if ! command -v chromium >/dev/null 2>&1 && [ -z "$$TASKQ_CHROMIUM" ]; then \
	  echo "taskq tests: no Chromium, the browser tests (tests/browser) will skip;" \
	       "install it with: apt-get install -y chromium"; fi; \
	TASKQ_TEST_PG_DSN="$$dsn" $(PY) -m pytest $(PYTEST_ARGS)

# Regenerates the dashboard screenshots in docs/img/ with the browser tests (needs
# Chromium: apt-get install -y chromium).
screenshots: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || [ -n "$$TASKQ_CHROMIUM" ] || \
	  { echo "make screenshots needs Chromium: apt-get install -y chromium" >&2; exit 1; }
	@dsn=$$($(PY) scripts/ensure_postgres.py) || exit 1; \
	TASKQ_TEST_PG_DSN="$$dsn" TASKQ_SCREENSHOTS=$(CURDIR)/docs/img \
	  $(PY) -m pytest tests/browser -q -k "sqlite and (every_page or workflow_graph)"

# Regenerates the generated sections of docs/ (the event list, ...) from the code that
# declares them (scripts/gen_docs.py); tests/unit/test_docs_generated.py fails until they match.
docs: $(STAMP)
	$(PY) scripts/gen_docs.py

# Regenerates src/taskq/store/schema/*.sql (what migrating from zero builds) after a
# migration changed; tests/integration/test_migrate.py fails until they match.
schema: $(STAMP)
	@dsn=$$($(PY) scripts/ensure_postgres.py) || exit 1; \
	$(PY) -m tests.support.schema_dump --pg-dsn "$$dsn"

LINT_PATHS := src tests benchmarks examples scripts

# ruff (lint + format), mypy --strict on src/ and the typed-enqueue test
# (tests/typecheck/, also checked by pyright); .ci/run runs this before the tests.
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy
	$(VENV)/bin/pyright --project . --pythonpath $(PY)

bench: $(STAMP)
	@dsn=$$($(PY) scripts/ensure_postgres.py) || exit 1; \
	TASKQ_BENCH_PG_DSN="$$dsn" $(PY) -m benchmarks.run $(BENCH_ARGS)
	$(PY) -m benchmarks.fleet $(FLEET_ARGS)

# 100 workers in 4 workgroups on a Postgres cluster of its own, through PgBouncer in
# transaction mode and then direct (issue 19; needs pgbouncer: apt-get install -y pgbouncer)
bench-fleet: $(STAMP)
	$(PY) -m benchmarks.fleet $(FLEET_ARGS)

bench-quick: $(STAMP)
	@dsn=$$($(PY) scripts/ensure_postgres.py) || exit 1; \
	TASKQ_BENCH_PG_DSN="$$dsn" $(PY) -m benchmarks.run --quick $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist src/*.egg-info
