#!/usr/bin/env bash
# Run a bench command as on an AVX2-only x86 CPU (no AVX-512, no native bf16), to estimate that machine's
# speed on one that has more:
#   bench/emulate_avx2.sh .venv/bin/python bench/serve_throughput.py --dtype float32 --max-tokens 64
#   bench/emulate_avx2.sh .venv/bin/python bench/train_speed.py DATASET --steps 12 train.dtype=float32
# torch's kernels (ATEN_CPU_CAPABILITY) and oneDNN (ONEDNN_MAX_CPU_ISA) are capped at AVX2, and vLLM loads
# its AVX2 kernel library (avx2_emulation/sitecustomize.py). Name the dtype yourself: actune's auto choice
# reads the real CPU's flags. Caps instruction sets only: clock, cache and memory stay the host's (a real
# AVX2-only EPYC served 1.4-1.6x slower than this emulation on an AVX-512 EPYC: README, Performance).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export ACTUNE_EMULATE_AVX2=1 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
export PYTHONPATH="$here/avx2_emulation${PYTHONPATH:+:$PYTHONPATH}"
exec "$@"
