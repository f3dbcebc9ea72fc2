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

demo: model
	bash scripts/demo.sh

test: model
	$(PY) -m pytest -q

bench: model
	$(PY) bench/serve_throughput.py
	$(PY) bench/env_latency.py
