from __future__ import annotations

from types import SimpleNamespace

from actune.envs.observation import clip_observation, page_result


def test_clip_observation_cuts_only_past_the_limit_and_says_so() -> None:
    assert clip_observation("short", 60) == "short" and clip_observation("x" * 100, None) == "x" * 100
    cut = clip_observation("word " * 30, 40)
    assert len(cut) <= 40 and cut.endswith(" [...observation cut]")


def test_page_result_clips_to_the_envs_limit_and_defaults_titles() -> None:
    env = SimpleNamespace(max_observation_chars=30)
    r = page_result(env, "y" * 50, retrieval_score=0.5)
    assert len(r.observation) <= 30 and not r.done and r.info == {"retrieval_score": 0.5, "titles": []}
    r = page_result(env, "Episode finished.", done=True, titles=["Paris"], answer="Paris")
    assert (r.observation, r.done, r.info) == ("Episode finished.", True, {"titles": ["Paris"], "answer": "Paris"})
