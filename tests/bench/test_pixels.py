"""bench/pixels.py: a written result is drawn again once its logdir is gone, with its training
episodes, its companions' curves and its references."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from tests.commands import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
try:
    import pixels
finally:
    sys.path.pop(0)


def _result(run: str, agent: str, rounds: list, episodes: list) -> dict:
    return {"run": run, "agent": agent, "env": "atari:Pong", "seed": 0,
            "eval_rounds": rounds, "train_episodes": episodes}


def test_a_result_whose_logdir_is_gone_is_redrawn_with_its_episodes_and_companions(
        tmp_path, monkeypatch):
    out = tmp_path / "results"
    out.mkdir()
    rounds = [[0, 10.0, -21.0, 0.0], [100_000, 250.0, -15.5, 2.0]]
    episodes = [[900, 5.0, -21.0], [1_800, 9.0, -20.0], [90_000, 240.0, -14.0]]
    mine = _result("r2d2-atari-pong", "r2d2", rounds, episodes)
    (out / "r2d2-atari-pong-s0.json").write_text(json.dumps(mine))
    companion = _result("dqn-atari-pong-bf16", "dqn", [[0, 5.0, -21.0, 0.0]], [])
    (out / "dqn-atari-pong-bf16-s0.json").write_text(json.dumps(companion))
    drawn = []
    monkeypatch.setattr(pixels.plot, "draw",
                        lambda curves, path, references=(): drawn.append((curves, references)))

    result = pixels.report("r2d2-atari-pong", 0, str(tmp_path / "no-logs"), str(out))

    assert result == mine  # The written result is left as it was.
    (curves, references), = drawn
    assert [c.label for c in curves] == ["r2d2 on atari:Pong (sticky 0.25)",
                                         "dqn on atari:Pong (sticky 0.25)"]
    np.testing.assert_array_equal(curves[0].eval_mean, [-21.0, -15.5])
    np.testing.assert_array_equal(curves[0].train_steps, [900, 1_800, 90_000])
    np.testing.assert_array_equal(curves[0].train_return, [-21.0, -20.0, -14.0])
    assert curves[1].train_steps.size == 0  # A result written before episodes were kept.
    assert [r.label for r in references] == [
        "Dopamine DQN (sticky 0.25, mean of 5 seeds)",
        "Dopamine Rainbow (sticky 0.25, mean of 5 seeds)"]
