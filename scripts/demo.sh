#!/usr/bin/env bash
# The main job on the embedded default: the whole prompted -> fine-tuned pipeline at smoke scale
# (every stage runs for real on SmolLM2-135M, about 10-20 minutes on 2 cores), then the command for
# the measured experiment. Rerunning continues where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m actune quickstart --preset smoke --out runs/demo
echo
echo "The measured experiment (a few hours on 2 CPU cores; minutes on a GPU):"
echo "  .venv/bin/actune quickstart --preset full --seed 0"
