"""The ray launcher on a multi-node Ray cluster built on this machine (launch_programs.local_cluster).

The fast tier runs one program over three nodes (a head and two workers,
each its own raylet) and checks where each node went. The slow tier loses a
whole worker host mid-run (raylet, object store and workers killed at once)
and the host that holds the replay, through the command line.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import time

import pytest

from agentkit.loggers import read_csv
from agentkit.specs import make_environment_spec
from agents.dqn import DQNBuilder, DQNConfig
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.local_cluster import LocalCluster
from launch_programs.placement import PlacementError
from launch_programs.ray_launcher import RayConfig, RayLauncher
from launch_programs.ray_session import TEMP_PREFIX
from tests import fakes
from tests.launch_programs.ray_processes import ray_processes

ray = pytest.importorskip("ray")

CONFIG = DQNConfig(
    hidden_sizes=(16,), head_hidden_size=16, batch_size=16, min_replay_size=100,
    samples_per_insert=2.0, n_step=1, discount=0.9, epsilon_decay_steps=500,
    variable_update_period=50,
)
# Everything but the actors on the head, which offers no CPU, so the actors (one CPU each)
# land on the workers, one per worker (spread).
ON_HEAD = "replay:head,counter:head,learner:head"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _program(logdir, max_actor_steps=2000, **program_kwargs):
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2,
                                   max_actor_steps=max_actor_steps, eval_episodes=0,
                                   print_every_s=0, **program_kwargs)
    spec = make_environment_spec(fakes.match_the_sign())
    return make_agent_program(DQNBuilder(CONFIG, program_config.layout), fakes.match_the_sign,
                              spec, program_config,
                              str(logdir))


def _shared_ray_sessions() -> set[str]:
    return set(glob.glob("/tmp/ray/session_2*"))


def test_a_program_over_three_nodes_goes_where_it_is_pinned(tmp_path, capfd):
    assert not ray_processes(), "another Ray instance is running"
    shared_before = _shared_ray_sessions()
    with LocalCluster(workers=2, cpus_per_node=2, head_cpus=0) as cluster:
        temp_dir = cluster.temp_dir
        # The nodes' session files are in the cluster's own folder, one session for all three.
        assert os.path.basename(temp_dir).startswith(TEMP_PREFIX)
        assert len(glob.glob(os.path.join(temp_dir, "ray", "session_2*"))) == 1
        raylets = [line for line in ray_processes() if "raylet" in line and "ray::" not in line]
        assert len(raylets) == 3  # A raylet per node.
        config = RayConfig(ray_address=cluster.address, cpus_per_actor=1.0, learner_cpus=0.0,
                           pin=ON_HEAD)
        launcher = RayLauncher(_program(tmp_path), config)
        try:
            result = launcher.launch()
            assert result.status == "completed", result.error and result.error.formatted
            where = {name: cluster.name_of(launcher.node_location(name))
                     for name in result.objects}
            counts = result.objects["counter"].get_counts()
            info = result.objects["replay"].info()[DQNBuilder.table_name]
        finally:
            launcher.close()
        # A pin that names no node fails before any node process starts.
        bad = RayLauncher(_program(tmp_path / "bad"),
                          RayConfig(ray_address=cluster.address, pin="replay:nowhere"))
        try:
            with pytest.raises(PlacementError, match="--pin=replay:nowhere: no live node"):
                bad.launch()
            assert bad.objects == {}
        finally:
            bad.close()
    assert where["replay"] == where["counter"] == where["learner"] == "head"
    assert sorted([where["actor_0"], where["actor_1"]]) == ["worker_1", "worker_2"]  # Spread.
    assert counts["actor_steps"] == info["num_inserts"] >= 2000  # Nothing lost between hosts.
    assert counts["learner_steps"] > 0
    assert launcher.restarts == {}
    # Handles travel between nodes by name, so Ray sees no constructor argument that it
    # could not rebuild for a restart, and does not warn.
    assert "constructor arguments in the object store" not in capfd.readouterr().err
    time.sleep(1.0)
    assert not ray_processes()
    # Nothing of the cluster stays on the machine: its folder is gone, and the host's shared
    # /tmp/ray got no session from it.
    assert not os.path.exists(temp_dir)
    assert _shared_ray_sessions() <= shared_before


@pytest.mark.parametrize("shared_file", ["absent", "another cluster's"])
def test_a_cluster_with_its_own_folder_leaves_the_shared_address_file_alone(
        tmp_path, monkeypatch, shared_file):
    """Ray's Cluster writes the head's address into the host's shared folder and deletes it at
    shutdown. Where that folder did not exist (a fresh machine: CI) the start failed, and
    where another cluster's address was there it was overwritten, then deleted."""
    assert not ray_processes(), "another Ray instance is running"
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "shared"))  # Ray's shared folder's root.
    address_file = tmp_path / "shared" / "ray" / "ray_current_cluster"
    if shared_file != "absent":
        address_file.parent.mkdir(parents=True)
        address_file.write_text("10.255.0.1:6379")
    with LocalCluster(workers=0, cpus_per_node=1) as cluster:
        own = os.path.join(cluster.temp_dir, "ray", "ray_current_cluster")
        assert open(own).read() == cluster.address  # Its address is in its own folder.
        if shared_file == "absent":
            assert not (tmp_path / "shared").exists()
        else:
            assert address_file.read_text() == "10.255.0.1:6379"
    assert (address_file.read_text() == "10.255.0.1:6379" if shared_file != "absent"
            else not (tmp_path / "shared").exists())
    time.sleep(1.0)
    assert not ray_processes()


def test_a_head_that_fails_after_its_processes_started_leaves_none(monkeypatch):
    """The head's processes are up when Ray's Cluster raises (here: its address file cannot
    be written): every one of them is stopped, and the error reaches the caller."""
    import ray._private.utils as private_utils

    assert not ray_processes(), "another Ray instance is running"

    def unwritable(address, temp_dir=None):
        assert ray_processes()  # The head is up by now.
        raise PermissionError("the address file cannot be written")

    monkeypatch.setattr(private_utils, "write_ray_address", unwritable)
    with pytest.raises(PermissionError, match="cannot be written"):
        LocalCluster(workers=1, cpus_per_node=1).start()
    time.sleep(1.0)
    assert not ray_processes()


def _run_on_cluster(cluster, logdir, extra, budget):
    """The command line on the cluster, in a child process; returns (process, output path)."""
    out = open(os.path.join(str(logdir) + ".out"), "w")
    command = [sys.executable, "-m", "launch_programs.run", "--agent=dqn",
               "--env=gym:CartPole-v1", "--launch=ray", f"--ray_address={cluster.address}",
               "--num_actors=2", "--num_envs_per_actor=2", f"--max_actor_steps={budget}",
               "--cpus_per_actor=1", "--learner_cpus=0", "--eval_episodes=0",
               f"--logdir={logdir}", "--print_every_s=2", *extra]
    return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT), out.name


def _actor_steps(logdir) -> int:
    try:
        rows = read_csv(os.path.join(str(logdir), "actor.csv"))
    except (OSError, ValueError):
        return 0
    return max((int(float(r["actor_steps"])) for r in rows), default=0)


def _wait_for_steps(process, logdir, steps, timeout_s=180.0):
    deadline = time.monotonic() + timeout_s
    while _actor_steps(logdir) < steps:
        assert process.poll() is None, "the run ended before the kill"
        assert time.monotonic() < deadline, f"no {steps} actor steps within {timeout_s} s"
        time.sleep(0.3)


@pytest.mark.slow
def test_a_lost_worker_host_is_survived(tmp_path):
    """Every process of one worker node dies at once mid-run: its actor is rebuilt on the
    other worker, the run completes, summary.json records the restart, and the replay holds
    an item for every counted step, up to the items in flight at the kill."""
    assert not ray_processes(), "another Ray instance is running"
    budget = 30_000
    logdir = tmp_path / "run"
    with LocalCluster(workers=2, cpus_per_node=2, head_cpus=0) as cluster:
        process, out = _run_on_cluster(cluster, logdir, [f"--pin={ON_HEAD}"], budget)
        try:
            _wait_for_steps(process, logdir, budget // 3)
            cluster.kill("worker_1")
            killed_at = _actor_steps(logdir)
            assert process.wait(timeout=300) == 0, open(out).read()[-3000:]
        finally:
            if process.poll() is None:
                process.kill()
    summary = json.load(open(logdir / "summary.json"))
    assert summary["status"] == "completed"
    restarts = summary["node_restarts"]
    assert len(restarts) == 1 and list(restarts.values()) == [1], restarts  # One actor lived there.
    assert list(restarts)[0] in ("actor_0", "actor_1")
    assert summary["actor_steps"] >= budget > killed_at
    inserts = sum(t["num_inserts"] for t in summary["replay"].values())
    in_flight = summary["actor_steps"] - inserts
    print(f"[node loss] killed at {killed_at} steps; counted {summary['actor_steps']}, "
          f"inserted {inserts}: {in_flight} steps without an item")
    assert abs(in_flight) <= 200, (summary["actor_steps"], inserts)
    time.sleep(1.0)
    assert not ray_processes()


@pytest.mark.slow
def test_the_lost_replay_host_comes_back_with_its_checkpoint(tmp_path):
    """The replay is pinned to a host of its own; that host dies and rejoins (a restarted
    machine): the replay comes back on it, on the address its clients hold, from its
    checkpoint, and the run completes."""
    assert not ray_processes(), "another Ray instance is running"
    budget = 30_000
    logdir = tmp_path / "run"
    with LocalCluster(workers=2, cpus_per_node=2, head_cpus=0) as cluster:
        cluster.add("replay_host", cpus=0)
        pins = "replay:replay_host,counter:head,learner:head"
        process, out = _run_on_cluster(
            cluster, logdir, [f"--pin={pins}", "--checkpoint_replay=true",
                              "--checkpoint_every_s=1"], budget)
        try:
            _wait_for_steps(process, logdir, budget // 3)
            time.sleep(2.5)  # Past the next replay checkpoint.
            cluster.kill("replay_host")
            time.sleep(3.0)
            cluster.add("replay_host", cpus=0)
            assert process.wait(timeout=300) == 0, open(out).read()[-3000:]
        finally:
            if process.poll() is None:
                process.kill()
    output = open(out).read()
    summary = json.load(open(logdir / "summary.json"))
    assert summary["status"] == "completed"
    assert summary["node_restarts"] == {"replay": 1}
    assert summary["actor_steps"] >= budget
    restored = int(re.search(r"\[replay\] restored (\d+) items", output).group(1))
    inserts = sum(t["num_inserts"] for t in summary["replay"].values())
    lost = summary["actor_steps"] - inserts  # Inserted after the last checkpoint, or in flight.
    print(f"[replay host loss] restored {restored} items; counted {summary['actor_steps']}, "
          f"inserted {inserts}: {lost} steps without an item")
    assert restored >= budget // 3 - 2_000  # The checkpoint from before the kill.
    assert 0 <= lost <= 2_000  # About a second of acting (one checkpoint period).
    time.sleep(1.0)
    assert not ray_processes()
