# The README's commands. Each target installs what it needs into .venv first (pinned versions).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.install-stamp
DAGSTER_HOME ?= $(CURDIR)/.dagster_home
# the bundled demo: its logs, an absolute warehouse path, and partitions from the demo's first day
DEMO_ENV := CACHEMETER_LOGS=$(CURDIR)/fixtures/demo_logs CACHEMETER_DB=$(CURDIR)/warehouse/cachemeter.duckdb \
	CACHEMETER_PARTITIONS_START=2026-11-18 DAGSTER_HOME=$(DAGSTER_HOME)

.PHONY: install demo test formats dagster-dev clean

$(STAMP): pyproject.toml hatch_build.py pipelines/ingest/_divergence.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## Run the main job on the bundled demo logs (embedded DuckDB file warehouse/cachemeter.duckdb).
demo: $(STAMP)
	mkdir -p $(DAGSTER_HOME) && cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml
	$(DEMO_ENV) $(BIN)/cachemeter run

## Run the test suite, one pytest-xdist worker per core (a test module stays on one worker, so its
## module-scoped warehouses are built once).
test: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadfile

## Regenerate the usage readers' SQL and docs/formats.md's table from pipelines/ingest/formats.yaml.
formats: $(STAMP)
	$(BIN)/python -m pipelines.ingest.format_sql

## Dagster UI and daemon (schedule and sensors on) on the demo, with the repository's dagster.yaml: http://127.0.0.1:3000
dagster-dev: $(STAMP)
	mkdir -p $(DAGSTER_HOME) && cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml
	$(DEMO_ENV) exec $(BIN)/dagster dev -w workspace.yaml

clean:
	rm -rf warehouse .dagster_home .pytest_cache
