#!/usr/bin/env bash
# The main job on the embedded default, until the one-command quickstart lands:
# generate the synthetic world, serve SmolLM2-135M with vLLM on the CPU, and run one ReAct episode
# live on a test question.
set -euo pipefail
cd "$(dirname "$0")/.."
ACTUNE=".venv/bin/python -m actune"
OUT=runs/demo
mkdir -p "$OUT"
$ACTUNE world generate --seed 0 --out "$OUT/world"
# The first single-hop test question, with single-hop exemplars: type-matched prompts are what a
# 135M model needs (probe notes: 43% per sample vs 6% with mixed exemplars).
{ read -r QUESTION; read -r ANSWER; } < <(.venv/bin/python - "$OUT/world/test.jsonl" <<'PY'
import json, sys
tasks = [json.loads(line) for line in open(sys.argv[1])]
task = next(t for t in tasks if t["meta"]["kind"] == "single")
print(task["question"])
print(task["answer"])
PY
)
echo "Question: $QUESTION   (gold answer: $ANSWER)"
$ACTUNE run --env wiki --corpus "$OUT/world/corpus.jsonl" --method react --model smollm2-135m \
    --set exemplar_set=world --set "exemplar_kinds=[single]" --question "$QUESTION" --answer "$ANSWER"
