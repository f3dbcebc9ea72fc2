#!/usr/bin/env bash
# The main job on the embedded default: the whole prompted -> fine-tuned pipeline at smoke scale
# (every stage runs for real on SmolLM2-135M: 7.5-10 minutes on 2 cores with native bf16, 13-18 on
# AVX2 only), then the command for the measured experiment. Rerunning continues where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m actune quickstart --preset smoke --out runs/demo
echo
echo "The measured experiment (about 2 hours on 2 cores with native bf16, 3-3.5 on AVX2 only):"
echo "  .venv/bin/actune quickstart --preset full --seed 23"
