"""Exact rollouts from the BatchedRolloutAdder, across episode ends, resets and a failure.

Two environments step in lock-step for 13 steps with T = 4. Observations are
100 k + s (environment k, loop step s), actions 10 + s, rewards 1 + s, and the
logits (s, -s): every field is checkable. Each environment's script gives the
kind of timestep that step s returned: M(id), T(erminated), U (truncated, a
LAST with discount 1), F(IRST: the reset after a LAST, or after a failure).
"""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
import reverb
import tensorflow as tf

from agentkit.specs import make_environment_spec
from components.adders import BatchedRolloutAdder, rollout_signature
from components.datasets import make_single_sample_iterator
from tests import fakes

T, K, STEPS = 4, 2, 13
# Environment 0 terminates every 3 steps; environment 1 truncates at step 2 and its
# simulator fails at step 4 (F without a LAST before it).
SCRIPTS = ["MTFMMTFMMTFMM", "MMUFFMMMMMMMM"]
EXTRAS_SPEC = {"logits": tf.TensorSpec((2,), tf.float32),
               "policy_version": tf.TensorSpec((), tf.int64)}
TYPES = {"M": dm_env.StepType.MID, "T": dm_env.StepType.LAST, "U": dm_env.StepType.LAST,
         "F": dm_env.StepType.FIRST}


def _timestep(s: int) -> dm_env.TimeStep:
    """The batched timestep that loop step s returned (s = -1: the first reset)."""
    kinds = ["F" if s < 0 else script[s] for script in SCRIPTS]
    return dm_env.TimeStep(
        step_type=np.array([TYPES[c] for c in kinds], np.int8),
        reward=np.array([0.0 if c == "F" else 1.0 + s for c in kinds], np.float32),
        discount=np.array([0.0 if c == "T" else 1.0 for c in kinds], np.float32),
        observation=np.array([100 * k + s + 1 for k in range(K)], np.float32))


def _expected_steps():
    """Per loop step s: (o_s, a_s, r, d, logits, mask) for each environment, by the rule."""
    rows = []
    for s in range(STEPS):
        row = []
        for k in range(K):
            kind = SCRIPTS[k][s]
            mask = 0.0 if kind == "F" else 1.0
            row.append((100 * k + s, 10 + s, (1.0 + s) * mask,
                        0.0 if kind in "TF" else 1.0, (s, -s), mask))
        rows.append(row)
    return rows


def test_rollouts_cross_episode_ends_and_mask_the_reset_steps(reverb_server_factory):
    spec = make_environment_spec(fakes.discrete_environment(observation_shape=()))
    server, client = reverb_server_factory([reverb.Table.queue(
        "queue", 100, signature=rollout_signature(spec, T, K, EXTRAS_SPEC))])
    adder = BatchedRolloutAdder(client, "queue", K, T, EXTRAS_SPEC)
    adder.add_first(_timestep(-1))
    for s in range(STEPS):
        extras = {"logits": np.tile(np.array([s, -s], np.float32), (K, 1)),
                  "policy_version": np.full(K, s // T, np.int64)}
        adder.add(np.full(K, 10 + s, np.int32), _timestep(s), extras)
    adder.close()  # The 13th step began a rollout that no round finished: dropped.
    assert adder.items_written == STEPS // T == 3
    assert client.server_info()["queue"].current_size == 3
    samples = make_single_sample_iterator(f"localhost:{server.port}", "queue",
                                          rate_limiter_timeout_ms=100)
    expected = _expected_steps()
    for i in range(3):
        d = next(samples).data
        assert d["observation"].shape == (T + 1, K) and d["action"].shape == (T, K)
        # o_0..o_T: the next rollout starts at this one's bootstrap observation.
        np.testing.assert_array_equal(
            d["observation"], [[100 * k + s for k in range(K)] for s in range(i * T, i * T + T + 1)])
        rows = expected[i * T:(i + 1) * T]
        np.testing.assert_array_equal(d["action"], [[r[1] for r in row] for row in rows])
        np.testing.assert_array_equal(d["reward"], [[r[2] for r in row] for row in rows])
        np.testing.assert_array_equal(d["discount"], [[r[3] for r in row] for row in rows])
        np.testing.assert_array_equal(d["mask"], [[r[5] for r in row] for row in rows])
        np.testing.assert_array_equal(d["extras"]["logits"], [[r[4] for r in row] for row in rows])
        np.testing.assert_array_equal(d["extras"]["policy_version"], np.full((T, K), i))
        assert d["extras"]["policy_version"].dtype == np.int64


def test_a_rollout_adder_needs_add_first_and_first_timesteps(reverb_server_factory):
    spec = make_environment_spec(fakes.discrete_environment(observation_shape=()))
    _, client = reverb_server_factory([reverb.Table.queue(
        "queue", 10, signature=rollout_signature(spec, T, K, EXTRAS_SPEC))])
    adder = BatchedRolloutAdder(client, "queue", K, T, EXTRAS_SPEC)

    with pytest.raises(ValueError, match="before add_first"):
        adder.add(np.zeros(K, np.int32), _timestep(0), {})
    with pytest.raises(ValueError, match="FIRST timesteps in every slot"):
        adder.add_first(_timestep(0))
    adder.close()
