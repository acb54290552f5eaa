# The README's commands. Every target builds the virtual environment first if needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNTIME := $(VENV)/.installed-runtime
STAMP  := $(VENV)/.installed

.PHONY: demo test sweep lint typecheck chromium bench bench-scale bench-store bench-plain bench-baseline bench-compare bench-fetch bench-report fixtures schemas clean

# The package and what it needs to run (enough for the demo) ...
$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME)

# ... and the development tools on top (tests, linters, type checker).
$(STAMP): $(RUNTIME)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(RUNTIME)          ## the embedded default, end to end -> reports/demo
	$(BIN)/grade-kit demo --out reports/demo

# Three processes, a test file each at a time (its module fixtures made once): many tests
# wait on a browser, a kernel or a server, so three share two cores well (docs/scaling.md).
test: $(STAMP) lint typecheck chromium   ## the test suite, plus ruff and mypy
	$(BIN)/python -m pytest -n 3 --dist loadfile

sweep: $(STAMP)           ## the full shape sweep: generated evaluations of 1-5,000 questions, 1-50 setups, R 1-10, every effect, through evaluate, write and diff (docs/scaling.md)
	GRADE_KIT_SWEEP=full $(BIN)/python -m pytest -n 2 -q tests/pipeline/test_shapes.py -k every_shape

chromium:                 ## Debian's Chromium for the browser tests (skipped when it cannot be had)
	@command -v chromium >/dev/null 2>&1 || (apt-get install -y -qq chromium >/dev/null 2>&1 \
	  || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) \
	  || echo "warning: chromium could not be installed; the browser tests will be skipped"

lint: $(STAMP)
	$(BIN)/ruff check grade_kit tests benchmarks docs/examples

typecheck: $(STAMP)
	$(BIN)/mypy grade_kit

bench: $(STAMP)           ## speed figures (not assertions)
	$(BIN)/python -m benchmarks.bench

bench-scale: $(STAMP)     ## rich inputs at 100k/300k/1M runs and per-task vocabularies at 100k, stage by stage; per-task at 1M (40,000 tasks, 5 setups) as called, each process's peak; 10M-run statistics; the held-out-like shape (4,000 task files x 5 setups x R 5) scored and reported
	$(BIN)/python -m benchmarks.scale
	$(BIN)/python -m benchmarks.scale --sizes 100000 --stats 0 --per-task-vocabulary
	$(BIN)/python -m benchmarks.scale --sizes 1000000 --stats 0 --per-task-vocabulary --setups 5 --as-called-only
	$(BIN)/python -m benchmarks.scale --held-out-only

bench-store: $(STAMP)     ## pack and evaluate a store vs in memory: time, peak RSS, same results
	$(BIN)/python -m benchmarks.store_bench

bench-plain: $(STAMP)     ## a plain row-at-a-time GRADE (methodology §3) vs gk.evaluate at 100k, both shapes: median of 3 fresh-process timings each, differing figures
	$(BIN)/python -m benchmarks.plain

bench-baseline: $(STAMP)  ## grade-kit score of this checkout vs 07dee30 (a git worktree) at 100k, both shapes, alternating, fresh processes: medians, peak RSS, ratio
	$(BIN)/python -m benchmarks.baseline

bench-compare: $(STAMP)   ## the two newest benchmarks/results/*.json side by side
	$(BIN)/python -m benchmarks.compare

bench-report: $(STAMP)    ## grade-kit report vs grade-kit score at 100k runs, alternating, fresh processes: medians and ratio
	$(BIN)/python -m benchmarks.report_bench --repeats 5

bench-fetch: $(STAMP)     ## fetch throughput against the demo server, and 20 SIGKILL resumes
	$(BIN)/python -m benchmarks.fetch_bench

fixtures: $(STAMP)        ## regenerate fixtures/packs, fixtures/tasks and fixtures/runs (seed 42)
	$(BIN)/grade-kit demo fixtures --out fixtures/packs --tasks fixtures/tasks --runs fixtures/runs

schemas: $(STAMP)         ## regenerate grade_kit/schemas/*.json from the models
	$(BIN)/python -c "from grade_kit.schema import write_json_schemas; write_json_schemas()"

clean:
	rm -rf $(VENV) reports/demo .pytest_cache .mypy_cache .ruff_cache
