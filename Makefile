# Two commands do all the set-up on a fresh machine:
#   make demo   - create .venv, fetch the embedded model, run the main job on it (CPU)
#   make test   - create .venv, fetch the embedded model, run the test suite
PY := .venv/bin/python
ACTUNE := $(PY) -m actune

.PHONY: install model demo test bench

install:
	bash scripts/install.sh

model: install
	$(ACTUNE) model prepare smollm2-135m

# The demo never plays ALFWorld: its set-up leaves out compiling ALFWorld's planner (3-5 minutes on 2 cores
# with a cold pip cache); make test adds it later.
demo: export ACTUNE_NO_ALFWORLD ?= 1
demo: model
	bash scripts/demo.sh

# --durations: the slowest tests in every run CI prints (the suite takes about twice as long on an AVX2-only CPU).
# ACTUNE_LONG_TESTS=1 make test adds the real runs marked `long` (a few minutes; tests/conftest.py says why).
test: model
	$(PY) -m pytest -q --durations=25

# The pipeline measured beside its engine, one table (about 16 minutes on 2 cores); the other bench/
# scripts measure one piece each.
bench: model
	$(PY) bench/pipeline.py
