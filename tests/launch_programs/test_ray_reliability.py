"""What a careless or hostile user breaks under `--launch=ray` (issue 35), held as a user runs
the command: in a subprocess with a clean environment. Slow tier: each starts Ray."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import time

import pytest

from tests.commands import run_module, start_module
from tests.launch_programs.ray_processes import ray_processes
from tests.launch_programs.test_run_dir import _recorded_run

pytestmark = pytest.mark.slow
FAST = ["--agent=dqn", "--env=gym:CartPole-v1", "--launch=ray", "--hidden_sizes=32",
        "--head_hidden_size=32", "--min_replay_size=200", "--batch_size=32",
        "--eval_episodes=0", "--num_envs_per_actor=2", "--print_every_s=1"]


def _files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _private_dirs() -> set[str]:
    return set(glob.glob("/tmp/agentkit-ray-*"))


def _learner_rows(logdir) -> int:
    path = logdir / "learner.csv"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_an_unmet_placement_refuses_before_the_logdir_is_touched(tmp_path):
    """`--fresh` with a pin no node meets used to print the error after clearing the run."""
    logdir = tmp_path / "run"
    _recorded_run(logdir, *FAST)
    before = _files(logdir)
    for extra in (["--fresh"], []):
        out = run_module("launch_programs.run", *FAST, f"--logdir={logdir}",
                         "--max_actor_steps=5000", "--pin=replay:nowhere", *extra, timeout=180)
        assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
        errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
        assert errors == ["error: --pin=replay:nowhere: no live node has a resource or node id "
                          "'nowhere' (custom resources: none)"], out.stderr[-2000:]
        assert "Traceback" not in out.stderr
        assert _files(logdir) == before  # Nothing cleared; no life recorded in run.json.
    assert not ray_processes()


def test_a_local_ray_is_private_ignores_ray_address_and_a_stale_cluster_file_and_sighup_stops_it(
        tmp_path):
    """A stale ray_current_cluster (a dead head's) and a RAY_ADDRESS in the environment used
    to make a local run try to join; its session files (unix sockets) were in the host's
    shared /tmp/ray; SIGHUP killed it without a summary or checkpoint."""
    ray_tmp = tmp_path / "raytmp"
    (ray_tmp / "ray").mkdir(parents=True)
    (ray_tmp / "ray" / "ray_current_cluster").write_text("127.0.0.1:1")
    logdir = tmp_path / "run"
    before = _private_dirs()
    proc = start_module("launch_programs.run", *FAST, f"--logdir={logdir}",
                        "--max_actor_steps=10000000", RAY_TMPDIR=str(ray_tmp),
                        RAY_ADDRESS="127.0.0.1:1")
    try:
        deadline = time.time() + 240
        while _learner_rows(logdir) < 3:
            assert proc.poll() is None, proc.stdout.read()[-3000:]
            assert time.time() < deadline, "the learner never logged"
            time.sleep(0.5)
        new = _private_dirs() - before
        assert len(new) == 1, new
        private = new.pop()
        assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
        assert glob.glob(os.path.join(private, "ray", "session_*", "sockets"))
        proc.send_signal(signal.SIGHUP)
        out = proc.communicate(timeout=120)[0]
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGHUP, out[-3000:]
    assert "[run] RAY_ADDRESS=127.0.0.1:1 is ignored" in out
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["signal"] == "SIGHUP"
    assert summary["learner_steps"] > 0
    assert (logdir / "checkpoints" / "learner.npz").exists()
    assert not os.path.exists(private)  # Removed with the run.
    assert os.listdir(ray_tmp / "ray") == ["ray_current_cluster"]  # Not used, not touched.
    time.sleep(1.0)
    assert not ray_processes()


def test_the_documented_cluster_rehearsal_works_from_a_fresh_shell(tmp_path):
    """`local_cluster`, then `run --ray_address=127.0.0.1:PORT`, each from a clean environment:
    Ray used to rewrite 127.0.0.1 to the host's address, where the cluster does not listen."""
    ray_tmp = tempfile.mkdtemp(dir="/tmp")  # Short: Ray's socket paths must fit 107 bytes.
    cluster = start_module("launch_programs.local_cluster", "--workers=1", "--cpus_per_node=2",
                           RAY_TMPDIR=ray_tmp)
    try:
        address = None
        for line in cluster.stdout:
            found = re.search(r"--ray_address=(127\.0\.0\.1:\d+)", line)
            if found:
                address = found.group(1)
                break
        assert address, "the cluster never printed its address"
        logdir = tmp_path / "run"
        out = run_module("launch_programs.run", *FAST, f"--ray_address={address}",
                         f"--logdir={logdir}", "--max_actor_steps=2000", timeout=300)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        summary = json.loads((logdir / "summary.json").read_text())
        assert summary["status"] == "completed" and summary["actor_steps"] >= 2000
        cluster.send_signal(signal.SIGINT)
        assert cluster.wait(timeout=60) == 0
    finally:
        cluster.kill()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    time.sleep(1.0)
    assert not ray_processes()
