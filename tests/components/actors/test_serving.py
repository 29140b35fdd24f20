"""Every agent's evaluation policy exported as a SavedModel and served in a fresh process that
imports TensorFlow only: the same actions as the toolkit's policy on the same observations
(a sampling policy: the same logits and argmax, its draws from the softmax)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from agentkit.acting import ActingLayout
from agentkit.specs import make_environment_spec
from components.actors.serving import ExportError, export_policy
from launch_programs.registry import get_agent
from tests import fakes
from tests.commands import user_env

# Loads and calls the SavedModel in a process of its own; refuses to run if a toolkit package
# was imported (plain TensorFlow is all a server needs).
SERVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
answers = []
for request in json.load(open(sys.argv[1])):
    serve = tf.saved_model.load(request["model"]).signatures["serving_default"]
    state, steps = None, []
    for observation in request["observations"]:
        inputs = {"observation": tf.constant(np.array(observation, np.float32))}
        if request["core_size"]:
            if state is None:
                zeros = tf.zeros([len(observation), request["core_size"]])
                state = {"core_state_hidden": zeros, "core_state_cell": zeros}
            inputs.update(state)
        out = serve(**inputs)
        if request["core_size"]:
            state = {k: out[k] for k in ("core_state_hidden", "core_state_cell")}
        steps.append({k: v.numpy().tolist() for k, v in out.items()})
    answers.append(steps)
toolkit = [m for m in sys.modules if m.split(".")[0] in
           ("agentkit", "components", "agents", "launch_programs", "sonnet", "tests")]
assert not toolkit, toolkit
print(json.dumps(answers))
"""

STEPS, BATCH = 3, 5


def _served(tmp_path, requests):
    """[(model directory, observations per step, core size)] -> each one's outputs per step,
    from one fresh process."""
    path = tmp_path / "requests.json"
    path.write_text(json.dumps([{"model": str(d), "observations": [o.tolist() for o in obs],
                                 "core_size": c} for d, obs, c in requests]))
    script = tmp_path / "serve.py"
    script.write_text(SERVE)
    done = subprocess.run([sys.executable, str(script), str(path)],
                          cwd=tmp_path, env=user_env(TF_CPP_MIN_LOG_LEVEL="2"),
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _policy(agent, spec, seed=7, **config):
    builder_class = get_agent(agent)
    builder = builder_class(builder_class.config_class(**config), layout=ActingLayout())
    networks = builder.make_networks(spec=spec)
    return builder.make_policy(networks=networks, spec=spec, evaluation=True, seed=seed)


def _toolkit_steps(policy, observations):
    """The toolkit's own calls: actions (and q-values / logits / actions' dtype) per step."""
    state, out = None, []
    for observation in observations:
        if policy.core_size:
            if state is None:
                zeros = np.zeros([len(observation), policy.core_size], np.float32)
                state = (zeros, zeros)
            actions, extras, state = policy(observation, state)
        else:
            result = policy(observation)
            actions, extras = result if isinstance(result, tuple) else (result, {})
        out.append((np.asarray(actions), extras))
    return out


DISCRETE = [("dqn", {}), ("dqn", {"epsilon_eval": 0.5}), ("rainbow", {}),
            ("r2d2", {"lstm_size": 8}), ("r2d2", {"lstm_size": 8, "epsilon_eval": 0.5}),
            ("ppo", {}), ("a2c", {}), ("impala", {}), ("impala", {"lstm_size": 8}),
            ("appo", {})]


def test_every_discrete_policy_serves_the_toolkits_actions(tmp_path):
    """Greedy and epsilon-greedy policies: the very actions (the generator's state is saved
    with the model); sampling ones: the same logits, and the argmax when greedy."""
    spec = make_environment_spec(fakes.discrete_environment(num_actions=4, observation_shape=(6,)))
    rng = np.random.default_rng(0)
    observations = [rng.normal(size=(BATCH, 6)).astype(np.float32) for _ in range(STEPS)]
    exported, requests = [], []
    for i, (agent, config) in enumerate(DISCRETE):
        policy = _policy(agent, spec, **config)
        names = export_policy(policy, str(tmp_path / f"model{i}"))
        assert names["inputs"][0] == "observation", names
        state = ["core_state_cell", "core_state_hidden"] if policy.core_size else []
        values = "q_values" if agent in ("dqn", "rainbow", "r2d2") else "logits"
        assert names["outputs"] == sorted(["actions", values] + state), (agent, names)
        exported.append(policy)
        requests.append((tmp_path / f"model{i}", observations, policy.core_size))
    served = _served(tmp_path, requests)
    for (agent, config), policy, answers in zip(DISCRETE, exported, served):
        # The same policy after its export: its generator starts where the saved one does.
        toolkit = _toolkit_steps(policy, observations)
        assert len(answers) == STEPS
        for answer, (actions, extras) in zip(answers, toolkit):
            assert np.asarray(answer["actions"]).dtype.kind == "i"
            if "logits" in extras:
                np.testing.assert_allclose(answer["logits"], extras["logits"], rtol=1e-5,
                                           atol=1e-5, err_msg=f"{agent} {config}")
                if policy._greedy:
                    np.testing.assert_array_equal(answer["actions"], actions, f"{agent} {config}")
            else:
                np.testing.assert_array_equal(answer["actions"], actions, f"{agent} {config}")
    assert sum(getattr(p, "_greedy", True) for p in exported) >= 3  # Argmax ones compared too.


def test_a_sampled_policy_serves_draws_from_its_softmax(tmp_path):
    """PPO sampling at evaluation (its Atari preset's): the served draws of one observation,
    repeated 4,000 times, land on each action at the softmax's rate (within 3 points)."""
    spec = make_environment_spec(fakes.discrete_environment(num_actions=3, observation_shape=(4,)))
    policy = _policy("ppo", spec, evaluation_greedy=False)
    export_policy(policy, str(tmp_path / "model"))
    observation = np.tile(np.array([[0.5, -1.0, 2.0, 0.1]], np.float32), (4000, 1))
    answer = _served(tmp_path, [(tmp_path / "model", [observation], 0)])[0][0]
    logits = np.asarray(answer["logits"][0], np.float64)
    softmax = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    rates = np.bincount(answer["actions"], minlength=3) / 4000
    np.testing.assert_allclose(rates, softmax, atol=0.03)
    assert len(set(answer["actions"])) > 1  # Sampled, not argmax.


def test_continuous_policies_serve_the_toolkits_actions(tmp_path):
    """D4PG's deterministic policy, SAC's mode (its evaluation) and SAC's samples (the
    generator saved with its state)."""
    spec = make_environment_spec(fakes.continuous_environment(action_dim=2, observation_shape=(5,)))
    rng = np.random.default_rng(1)
    observations = [rng.normal(size=(BATCH, 5)).astype(np.float32) for _ in range(STEPS)]
    policies = [_policy("d4pg", spec), _policy("sac", spec)]
    builder = get_agent("sac")(get_agent("sac").config_class(), layout=ActingLayout())
    networks = builder.make_networks(spec=spec)
    policies.append(builder.make_policy(networks=networks, spec=spec, seed=3))  # Sampled.
    for i, policy in enumerate(policies):
        export_policy(policy, str(tmp_path / f"model{i}"))
    served = _served(tmp_path, [(tmp_path / f"model{i}", observations, 0)
                                for i in range(len(policies))])
    for policy, answers in zip(policies, served):
        toolkit = _toolkit_steps(policy, observations)
        for answer, (actions, _) in zip(answers, toolkit):
            np.testing.assert_allclose(answer["actions"], actions, rtol=1e-5, atol=1e-6)


def test_a_policy_without_serve_is_refused_in_one_line(tmp_path):
    class External:
        spec = None

        def __call__(self, observation):
            return observation

    with pytest.raises(ExportError, match="External has no serve"):
        export_policy(External(), str(tmp_path / "model"))
    assert not (tmp_path / "model").exists()


def test_every_agents_evaluation_policy_is_a_servable_policy_of_agentkit():
    """The calling convention and the export hook are agentkit's protocols (what an agent
    outside the repository implements), met by every built-in agent's policy."""
    from agentkit.policies import ServablePolicy
    from launch_programs.registry import AGENTS

    discrete = make_environment_spec(fakes.discrete_environment(num_actions=3))
    continuous = make_environment_spec(fakes.continuous_environment(action_dim=2))
    recurrent = []
    for agent in AGENTS:
        spec = continuous if agent in ("d4pg", "sac") else discrete
        for config in ({}, {"lstm_size": 8}) if agent == "impala" else ({},):
            policy = _policy(agent, spec, **config)
            assert isinstance(policy, ServablePolicy), agent
            if policy.core_size:  # The state's size is the network's LSTM's.
                recurrent.append((agent, policy.core_size))
    assert recurrent == [("impala", 8), ("r2d2", 128)]
