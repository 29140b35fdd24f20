"""`python -m launch_programs.evaluate RUN_DIR`: a trained run's policy played again from its
checkpoint, as a user runs it; a run directory it cannot use refused in one line, unchanged."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import imageio.v2 as imageio
import numpy as np
import pytest

from tests.commands import run_module, user_env


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


# Plays CartPole's first evaluation game (seed S, as the evaluator's environment 0) with an
# exported policy, in a process of TensorFlow and gymnasium only: the toolkit's own game when
# the policy is greedy, action for action.
PLAY_SERVED = r"""
import sys
import gymnasium as gym
import numpy as np
import tensorflow as tf
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
inputs = serve.structured_input_signature[1]  # The state's size is the signature's.
core_size = inputs["core_state_hidden"].shape[1] if "core_state_hidden" in inputs else 0
env = gym.make("CartPole-v1")
observation, _ = env.reset(seed=int(sys.argv[2]))
state = {k: tf.zeros([1, core_size]) for k in ("core_state_hidden", "core_state_cell")}
total, done = 0.0, False
while not done:
    inputs = {"observation": tf.constant(observation[None], tf.float32)}
    if core_size:
        inputs.update(state)
    out = serve(**inputs)
    if core_size:
        state = {k: out[k] for k in state}
    observation, reward, terminated, truncated, _ = env.step(int(out["actions"][0]))
    total, done = total + reward, terminated or truncated
assert not [m for m in sys.modules if m.split(".")[0] in ("agentkit", "components", "agents")]
print(total)
"""


def _play_served(tmp_path, directory, seed) -> float:
    script = tmp_path / "play_served.py"
    script.write_text(PLAY_SERVED)
    done = subprocess.run([sys.executable, str(script), str(directory), str(seed)],
                          cwd=tmp_path, env=user_env(TF_CPP_MIN_LOG_LEVEL="2"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.strip().splitlines()[-1])


def _check_video_and_export(run_dir, tmp_path, seed):
    """evaluate --video --export on a run: the video holds the first game's frames, the
    exported policy plays that game again outside the toolkit, the run is left as it was."""
    before = _digests(run_dir)
    video, export = tmp_path / "first.mp4", tmp_path / "policy"
    done = run_module("launch_programs.evaluate", str(run_dir), "--episodes=2", f"--seed={seed}",
                      f"--video={video}", f"--export={export}", timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.load(open(run_dir / "evaluation.json"))
    first = result["returns"][0]  # CartPole: one point a step, so the game's length.
    reader = imageio.get_reader(str(video))
    assert reader.count_frames() == result["video"]["frames"] == int(first) + 1  # + the reset.
    assert reader.get_meta_data()["size"] == (600, 400) and result["video"]["fps"] == 50
    reader.close()
    assert _play_served(tmp_path, export, seed) == first
    assert f"video: {video} ({int(first) + 1} frames at 50/s)" in done.stdout
    after = _digests(run_dir)
    assert set(after) - set(before) == {"evaluation.json"}
    assert all(after[k] == v for k, v in before.items() if k != "evaluation.json")
    return result


def test_a_feed_forward_run_is_filmed_and_exported(trained, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    result = _check_video_and_export(run_dir, tmp_path, seed=5)
    assert result["export"]["inputs"] == ["observation"]
    assert result["export"]["outputs"] == ["actions", "q_values"]


def test_a_recurrent_run_of_the_ray_launcher_is_filmed_and_exported(tmp_path):
    """R2D2 (greedy at evaluation) trained briefly by Ray's processes: its LSTM state goes in
    and out of the exported signature, and the game is the toolkit's own."""
    run_dir = tmp_path / "r2d2"
    done = run_module("launch_programs.run", "--agent=r2d2", "--env=gym:CartPole-v1",
                      "--launch=ray", "--max_actor_steps=3000", f"--logdir={run_dir}",
                      "--seed=0", "--print_every_s=0", timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = _check_video_and_export(run_dir, tmp_path, seed=2)
    assert result["agent"] == "r2d2" and result["learner_steps"] > 0
    assert result["export"]["inputs"] == ["observation", "core_state_hidden", "core_state_cell"]


@pytest.mark.parametrize("flag,words", [
    ("--video={tmp}/v.avi", "--video: a file ending in .mp4 or .gif"),
    ("--video={tmp}/none/v.mp4", "is not a directory"),
    ("--export={tmp}/full", "--export: {tmp}/full exists and is not an empty directory")])
def test_a_video_or_export_it_cannot_write_is_refused_in_one_line(trained, tmp_path, flag,
                                                                  words):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("kept")
    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    before = _digests(run_dir), _digests(tmp_path / "full")
    done = run_module("launch_programs.evaluate", str(run_dir),
                      flag.format(tmp=tmp_path), timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-1500:]
    assert words.format(tmp=tmp_path) in lines[0]
    assert (_digests(run_dir), _digests(tmp_path / "full")) == before
