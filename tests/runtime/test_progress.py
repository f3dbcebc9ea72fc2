"""Progress figures: keep rate, episodes/min and the ETA (the sooner of all-done and target-reached)."""

from __future__ import annotations

import io

import actune.runtime.progress as progress_module
from actune.runtime.progress import Progress


def test_rates_and_eta(monkeypatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    out = io.StringIO()  # not a terminal: plain lines
    with Progress(total=12, done=2, kept=1, target=5, stream=out, log_every_s=60) as p:
        for kept in (True, False, True):
            now[0] += 20
            p.episode(kept)
        r = p.rates()
        # 3 episodes in 60 s, 2 kept; 7 episodes left but the target needs (5-3)/(2/3) = 3 more
        assert (r.per_min, round(r.keep_rate, 4), r.eta_s) == (3.0, 0.6667, 60.0)
    assert out.getvalue().splitlines() == [
        "bootstrap: 5/12 episodes · kept 3/5 · keep rate 67% · 3.0 episodes/min · ETA 1m00s",  # at 60 s
        "bootstrap: 5/12 episodes · kept 3/5 · keep rate 67% · 3.0 episodes/min · ETA 1m00s",  # at the end
    ]


def test_disabled_progress_prints_nothing() -> None:
    out = io.StringIO()
    with Progress(4, 0, 0, 2, stream=out, enabled=False) as p:
        p.episode(True)
    assert out.getvalue() == "" and (p.done, p.kept) == (1, 1)
