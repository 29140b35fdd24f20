"""`python -m launch_programs.evaluate RUN_DIR`: a trained run's policy played again from its
checkpoint, as a user runs it; a run directory it cannot use refused in one line, unchanged."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from tests.commands import run_module


def _digests(directory) -> dict[str, str]:
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, directory)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """DQN's CartPole preset to 20k steps: past random play (about 20), often at the cap (500)."""
    logdir = tmp_path_factory.mktemp("evaluate") / "dqn"
    done = run_module("launch_programs.run", "--agent=dqn", "--env=gym:CartPole-v1",
                      "--max_actor_steps=20000", f"--logdir={logdir}", "--seed=0",
                      "--print_every_s=0", timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return logdir


def test_the_trained_policy_plays_as_it_learned_and_its_figures_are_written(trained, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    before = _digests(run_dir)
    done = run_module("launch_programs.evaluate", str(run_dir), "--episodes=4", "--seed=3",
                      timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.load(open(run_dir / "evaluation.json"))
    summary = json.load(open(run_dir / "summary.json"))
    assert result["learner_steps"] == summary["learner_steps"]  # The run's last weights.
    assert len(result["returns"]) == result["episodes"] == 4
    assert result["return_mean"] == pytest.approx(np.mean(result["returns"]))
    # An untrained network plays about 10-30; this run plays 180-500 (its training is not
    # deterministic under threads: its last rounds vary).
    assert result["return_mean"] >= 100
    assert f"mean {result['return_mean']:.2f}" in done.stdout
    after = _digests(run_dir)  # Only its own file is added.
    assert set(after) - set(before) == {"evaluation.json"}
    assert all(after[k] == v for k, v in before.items())
    again = run_module("launch_programs.evaluate", str(run_dir), "--episodes=4", "--seed=3",
                       timeout=180)
    assert json.load(open(run_dir / "evaluation.json"))["returns"] == result["returns"]
    assert again.returncode == 0


def test_a_checkpoint_file_named_is_the_one_played(trained, tmp_path):
    """A copy of the checkpoint kept elsewhere is played; the run's own, if damaged, is not
    read."""
    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    kept = tmp_path / "kept.npz"
    shutil.copy(run_dir / "checkpoints" / "learner.npz", kept)
    (run_dir / "checkpoints" / "learner.npz").write_bytes(b"not a checkpoint")
    done = run_module("launch_programs.evaluate", str(run_dir), "--episodes=2",
                      f"--checkpoint={kept}", timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.load(open(run_dir / "evaluation.json"))
    assert result["checkpoint"] == str(kept) and result["return_mean"] >= 100


def _damage_missing(run_dir):
    os.remove(run_dir / "checkpoints" / "learner.npz")


def _damage_bits(run_dir):
    path = run_dir / "checkpoints" / "learner.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = bytes(64)
    path.write_bytes(bytes(data))


def _damage_foreign(run_dir):
    np.savez(run_dir / "checkpoints" / "learner.npz", weights=np.zeros(3))


def _damage_record(run_dir):
    os.remove(run_dir / "run.json")


def _damage_version(run_dir):
    record = json.load(open(run_dir / "run.json"))
    record["config"]["a_field_of_a_later_version"] = 1
    json.dump(record, open(run_dir / "run.json", "w"))


@pytest.mark.parametrize("damage,words", [
    (_damage_missing, "learner.npz is missing"), (_damage_bits, "is damaged"),
    (_damage_foreign, "is not a checkpoint of this run's dqn learner"),
    (_damage_record, "has no run.json"), (_damage_version, "of another version")])
def test_a_run_it_cannot_use_is_refused_in_one_line_and_left_unchanged(trained, tmp_path,
                                                                       damage, words):
    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    damage(run_dir)
    before = _digests(run_dir)
    done = run_module("launch_programs.evaluate", str(run_dir), timeout=180)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and words in lines[0], done.stderr[-1500:]
    assert _digests(run_dir) == before


def test_bad_flags_are_refused_in_one_line(tmp_path):
    done = run_module("launch_programs.evaluate", str(tmp_path), "--episodes=0", timeout=60)
    assert done.returncode == 2 and done.stderr.strip() == \
        "error: --episodes: must be >= 1, got 0"
    done = run_module("launch_programs.evaluate", str(tmp_path / "none"), timeout=60)
    assert done.returncode == 2 and "is not a directory" in done.stderr
