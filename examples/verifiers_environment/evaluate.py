"""actune's wiki environment as a verifiers 0.4 environment, evaluated against your OpenAI-compatible server.

    pip install 'actune[cpu,verifiers]'
    python examples/verifiers_environment/evaluate.py http://127.0.0.1:8000/v1 smollm2-135m [N]

verifiers' own loader builds the environment from the taskset id ``actune_verifiers`` (registered when
``actune.bridges.verifiers`` is imported); the tasks and the environment are actune's config sections. Each episode is
verifiers' (its interception server carries the model calls, its traces hold the turns); the reward ``correct`` is
actune's metric on the finish answer. A key for the server, if it needs one, goes in $ACTUNE_API_KEY.
"""

import asyncio
import sys
from pathlib import Path

import verifiers.v1 as vf

from actune.bridges.verifiers import TASKSET_ID, episode_rows, evaluate

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "hotpotqa_small"  # a checkout's small HotpotQA set


def main(base_url: str, model: str, n: int = 4) -> float:
    config = vf.resolve_env_config({"taskset": {
        "id": TASKSET_ID,
        "tasks": {"format": "hotpotqa", "path": f"{DATA}/dev_with_context.jsonl", "limit": n},
        "env": {"name": "wiki", "corpus": f"{DATA}/wiki_paragraphs.jsonl"},
    }})
    env = vf.load_environment(config)
    rows = episode_rows(asyncio.run(evaluate(env, base_url, model)))
    for row in rows:
        if not row["ok"]:  # the episode failed (the server, a timeout): verifiers says why
            print(f"{row['id']}: failed: {row['errors']}")
            continue
        print(f"{row['id']}: correct {row['correct']:.0f} in {row['steps']:.0f} steps, last reply "
              f"{(row['replies'] or [''])[-1][:70]!r}")
    mean = sum(r["correct"] or 0.0 for r in rows) / max(1, len(rows))
    print(f"verifiers episodes of actune's wiki environment: {len(rows)}, mean reward {mean:.3f}")
    return mean


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 4)
