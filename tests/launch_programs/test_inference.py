"""Central inference: an inference node answers every actor's observations in batches.

With a fixed greedy policy (the learner never steps) on seeded fake environments, the
adders must see the same streams as with local inference, for a feed-forward agent
(DQN) and a recurrent one (R2D2, whose core states the inference node keeps).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import tree

from agentkit.acting import ActingLayout
from agentkit.config import ConfigError
from agentkit.specs import make_environment_spec
from agents.dqn import DQNBuilder, DQNConfig
from agents.ppo import PPOBuilder, PPOConfig
from agents.r2d2 import R2D2Builder, R2D2Config
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.inference import InferenceNode, RemotePolicy
from launch_programs.threads import ThreadsLauncher
from tests import fakes

LAYOUT = ActingLayout(num_actors=2, num_envs_per_actor=4)  # Every program here acts so.
NEVER = 10**6  # A minimum replay size no test reaches: the weights stay the initial ones.
DQN = DQNConfig(hidden_sizes=(16,), head_hidden_size=16, min_replay_size=NEVER,
                max_replay_size=NEVER, epsilon_init=0.0, epsilon_final=0.0,
                actor_priorities=False, variable_update_period=10)
R2D2 = R2D2Config(sequence_length=8, period=4, burn_in=0, hidden_sizes=(16,), lstm_size=8,
                  head_hidden_size=16, min_replay_size=NEVER, max_replay_size=NEVER,
                  epsilon_base=1e-9, variable_update_period=10)


def _recording(builder_class):
    """The builder with every adder recording what it is given, one stream per adder (per
    environment, inside a PerEnvironmentAdders)."""

    class Recording(builder_class):
        def __init__(self, config):
            super().__init__(config, LAYOUT)
            self.streams: list[list] = []

        def _record(self, adder):
            if adder is None:
                return None
            stream: list = []
            self.streams.append(stream)
            add_first, add = adder.add_first, adder.add

            def record_first(timestep):
                stream.append(("first", np.array(timestep.observation)))
                add_first(timestep)

            def record(action, timestep, *extras):
                stream.append(("step", np.array(action), np.array(timestep.observation),
                               tree.map_structure(np.array, extras)))
                add(action, timestep, *extras)

            adder.add_first, adder.add = record_first, record
            return adder

        def make_adder(self, **kwargs):
            adder = super().make_adder(**kwargs)
            for inner in getattr(adder, "adders", [adder]):
                self._record(inner)
            return adder

    return Recording


def _run(builder, inference: str, steps: int = 400, deadline_ms: float = 50.0,
         environment=fakes.match_the_sign):
    spec = make_environment_spec(environment())
    config = ProgramConfig(num_actors=LAYOUT.num_actors,
                           num_envs_per_actor=LAYOUT.num_envs_per_actor, max_actor_steps=steps,
                           eval_episodes=0, print_every_s=0, inference=inference,
                           inference_deadline_ms=deadline_ms)
    program = make_agent_program(builder, environment, spec, config)
    result = ThreadsLauncher(program).launch()
    assert result.status == "completed", result.error and result.error.formatted
    return result


def _by_first_observation(streams):
    return {stream[0][1].tobytes(): stream for stream in streams if stream}


def _assert_same_streams(local, central, min_steps: int) -> int:
    local, central = _by_first_observation(local), _by_first_observation(central)
    assert set(local) == set(central) and len(local) >= 2  # The same environments, each once.
    compared = 0
    for key, stream in local.items():
        other = central[key]
        # The budget is the actors' together: under load one actor may take most of it, so
        # an environment's stream may be short in one run; every one is compared, and the
        # comparison as a whole must be long.
        n = min(len(stream), len(other))
        assert n >= 1
        for a, b in zip(stream[:n], other[:n]):
            assert a[0] == b[0]
            # Actions and observations exactly; the core states to float rounding (a batch
            # of 8 rows and one of 4 round the LSTM's products differently, by about 1e-7).
            tree.map_structure(np.testing.assert_array_equal, a[1:3], b[1:3])
            tree.map_structure(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5,
                                                                       atol=1e-6), a[3:], b[3:])
        compared += n
    assert compared >= min_steps
    return compared


@pytest.mark.parametrize("builder_class, config", [(DQNBuilder, DQN), (R2D2Builder, R2D2)],
                         ids=["dqn", "r2d2"])
def test_central_inference_gives_the_adders_the_same_streams(builder_class, config):
    local_builder = _recording(builder_class)(config)
    _run(local_builder, "local")
    central_builder = _recording(builder_class)(config)
    result = _run(central_builder, "central")
    _assert_same_streams(local_builder.streams, central_builder.streams, min_steps=100)
    stats = result.objects["inference"].stats()
    assert stats["rows"] >= 400 and stats["requests"] > stats["calls"]  # Batched across actors.
    assert stats["rows_per_call"] > 4.5  # More than one actor's 4 rows a call, on average.
    if builder_class is R2D2Builder:
        # The node keeps the core states: only episode starts' rows travel to it (episodes
        # are 10 steps), and the actions' core states come back for the adders' items.
        assert 0 < stats["state_rows_received"] < stats["rows"] / 4
        steps = [entry for stream in central_builder.streams for entry in stream
                 if entry[0] == "step"]
        assert all("core_state" in entry[3][0] for entry in steps)
    else:
        assert stats["state_rows_received"] == 0


def test_the_inference_node_answers_each_caller_its_own_rows():
    """Three callers at once: one policy call, each caller gets the rows of its observation."""
    import threading

    builder = DQNBuilder(DQN)
    spec = make_environment_spec(fakes.match_the_sign())
    networks = builder.make_networks(spec=spec)
    node = InferenceNode(builder=builder, spec=spec, variable_source=_Weights(networks),
                         batch_size=6, deadline_ms=2_000)
    server = threading.Thread(target=node.run, daemon=True)
    server.start()
    local = builder.make_policy(networks=networks, spec=spec)  # Same weights, greedy.
    observations = [np.random.default_rng(i).uniform(-1, 1, (2, 2)).astype(np.float32)
                    for i in range(3)]
    answers: dict[int, np.ndarray] = {}
    callers = [threading.Thread(target=lambda i=i: answers.__setitem__(
        i, RemotePolicy(node, f"c{i}")(observations[i]))) for i in range(3)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(10)
    node.stop()
    server.join(5)
    assert node.stats()["calls"] == 1 and node.stats()["rows"] == 6
    for i in range(3):
        np.testing.assert_array_equal(answers[i], np.asarray(local(observations[i])))


class _Weights:
    """A variable source serving a network's current values (the learner's role)."""

    def __init__(self, networks):
        self._networks = networks

    def get_variables(self, names):
        return [[v.numpy() for v in self._networks[name].variables] for name in names]


@pytest.mark.parametrize("builder, words", [
    (DQNBuilder(DQNConfig(), LAYOUT), "--inference=central: actors give new items their |TD|"),
    (PPOBuilder(PPOConfig(), LAYOUT), "--inference=central: PPO's actors wait for the learner"),
])
def test_an_agent_that_cannot_act_centrally_fails_in_one_line(builder, words):
    spec = make_environment_spec(fakes.match_the_sign())
    config = ProgramConfig(num_actors=2, num_envs_per_actor=4, inference="central")
    with pytest.raises(ConfigError) as e:
        make_agent_program(builder, fakes.match_the_sign, spec, config)
    assert str(e.value).startswith(words) and "\n" not in str(e.value)


def _serving(builder, batch_size=1, deadline_ms=1.0):
    """An inference node on its own thread, over fresh networks (weights from themselves)."""
    import threading

    spec = make_environment_spec(fakes.match_the_sign())
    networks = builder.make_networks(spec=spec)
    node = InferenceNode(builder=builder, spec=spec, variable_source=_Weights(networks),
                         batch_size=batch_size, deadline_ms=deadline_ms)
    server = threading.Thread(target=node.run, daemon=True)
    server.start()
    return node, server, networks, spec


def test_a_recurrent_caller_whose_states_the_node_lost_sends_them_again():
    """A restarted inference node (its states gone), or a retried call that had already run:
    the caller sends every row again and gets the answer it would have got."""
    builder = R2D2Builder(R2D2)
    node, server, networks, spec = _serving(builder)
    policy = builder.make_policy(networks=networks, spec=spec, actor_id=0, num_actors=1)
    remote = RemotePolicy(node, "r")
    observation = np.random.default_rng(0).uniform(-1, 1, (3, 2)).astype(np.float32)
    state = tree.map_structure(np.asarray, networks["q"].initial_state(3))
    try:
        first = remote(observation, state)
        received = node.stats()["state_rows_received"]
        node._states.clear()  # As after a restart of the node.
        second = remote(observation, first[2])
        assert node.stats()["state_rows_received"] == received + 3  # Every row, sent again.
        remote._step -= 2  # As a retried call: the node holds a later step than the caller's.
        third = remote(observation, second[2])
    finally:
        node.stop()
        server.join(5)
    expected = state
    for got in (first, second, third):
        actions, _, expected = policy(observation, expected)
        np.testing.assert_array_equal(got[0], np.asarray(actions))
        tree.map_structure(lambda x, y: np.testing.assert_allclose(x, np.asarray(y), rtol=1e-5,
                                                                   atol=1e-6), got[2], expected)


def test_callers_of_a_stopped_or_failed_node_are_answered_not_left_waiting():
    import threading

    # Stopped while a request waits for a batch that would never fill: it is answered, even
    # when the answer takes longer than the caller's 0.5 s polls (a first call's trace on a
    # slow machine; here a serve made 1.2 s slower).
    node, server, _, _ = _serving(DQNBuilder(DQN), batch_size=1000, deadline_ms=60_000)
    serve = node._serve
    node._serve = lambda batch: (time.sleep(1.2), serve(batch))
    outcome: list = []
    caller = threading.Thread(target=lambda: _call_into(node, outcome), daemon=True)
    caller.start()
    _wait_until_queued(node)
    time.sleep(0.3)  # The server, woken by the request, now waits for the batch to fill.
    node.stop()
    caller.join(5)
    server.join(5)
    assert not caller.is_alive() and not server.is_alive()
    assert len(outcome) == 1 and np.asarray(outcome[0]).shape == (2,)  # Its two actions.
    with pytest.raises(RuntimeError, match="the inference node failed"):  # None taken after.
        node.infer("late", np.zeros((1, 2), np.float32))
    # A node whose weights never come (the learner gone): its waiting callers get the error.
    spec = make_environment_spec(fakes.match_the_sign())
    broken = InferenceNode(builder=DQNBuilder(DQN), spec=spec, variable_source=_NoWeights())
    outcome.clear()
    caller = threading.Thread(target=lambda: _call_into(broken, outcome), daemon=True)
    caller.start()
    _wait_until_queued(broken)
    with pytest.raises(ConnectionError):
        broken.run()
    caller.join(5)
    assert not caller.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], ConnectionError)


class _NoWeights:
    def get_variables(self, names):
        time.sleep(0.5)
        raise ConnectionError("the learner is gone")


def _wait_until_queued(node, timeout_s: float = 10.0) -> None:
    """Until the caller's request waits in the node's queue: a fixed sleep raced the caller's
    thread on a loaded 2-core machine (the request came after the stop and got its error)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with node._lock:
            if node._queue:
                return
        time.sleep(0.01)
    raise AssertionError(f"no request reached the node's queue in {timeout_s} s")


def _call_into(node, outcome):
    try:
        outcome.append(RemotePolicy(node, "c")(np.zeros((2, 2), np.float32)))
    except Exception as e:  # noqa: BLE001 - what the caller got is the test's subject.
        outcome.append(e)


@pytest.mark.parametrize("agent, fields, environment", [
    ("impala", {"batch_size": 2, "unroll_length": 5}, fakes.match_the_sign),
    ("appo", {"batch_size": 2, "unroll_length": 5}, fakes.match_the_sign),
    ("rainbow", {"batch_size": 16, "min_replay_size": 64}, fakes.match_the_sign),
    ("d4pg", {"batch_size": 16, "min_replay_size": 64}, fakes.match_the_value),
])
def test_the_other_agents_act_through_the_inference_node(agent, fields, environment):
    from launch_programs.registry import get_agent

    builder_class = get_agent(agent)
    builder = builder_class(builder_class.config_class(**fields), LAYOUT)
    result = _run(builder, "central", steps=300, deadline_ms=5.0, environment=environment)
    stats = result.objects["inference"].stats()
    assert result.objects["counter"].get_counts()["actor_steps"] >= 300
    assert stats["rows"] >= 300 and stats["calls"] > 0


def test_the_command_line_refuses_an_agent_that_cannot_act_centrally(tmp_path, capsys):
    from launch_programs import run

    code = run.main(["--agent=dqn", "--env=gym:CartPole-v1", "--inference=central",
                     f"--logdir={tmp_path}/run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("error: --inference=central: actors give new items their |TD|")
    assert not (tmp_path / "run").exists()  # Refused before the run directory was made.
