#!/usr/bin/env bash
# The one-command quickstart: the whole prompted -> fine-tuned pipeline on the embedded model
# (SmolLM2-135M, 2 CPU cores, about an hour). Each stage starts and stops its own vLLM server.
# Usage: scripts/quickstart.sh [CONFIG]   (default configs/quickstart-cpu.yaml; rerunning resumes)
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${1:-configs/quickstart-cpu.yaml}"
ACTUNE=".venv/bin/python -m actune"
OUT=runs/quickstart
mkdir -p "$OUT"

stage() { echo; echo "=== $1 ($(date -u +%H:%M:%S) UTC)"; }
SECONDS=0

stage "world generate"
[ -f "$OUT/world/test.jsonl" ] || $ACTUNE world generate --seed 0 --out "$OUT/world"

# One bootstrap run per question kind, each with exemplars of that kind only (a 135M model keeps
# 3-7x more trajectories with type-matched exemplars than with mixed ones; probe notes). They share the
# store, so each run's target is the running total. Comparisons are rarely grounded (about 5% per
# sample): they go last, on their first 40 tasks only, and usually stop when those run out.
TARGET=$(.venv/bin/python -c "import sys; from actune.config import load_config; from actune.run_config import RunConfig; print(load_config(RunConfig, sys.argv[1]).bootstrap.target_correct)" "$CONFIG")
for kind_share_limit in single:44:null bridge:88:null comparison:100:40; do
  IFS=: read -r kind share limit <<< "$kind_share_limit"
  stage "bootstrap ($kind)"
  $ACTUNE bootstrap --no-progress "$CONFIG" "bootstrap.tasks.where.kind=$kind" "bootstrap.tasks.limit=$limit" \
      "bootstrap.agent.exemplar_kinds=[$kind]" "bootstrap.target_correct=$(( TARGET * share / 100 ))"
done

stage "export"
$ACTUNE export "$CONFIG"

stage "train"
$ACTUNE train "$CONFIG"

stage "eval"
$ACTUNE eval "$CONFIG"

stage "done in $(( SECONDS / 60 )) min"
echo "report: $(.venv/bin/python -c "import sys; from actune.config import load_config; from actune.run_config import RunConfig; print(load_config(RunConfig, sys.argv[1]).eval.out_dir)" "$CONFIG")/report.md"
