"""BatchedEnvironment: auto-reset, and simulators that raise."""

from __future__ import annotations

import numpy as np
import pytest

from components.environments import BatchedEnvironment, EnvironmentFailure
from tests import fakes


def test_a_failing_environment_is_reset_and_counted():
    failures = []
    flaky = fakes.FlakyEnvironment(fakes.discrete_environment(episode_length=10), (3,))
    env = BatchedEnvironment([flaky, fakes.discrete_environment(episode_length=10)],
                             max_failures=2, on_failure=lambda i, e: failures.append((i, str(e))))
    env.reset()
    types = []
    for _ in range(4):
        types.append(env.step(np.zeros(2, np.int32)).step_type.tolist())
    # Step 3 of environment 0 raised: it came back FIRST (reset); the other went on.
    assert types == [[1, 1], [1, 1], [0, 1], [1, 1]]
    assert env.failed_episodes == 1
    assert failures == [(0, "simulator crashed at step 3")]


def test_past_the_limit_the_error_is_raised_with_the_environment_named():
    flaky = fakes.FlakyEnvironment(fakes.discrete_environment(episode_length=10), (2,),
                                   fail_resets=5)
    env = BatchedEnvironment([fakes.discrete_environment(), flaky], max_failures=3)
    env._last[:] = False  # As after a reset, without calling the failing reset.
    env.step(np.zeros(2, np.int32))
    # Step 2 raises, then every reset raises: failures 1, 2, 3 are absorbed, the 4th is not.
    with pytest.raises(EnvironmentFailure, match=r"environment 1 raised RuntimeError: "
                                                 r"simulator crashed during reset \(4 failed"):
        env.step(np.zeros(2, np.int32))
    assert env.failed_episodes == 4


def test_zero_failures_allowed_raises_at_once():
    flaky = fakes.FlakyEnvironment(fakes.discrete_environment(episode_length=10), (1,))
    env = BatchedEnvironment([flaky])
    env.reset()
    with pytest.raises(EnvironmentFailure, match="limit 0"):
        env.step(np.zeros(1, np.int32))
    assert env.failed_episodes == 1


def test_step_async_runs_the_step_in_a_worker_and_step_wait_returns_it():
    def make():
        return BatchedEnvironment([fakes.discrete_environment(episode_length=3, seed=s)
                                   for s in (1, 2)])

    a, b = make(), make()
    a.reset()
    b.reset()
    for _ in range(7):
        a.step_async(np.ones(2, np.int32))
        got, want = a.step_wait(), b.step(np.ones(2, np.int32))
        assert got.step_type.tolist() == want.step_type.tolist()
        np.testing.assert_array_equal(got.observation, want.observation)
    a.step_async(np.ones(2, np.int32))
    with pytest.raises(RuntimeError, match="twice"):
        a.step_async(np.ones(2, np.int32))
    a.step_wait()
    with pytest.raises(RuntimeError, match="without step_async"):
        a.step_wait()
    a.close()


def test_a_failure_in_an_async_step_is_raised_by_step_wait():
    flaky = fakes.FlakyEnvironment(fakes.discrete_environment(episode_length=10), (2,))
    env = BatchedEnvironment([flaky], max_failures=0)
    env.reset()
    env.step_async(np.zeros(1, np.int32))
    env.step_wait()
    env.step_async(np.zeros(1, np.int32))
    with pytest.raises(EnvironmentFailure, match="simulator crashed at step 2"):
        env.step_wait()
    env.close()
