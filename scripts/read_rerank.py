"""Can the tuned model's own scores pick what its last thought should quote and answer? A dev-only lab for issue #48.

For each bridge episode of an eval folder that ends with an answer, the prompt the model saw before its last thought
is rebuilt (``render_text``, exactly as the loop renders it) and the merged model scores, with transformers (a
control decodes the last thought and its action again there, greedily, against the answer the eval's server gave):

1. **Which sentence to quote.** Every sentence the episode's observations showed, as the thought's opening words,
   by its log-probability (``sum``), per token (``mean``), against the same prompt with the question removed
   (``pmi``, Holtzman et al. 2021), and, for comparison without the model, by the question's content words it
   shares (``lex``). The model then writes its answer greedily after "<sentence> So the answer is".
2. **Which words of the right sentence answer.** Given the sentence that holds the gold answer (an oracle), every
   span of up to six words is scored as "So the answer is <span>." the same three ways, against greedy decoding.

    .venv/bin/python scripts/read_rerank.py r1=runs/X/eval/react/tuned-r1:runs/X/react/round1/adapter/merged \\
        --plot docs/read-rerank.png

Lab code, kept to reproduce docs/results/35; it reads dev episodes only. Nothing here is in the agent loop.
"""

from __future__ import annotations

import argparse
import copy
import re
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from actune.agent.render import PromptContext, render_text, trajectory_prompt_context
from actune.envs.wiki_env import LOOKUP_PREFIX
from actune.records.trajectory import Trajectory, read_trajectories
from actune.runtime.progress import Progress
from actune.runtime.stop_signals import run_script
from actune.tasks.metrics import exact_match, normalize_answer
from actune.text import split_sentences, word_tokens

_STOP = set("the a an of in on at to for is was were what which who whom whose when where how by with and or from "
            "as that this be are did does do".split())
_SCORES = ("sum", "mean", "pmi")
_FINISH = re.compile(r"finish\[([^\]]*)\]")


class Scorer:
    """Log-probabilities of continuations after one prompt, the prompt's cache computed once."""

    def __init__(self, model, tok, prompt: str):
        self.model, self.tok, self.prompt = model, tok, prompt
        with torch.no_grad():
            out = model(tok(prompt, return_tensors="pt").input_ids, use_cache=True)
        self.cache, self.last = out.past_key_values, torch.log_softmax(out.logits[0, -1], -1)

    @torch.no_grad()
    def logp(self, text: str) -> tuple[float, int]:
        ids = self.tok(text, add_special_tokens=False, return_tensors="pt").input_ids
        lp = self.last[ids[0, 0]].item()
        if ids.shape[1] > 1:  # the cache grows in place, so each continuation gets its own copy
            out = self.model(ids[:, :-1], past_key_values=copy.deepcopy(self.cache), use_cache=True)
            lp += torch.log_softmax(out.logits[0], -1).gather(1, ids[0, 1:, None]).sum().item()
        return lp, ids.shape[1]

    @torch.no_grad()
    def _generate(self, suffix: str, max_new_tokens: int) -> str:
        ids = self.tok(self.prompt + suffix, return_tensors="pt").input_ids
        out = self.model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False,
                                  pad_token_id=self.tok.eos_token_id)
        return self.tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)

    def greedy(self, suffix: str, max_new_tokens: int = 24) -> str:
        """The greedy continuation's first line, without its closing full stop."""
        return self._generate(suffix, max_new_tokens).split("\n")[0].strip().rstrip(".")

    def own_answer(self) -> str:
        """The last thought and its action decoded again here, greedily: the finish action's argument ("" without
        one). A control: the eval's answer came from its model server, the other rows come from transformers."""
        m = _FINISH.search(self._generate("", 160).split("\nObservation")[0])
        return m.group(1).strip() if m else ""


def _right(pred: str, traj: Trajectory) -> bool:
    return any(exact_match(pred, g) for g in [traj.task.answer, *traj.task.aliases])


def _content_words(text: str) -> set[str]:
    return {w for w in word_tokens(text) if w not in _STOP}


def _shown_sentences(traj: Trajectory, k: int) -> list[str]:
    out: list[str] = []
    for s in traj.steps[:k]:
        if s.type == "observation" and not s.text.startswith(("Could not find", "Invalid")):
            out += [x for x in split_sentences(LOOKUP_PREFIX.sub("", s.text))
                    if x not in out and len(x.split()) >= 3]
    return out


def _ranked(scored: list[tuple[str, float, int, float]]) -> dict[str, str]:
    """The best item by each score: ``scored`` holds (item, log-prob, tokens, log-prob without the question)."""
    return {"sum": max(scored, key=lambda t: t[1])[0], "mean": max(scored, key=lambda t: t[1] / t[2])[0],
            "pmi": max(scored, key=lambda t: t[1] - t[3])[0]}


def _score_all(with_q: Scorer, without_q: Scorer, items: list[str], form: str) -> list[tuple]:
    return [(x, *with_q.logp(form.format(x)), without_q.logp(form.format(x))[0]) for x in items]


def _episode(model, tok, traj: Trajectory) -> dict | None:
    steps = traj.steps
    k = max((j for j, s in enumerate(steps) if s.type == "thought"), default=None)
    if k is None or steps[-1].type != "answer":
        return None
    ctx = trajectory_prompt_context(traj)
    blank = PromptContext(**{**ctx.__dict__, "question": "Question: "})
    label = f"Thought {steps[k].iteration}:"
    row: dict = {"id": traj.task.id, "model": _right(traj.prediction or "", traj)}
    q, q0 = (Scorer(model, tok, render_text(c, steps[:k], label)) for c in (ctx, blank))
    again = q.own_answer()
    row["control"] = _right(again, traj)
    row["control_same"] = normalize_answer(again) == normalize_answer(traj.prediction or "")
    sentences = _shown_sentences(traj, k)
    gold = normalize_answer(traj.task.answer)
    holds = [bool(gold) and re.search(rf"\b{re.escape(gold)}\b", normalize_answer(x)) is not None for x in sentences]
    if not sentences:
        return row
    picks = _ranked(_score_all(q, q0, sentences, " {}"))
    words = _content_words(traj.task.question)
    picks["lex"] = max(sentences, key=lambda x: len(_content_words(x) & words))
    for key, sentence in picks.items():
        row[f"sentence_{key}"] = holds[sentences.index(sentence)]
        row[f"answer_{key}"] = _right(q.greedy(f" {sentence} So the answer is"), traj)
    if any(holds):
        oracle = sentences[holds.index(True)]
        row["shown"] = True
        a, a0 = (Scorer(model, tok, s.prompt + f" {oracle} So the answer is") for s in (q, q0))
        row["span_greedy"] = _right(a.greedy(""), traj)
        w = oracle.rstrip(".").split()
        spans = sorted({" ".join(w[i:j]).strip('",;:()') for i in range(len(w))
                        for j in range(i + 1, min(len(w), i + 6) + 1)} - {""})
        for key, span in _ranked(_score_all(a, a0, spans, " {}.\n")).items():
            row[f"span_{key}"] = _right(span, traj)
    return row


def counts(label: str, eval_dir: str, model_dir: str) -> dict[str, int]:
    """One model's counts: bridges answered, with the answer in a shown sentence, and right by each picking rule."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    episodes = read_trajectories(Path(eval_dir) / "trajectories.jsonl")
    bridges = [t for t in episodes if t.task.meta.get("kind") == "bridge"]
    rows = []
    with Progress(len(bridges), 0, 0, len(bridges), label=label, kept_word="answer shown",
                  rate_word="shown rate") as progress:
        for traj in bridges:
            if row := _episode(model, tok, traj):
                rows.append(row)
            progress.episode(bool(row and row.get("shown")))
    shown = [r for r in rows if r.get("shown")]
    c = {"answered": len(rows), "shown": len(shown), "as answered": sum(r["model"] for r in rows),
         "control, decoded again here: right": sum(r["control"] for r in rows),
         "control, decoded again here: the eval's answer": sum(r["control_same"] for r in rows)}
    for key in (*_SCORES, "lex"):
        c[f"quote by {key}: holds the answer"] = sum(r.get(f"sentence_{key}", 0) for r in rows)
        c[f"quote by {key}: right"] = sum(r.get(f"answer_{key}", 0) for r in rows)
    for key in ("greedy", *_SCORES):
        c[f"oracle sentence, span by {key}: right"] = sum(r[f"span_{key}"] for r in shown)
    return c


def plot(results: dict[str, dict[str, int]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = ["as answered", "control, decoded again here: right", *(f"quote by {k}: right" for k in (*_SCORES, "lex")),
            *(f"oracle sentence, span by {k}: right" for k in ("greedy", *_SCORES))]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(results)
    for i, (label, c) in enumerate(results.items()):
        ax.bar([x + i * width for x in range(len(bars))], [c[b] for b in bars], width, label=label)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(bars))],
                  [b.replace(": right", "").replace("oracle sentence, ", "oracle, ").replace(", decoded again here", "")
                   for b in bars],
                  rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("dev bridges answered right")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pairs", nargs="+", help="LABEL=EVAL_DIR:MERGED_MODEL_DIR, one a model")
    ap.add_argument("--plot", type=Path, help="a bar chart of the counts, one group a picking rule")
    a = ap.parse_args()
    torch.set_num_threads(2)
    results = {}
    for pair in a.pairs:
        label, dirs = pair.split("=", 1)
        results[label] = counts(label, *dirs.split(":", 1))
        print(f"{label} ({dirs}):")
        for key, n in results[label].items():
            print(f"  {key}: {n}", flush=True)
    if a.plot:
        plot(results, a.plot)


if __name__ == "__main__":
    run_script(main)
