"""The generic program under the ray launcher: each node its own process.

Each test that launches starts (and stops) its own local Ray, so it can check
that no Ray process outlives the run; the shutdown-order and resource tests
use fake handles and start no Ray.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from agentkit.loggers import read_csv
from agentkit.specs import make_environment_spec
from agents.dqn import DQNBuilder, DQNConfig
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.counter_node import read_saved_counts
from launch_programs.placement import PlacementError
from launch_programs.program import Program
from launch_programs.ray_config import NodeResources
from launch_programs.ray_launcher import RayConfig, RayLauncher
from launch_programs.ray_nodes import RayClosedError
from tests import fakes
from tests.launch_programs.ray_processes import ray_processes as _ray_processes

ray = pytest.importorskip("ray")


@pytest.fixture(autouse=True)
def no_ray_outlives_a_test():
    """Each launching test leaves this process with no Ray connection: one left up (a helper
    thread's late call used to start a fresh one) would be taken over by the next test's
    launcher, and end this process when its servers go."""
    assert not ray.is_initialized()
    yield
    assert not ray.is_initialized()

CONFIG = DQNConfig(
    hidden_sizes=(16,), head_hidden_size=16, batch_size=16, min_replay_size=100,
    samples_per_insert=2.0, n_step=1, discount=0.9, epsilon_decay_steps=500,
    variable_update_period=50,
)


def _listening_sockets() -> list[tuple[str, int, int]]:
    """(address, port, pid) of every listening TCP socket on the machine."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    sockets = []
    for line in out.splitlines():
        fields = line.split()
        address, _, port = fields[3].rpartition(":")
        for pid in re.findall(r"pid=(\d+)", line):
            sockets.append((address, int(port), int(pid)))
    return sockets


def _ray_pids() -> set[int]:
    return {int(line.split()[0]) for line in _ray_processes()}


def _wait_for_actor_steps(launcher, steps: int):
    """Blocks (in a helper thread) until the running program's counter passes `steps`."""
    counter = None
    while counter is None:
        counter = launcher.objects.get("counter")
        time.sleep(0.2)
    while counter.get_counts().get("actor_steps", 0) < steps:
        time.sleep(0.2)
    return counter


def _launcher(tmp_path, max_actor_steps, **program_kwargs):
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2,
                                   max_actor_steps=max_actor_steps, eval_episodes=0,
                                   print_every_s=0, **program_kwargs)
    spec = make_environment_spec(fakes.match_the_sign())
    program = make_agent_program(DQNBuilder(CONFIG, program_config.layout), fakes.match_the_sign,
                                 spec, program_config, str(tmp_path))
    return RayLauncher(program, RayConfig(cpus_per_actor=0.5, learner_cpus=0.5))


def test_two_actor_program_runs_and_leaves_no_process(tmp_path, capfd):
    assert not _ray_processes(), "another Ray instance is running"
    launcher = _launcher(tmp_path, max_actor_steps=2000)
    seen = {}

    def look_at_sockets_mid_run():
        _wait_for_actor_steps(launcher, 300)
        seen["replay_port"] = int(launcher.objects["replay"].address().rpartition(":")[2])
        seen["pids"] = _ray_pids() | set(launcher._pids.values()) | {os.getpid()}
        seen["sockets"] = _listening_sockets()

    watcher = threading.Thread(target=look_at_sockets_mid_run, daemon=True)
    watcher.start()
    start = time.time()
    try:
        result = launcher.launch()
        assert result.status == "completed", result.error and result.error.formatted
        counts = result.objects["counter"].get_counts()
        actor_steps = [result.objects[f"actor_{i}"].steps() for i in range(2)]
        info = result.objects["replay"].info()[DQNBuilder.table_name]
        pids = {launcher.node_pid(name) for name in ("replay", "counter", "learner", "actor_0")}
    finally:
        launcher.close()
    elapsed = time.time() - start
    watcher.join(5)
    # A handle used after the launcher closed raises; it starts no fresh Ray (under /tmp/ray,
    # owned by nothing) as Ray's auto-connect would.
    with pytest.raises(RayClosedError, match="node counter: Ray is not running here"):
        result.objects["counter"].get_counts()
    with pytest.raises(RayClosedError):
        launcher.node_pid("learner")
    assert not ray.is_initialized()
    assert len(pids) == 4  # Every node in its own process.
    assert os.getpid() not in pids
    # Mid-run, Ray's own servers (GCS, raylet, node workers, this driver)
    # listened on the loopback address only; Reverb's is the one on all
    # interfaces (it has no bind option).
    ray_sockets = [(a, port) for a, port, pid in seen["sockets"] if pid in seen["pids"]]
    assert len(ray_sockets) >= 4, seen["sockets"]
    exposed = [(a, port) for a, port in ray_sockets if port != seen["replay_port"]
               and a not in ("127.0.0.1", "[::ffff:127.0.0.1]")]
    assert exposed == []
    assert any(port == seen["replay_port"] for _, port in ray_sockets)
    # The counter's total is exactly the sum of what the actors report, and
    # every one of those steps reached the table.
    assert counts["actor_steps"] == sum(actor_steps) == info["num_inserts"]
    assert 2000 <= counts["actor_steps"] < 2000 + 2 * 100 + 400  # As under threads.
    assert min(actor_steps) > 0
    assert counts["learner_steps"] > 0
    assert info["num_samples"] >= counts["learner_steps"] * CONFIG.batch_size
    rows = read_csv(str(tmp_path / "actor.csv"))
    assert {"wall_time_s", "actor_steps", "learner_steps", "episode_return"} <= set(rows[0])
    assert read_csv(str(tmp_path / "learner.csv"))
    assert launcher.restarts == {}
    # A healthy run prints no warning of Ray's (token authentication stays on, chosen).
    assert "WARNING" not in capfd.readouterr().err
    time.sleep(1.0)
    assert not _ray_processes()
    assert elapsed < 60


@pytest.mark.parametrize("victim", ["actor_1", "learner", "replay", "counter"])
def test_a_killed_node_is_restarted_and_the_run_completes(tmp_path, victim):
    """kill -9 of one node's process mid-run: Ray rebuilds it, the others reconnect.

    The learner comes back from its last checkpoint, the replay from its
    checkpoint on the same port (both written every second here), the
    counter from the totals it saved (every 2 s), not from the program's start.
    """
    # A budget the kill lands well inside, on fast machines too: the kill comes 2.5 s after
    # the first learner checkpoint (after 1,500 steps), and with 6,000 a fast VM could end
    # the run first (seen 2026-12-05: the victim still being rebuilt as the run ended).
    budget = 12_000
    launcher = _launcher(tmp_path, max_actor_steps=budget, checkpoint_every_s=1.0,
                         checkpoint_replay=True)
    killed = {}
    run_over = threading.Event()

    def kill_mid_run():
        try:
            counter = _wait_for_actor_steps(launcher, 1500)
            while not (tmp_path / "checkpoints" / "learner.npz").exists():
                time.sleep(0.2)
            time.sleep(2.5)  # Past the next replay and counter checkpoints too.
            if run_over.is_set():
                return
            killed["pid"] = launcher.node_pid(victim)
            killed["saved"] = read_saved_counts(str(tmp_path))[0]
            killed["counts"] = counter.get_counts()
            os.kill(killed["pid"], signal.SIGKILL)
            if victim == "counter":  # What the actors had counted by then: the most it had.
                killed["taken"] = sum(launcher.objects[f"actor_{i}"].steps() for i in range(2))
        except Exception as e:  # Reported by the asserts below, not lost in a thread.
            killed["error"] = repr(e)

    killer = threading.Thread(target=kill_mid_run, daemon=True)
    killer.start()
    try:
        result = launcher.launch()
        run_over.set()  # A killer that has not struck yet leaves the finished run alone.
        assert result.status == "completed", result.error and result.error.formatted
        counts = result.objects["counter"].get_counts()
        new_pid = launcher.node_pid(victim)
        restored_step = result.objects["learner"].get_restored_step()
        taken = sum(result.objects[f"actor_{i}"].steps() for i in range(2))
        replay_stats = result.objects["replay"].checkpoint_stats()
    finally:
        run_over.set()
        killer.join(10)  # Done with Ray before the launcher closes it.
        launcher.close()
    assert "error" not in killed, killed
    assert "pid" in killed and killed["counts"]["actor_steps"] < budget  # Killed mid-run.
    assert new_pid != killed["pid"]  # A new process took over.
    assert launcher.restarts == {victim: 1}
    assert counts["actor_steps"] >= budget
    # Learner steps of both lives are counted.
    assert counts["learner_steps"] > killed["counts"]["learner_steps"]
    if victim == "learner":
        assert restored_step > 0  # From its checkpoint, not from scratch.
    if victim == "replay":
        assert replay_stats["restored_items"] > 0
    if victim == "counter":  # Only what came after its last save is lost: at most what the
        # actors had counted just after the kill, less the saved total read before it.
        lost = taken - counts["actor_steps"]
        assert 0 <= lost <= killed["taken"] - killed["saved"]["actor_steps"], (lost, killed)
    elif victim != "actor_1":  # Every step counted (actors send their last ones as they stop).
        assert counts["actor_steps"] == taken
    time.sleep(1.0)
    assert not _ray_processes()


def test_node_kinds_map_to_the_configured_resources_and_other_kinds_to_none():
    config = RayConfig(cpus_per_actor=2.0, learner_cpus=3.0, learner_gpus=1.0)
    assert config.resources_for("actor") == NodeResources(cpus=2.0, tf_threads=2)
    assert config.resources_for("learner") == NodeResources(cpus=3.0, gpus=1.0)  # TF's threads.
    assert config.resources_for("learner").ray_options() == {"num_cpus": 3.0, "num_gpus": 1.0}
    for kind in ("replay", "counter", "evaluator", "inference_server"):  # The last one is new.
        assert config.resources_for(kind) == NodeResources()
        assert config.resources_for(kind).ray_options() == {"num_cpus": 0.0, "num_gpus": 0.0}
    assert RayConfig(cpus_per_actor=0.5).resources_for("actor").tf_threads == 1
    assert RayConfig(cpus_per_actor=0.0).resources_for("actor").tf_threads == 0  # TF's default.


class _FakeMethod:
    """`handle.<method>.remote()`: records the call, returns a stand-in for its result."""

    def __init__(self, events: list, method: str, name: str):
        self._events, self._method, self._name = events, method, name

    def remote(self, *args):
        self._events.append((self._method, self._name))
        return (self._method, self._name)


class _FakeHandle:
    def __init__(self, events: list, name: str):
        self.stop = _FakeMethod(events, "stop", name)
        self.ready = _FakeMethod(events, "ready", name)


def _fake_program() -> Program:
    program = Program("fake")
    store = program.add_node("store", "store", object)
    program.add_node("clock", "clock", object, store)
    program.add_node("trainer", "learner", object, store)
    for i in range(2):
        program.add_node(f"worker_{i}", "actor", object, store, ends_program=True)
    program.add_node("judge", "inference_server", object, store)
    return program


def test_ray_launcher_stops_nodes_in_the_programs_stages(monkeypatch):
    """Without Ray: fake handles record the order of stop() calls and of the waits."""
    events: list = []
    monkeypatch.setattr(ray, "wait", lambda refs, num_returns, timeout: events.append(
        ("wait", tuple(name for _, name in refs))) or (refs, []))
    monkeypatch.setattr(ray, "get", lambda ref, timeout=None: events.append(("get", ref[1])))
    program = _fake_program()
    launcher = RayLauncher(program)
    launcher._handles = {name: _FakeHandle(events, name) for name in program.nodes}
    launcher._pids = {name: 1 for name in program.nodes if name != "judge"}  # judge: starting.
    launcher._runs = {("run", name): name for name in ("worker_0", "worker_1", "trainer")}
    launcher._finished = set()
    launcher.shutdown()
    assert events == [
        ("stop", "worker_0"), ("stop", "worker_1"), ("wait", ("worker_0", "worker_1")),
        ("stop", "trainer"), ("wait", ("trainer",)),
        ("stop", "clock"), ("get", "clock"),
        ("stop", "store"), ("get", "store"),
    ]
    assert launcher._runs == {}


class _FakeActorClass:
    """`ray.remote(NodeProcess)`: records what each node's process was created with."""

    def __init__(self):
        self.created: dict[str, tuple] = {}
        self.placed: dict[str, dict] = {}
        self.actor_names: dict[str, str] = {}
        self.arguments: dict[str, tuple] = {}
        self._options: dict = {}

    def options(self, **ray_options):
        self._options = ray_options
        return self

    def remote(self, name, constructor, args, kwargs, on_cluster, tf_threads):
        self.created[name] = (self._options["num_cpus"], self._options["num_gpus"], tf_threads)
        self.placed[name] = {k: v for k, v in self._options.items()
                             if k in ("resources", "scheduling_strategy")}
        self.actor_names[name] = self._options["name"]
        self.arguments[name] = (args, kwargs)
        return _FakeHandle([], name)


def test_ray_launcher_reserves_resources_by_node_kind(monkeypatch):
    """Without Ray: `_build` asks for each node's resources by its kind, a new kind included."""
    actor_class = _FakeActorClass()
    monkeypatch.setattr(ray, "remote", lambda cls: actor_class)
    monkeypatch.setattr(ray, "get", lambda ref, timeout=None: 1)
    monkeypatch.setattr(ray, "nodes", lambda: [
        {"NodeID": "a" * 56, "Alive": True, "Resources": {"CPU": 8.0, "GPU": 1.0, "disk": 1.0}}])
    config = RayConfig(cpus_per_actor=2.0, learner_cpus=3.0, learner_gpus=1.0, pin="store:disk")
    program = _fake_program()
    RayLauncher(program, config)._build(list(program.nodes))
    assert actor_class.created == {  # (CPUs, GPUs, TensorFlow threads)
        "store": (0, 0, 0), "clock": (0, 0, 0), "trainer": (3.0, 1.0, 0),
        "worker_0": (2.0, 0, 2), "worker_1": (2.0, 0, 2), "judge": (0, 0, 0),
    }
    assert actor_class.placed == {  # The pin and the spread actors; Ray's default elsewhere.
        "store": {"resources": {"disk": 0.001}}, "clock": {}, "trainer": {},
        "worker_0": {"scheduling_strategy": "SPREAD"},
        "worker_1": {"scheduling_strategy": "SPREAD"}, "judge": {},
    }
    names = actor_class.actor_names
    assert len(set(names.values())) == 6 and all(n.startswith("fake-") for n in names.values())
    # A node reaches another by its actor name: the handle stays out of the arguments.
    (store,), _ = actor_class.arguments["clock"]
    state = pickle.loads(pickle.dumps(store)).__dict__
    assert state["_handle"] is None and state["_actor_name"] == names["store"]
    # A placement the cluster cannot meet fails before any node process is created.
    actor_class.created.clear()
    with pytest.raises(PlacementError, match="--learner_gpus=2: no node has 2 GPUs"):
        RayLauncher(program, RayConfig(learner_gpus=2.0))._build(list(program.nodes))
    assert actor_class.created == {}


_NODE_PROCESS_SNIPPET = """
import os, sys
{preload}
from launch_programs.counter_node import CounterNode
from launch_programs.ray_launcher import NodeProcess
NodeProcess("counter", CounterNode, (), {{}}, False, 1)
threads = None
if "tensorflow" in sys.modules:
    import tensorflow as tf
    threads = tf.config.threading.get_intra_op_parallelism_threads()
print("tensorflow" in sys.modules, os.environ.get("TF_NUM_INTRAOP_THREADS"), threads)
"""


@pytest.mark.parametrize("preload, expected", [
    ("", "False 1 None"),  # The counter needs no TensorFlow: none is imported for it.
    ("import tensorflow", "True 1 1"),  # Loaded by the arguments: configured before any op.
])
def test_a_node_process_imports_tensorflow_only_when_its_node_does(preload, expected):
    """Importing TensorFlow costs a node process about 3 s of CPU, which the other nodes'
    start-up waits for on 2 cores; its thread budget still reaches TensorFlow either way."""
    code = _NODE_PROCESS_SNIPPET.format(preload=preload)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected


def test_central_inference_under_ray_moves_every_step_and_batches(tmp_path):
    """The inference node is a process of its own: the actors' requests reach it as Ray
    calls, it answers them in batches, and every step the actors took reaches the table."""
    assert not _ray_processes(), "another Ray instance is running"
    config = dataclasses.replace(CONFIG, actor_priorities=False)
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2, max_actor_steps=1500,
                                   eval_episodes=0, print_every_s=0, inference="central",
                                   inference_deadline_ms=20.0)
    spec = make_environment_spec(fakes.match_the_sign())
    program = make_agent_program(DQNBuilder(config, program_config.layout), fakes.match_the_sign,
                                 spec, program_config, str(tmp_path))
    launcher = RayLauncher(program, RayConfig(cpus_per_actor=0.5, learner_cpus=0.5))
    try:
        result = launcher.launch()
        assert result.status == "completed", result.error and result.error.formatted
        counts = result.objects["counter"].get_counts()
        info = result.objects["replay"].info()[DQNBuilder.table_name]
        stats = result.objects["inference"].stats()
        seen = [result.objects[f"actor_{i}"].policy_calls() for i in range(2)]
        pids = {launcher.node_pid(name) for name in ("inference", "actor_0", "actor_1")}
    finally:
        launcher.close()
    assert len(pids) == 3  # The inference node in a process of its own.
    assert counts["actor_steps"] == info["num_inserts"] >= 1500
    assert stats["rows"] >= counts["actor_steps"]  # Every step's action came from the node.
    assert stats["requests"] == sum(s["calls"] for s in seen)
    assert stats["rows_per_call"] > 2.0  # Both actors' rows in a call, on average.
    assert all(s["mean_latency_ms"] > 0 for s in seen)
    time.sleep(1.0)
    assert not _ray_processes()


def test_nodes_that_others_wait_for_are_built_before_the_rest():
    """The evaluator (called by no node) starts after the nodes the first learner step needs,
    so that their start-up has the cores to itself."""
    assert RayLauncher(_fake_program())._waves() == [
        ["store", "worker_0", "worker_1"], ["clock", "trainer", "judge"]]
    spec = make_environment_spec(fakes.match_the_sign())
    config = ProgramConfig(num_actors=2, eval_episodes=2)
    program = make_agent_program(DQNBuilder(CONFIG, config.layout), fakes.match_the_sign, spec,
                                 config)
    assert RayLauncher(program)._waves() == [
        ["replay", "counter", "learner", "actor_0", "actor_1"], ["evaluator"]]
