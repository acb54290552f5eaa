# The README's commands. Every target builds the virtual environment first if needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck bench bench-fetch fixtures schemas clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)            ## the embedded default, end to end -> reports/demo
	$(BIN)/grade-kit demo --out reports/demo

test: $(STAMP) lint typecheck   ## the test suite, plus ruff and mypy
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check grade_kit tests

typecheck: $(STAMP)
	$(BIN)/mypy grade_kit

bench: $(STAMP)           ## speed figures (not assertions)
	$(BIN)/python -m benchmarks.bench

bench-fetch: $(STAMP)     ## fetch throughput against the demo server, and 20 SIGKILL resumes
	$(BIN)/python -m benchmarks.fetch_bench

fixtures: $(STAMP)        ## regenerate fixtures/packs, fixtures/tasks and fixtures/runs (seed 42)
	$(BIN)/grade-kit fixtures --out fixtures/packs --tasks fixtures/tasks --runs fixtures/runs

schemas: $(STAMP)         ## regenerate grade_kit/schemas/*.json from the models
	$(BIN)/python -c "from grade_kit.schema import write_json_schemas; write_json_schemas()"

clean:
	rm -rf $(VENV) reports/demo .pytest_cache .mypy_cache .ruff_cache
