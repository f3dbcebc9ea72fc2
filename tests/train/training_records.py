"""Hand-made kept records for the train tests: a zero-shot ReAct episode per question, as the loop
writes them (``info["prompt"]`` holds the prompt head; verdict kept)."""

from __future__ import annotations

from actune.judge import judge, record_verdict
from actune.trajectory import Step, TaskRecord, Trajectory

INSTRUCTION = ("Solve a question answering task with interleaving Thought, Action, Observation steps. "
               "Thought can reason about the current situation, and Action can be one of:\n"
               "(1) search[entity]\n(2) finish[answer]")

# (question, entity, observation, answer): observations with awkward edges (trailing spaces,
# leading space, unicode, digits, brackets) to exercise the token seams
FACTS = [
    ("Who makes the Walkman?", "Walkman", "Walkman is a brand of portable audio players made by Sony.  ", "Sony"),
    ("How long is the Danube?", "Danube", " The Danube is about 2,850 km long (1,770 mi).", "2,850 km"),
    ("Where was Zoë Ménard born?", "Zoë Ménard", "Zoë Ménard (born 1971 in Liège) is a Belgian poet.", "Liège"),
    ("What does [SEP] mark?", "SEP token", "[SEP] marks a sentence boundary ... ", "a sentence boundary"),
]


def record(i: int) -> Trajectory:
    q, entity, obs, answer = FACTS[i]
    steps = [
        Step("thought", f"I need to search {entity}.", 1),
        Step("action", f"search[{entity}]", 1, action_name="search", action_arg=entity),
        Step("observation", obs, 1),
        Step("thought", f"So the answer is {answer}.", 2),
        Step("answer", f"finish[{answer}]", 2, action_name="finish", action_arg=answer),
    ]
    t = Trajectory(task=TaskRecord(f"q{i}", q, answer), method="react", steps=steps, prediction=answer,
                   correct=True, run_id="r", episode_id=f"e{i}",
                   info={"prompt": {"method": "react", "env": "wiki", "instruction": INSTRUCTION,
                                    "question": f"Question: {q}", "finish_action": "finish"}})
    return record_verdict(t, judge(t))


def records() -> list[Trajectory]:
    return [record(i) for i in range(len(FACTS))]
