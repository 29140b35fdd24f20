"""Factories for Reverb tables and their rate limiters.

The rate limiter is what fixes the learn/act ratio whatever the number of
actors: with `samples_per_insert = s`, the table lets the learner sample
about `s` items per inserted item, blocking whichever side runs ahead by more
than `error_buffer` samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import reverb
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec
from agentkit.types import Transition
from components.adders.nests import discount_leaves


def make_rate_limiter(
    samples_per_insert: float | None,
    min_replay_size: int,
    error_buffer: float | None = None,
    tolerance_rate: float = 0.1,
) -> reverb.rate_limiters.RateLimiter:
    """`MinSize` without a ratio, else `SampleToInsertRatio`.

    `error_buffer` defaults to the larger of `tolerance_rate * min_replay_size *
    samples_per_insert` and Reverb's minimum window of
    `2 * max(1, samples_per_insert)` (narrower windows raise in Reverb).
    """
    if min_replay_size < 1:
        raise ValueError(f"min_replay_size must be >= 1, got {min_replay_size}")
    if not samples_per_insert:
        return reverb.rate_limiters.MinSize(min_replay_size)
    if samples_per_insert < 0:
        raise ValueError(f"samples_per_insert must be > 0, got {samples_per_insert}")
    minimum_window = 2.0 * max(1.0, samples_per_insert)
    if error_buffer is None:
        error_buffer = max(minimum_window + 1.0, tolerance_rate * min_replay_size * samples_per_insert)
    if error_buffer < minimum_window:
        raise ValueError(
            f"error_buffer must be >= 2 * max(1, samples_per_insert) = {minimum_window}, "
            f"got {error_buffer}"
        )
    return reverb.rate_limiters.SampleToInsertRatio(
        samples_per_insert=samples_per_insert,
        min_size_to_sample=min_replay_size,
        error_buffer=error_buffer,
    )


def _spec_to_tensor_spec(spec) -> tf.TensorSpec:
    return tf.TensorSpec(shape=spec.shape, dtype=tf.as_dtype(spec.dtype))


def nstep_return_signature(rewards: Any, discounts: Any) -> tuple[Any, Any]:
    """The signatures of an n-step transition's R and D for reward and discount specs.

    Scalar reward and discount: `TensorSpec((), float32)` each. Otherwise both
    are nests of the reward's structure; R^i has the broadcast shape of reward
    leaf i and its discount (the discount itself where it is one array, else
    its leaf i), D^i the shape of that discount. Every leaf is float32, as the
    adders write them.
    """
    reward_leaves = tree.flatten(rewards)
    returns, bootstraps = [], []
    for reward, discount in zip(reward_leaves, discount_leaves(rewards, discounts)):
        try:
            shape = np.broadcast_shapes(tuple(reward.shape), tuple(discount.shape))
        except ValueError as error:
            raise ValueError(f"reward and discount specs do not broadcast: {error}") from None
        returns.append(tf.TensorSpec(shape, tf.float32))
        bootstraps.append(tf.TensorSpec(tuple(discount.shape), tf.float32))
    if not tree.is_nested(rewards):
        return returns[0], bootstraps[0]
    return tree.unflatten_as(rewards, returns), tree.unflatten_as(rewards, bootstraps)


def transition_signature(spec: EnvironmentSpec, extras_spec: Any = None) -> Transition:
    """The signature of n-step transition items for an environment.

    Nested observations keep their structure; rewards and discounts give R and
    D as `nstep_return_signature` says. With `extras_spec` (per environment,
    as the adder's) items carry `extras`; without it `extras=()`, a nest with
    no leaves, so items keep their five columns.
    """
    observation = tree.map_structure(_spec_to_tensor_spec, spec.observations)
    reward, discount = nstep_return_signature(spec.rewards, spec.discounts)
    extras = () if extras_spec is None else tree.map_structure(_spec_to_tensor_spec, extras_spec)
    return Transition(
        observation=observation,
        action=tree.map_structure(_spec_to_tensor_spec, spec.actions),
        reward=reward,
        discount=discount,
        next_observation=observation,
        extras=extras,
    )


def make_replay_table(
    name: str,
    signature,
    max_replay_size: int,
    rate_limiter: reverb.rate_limiters.RateLimiter,
    prioritized: bool = False,
    priority_exponent: float = 0.6,
) -> reverb.Table:
    """A FIFO-evicted table with a uniform or prioritized sampler."""
    if max_replay_size < 1:
        raise ValueError(f"max_replay_size must be >= 1, got {max_replay_size}")
    sampler = (
        reverb.selectors.Prioritized(priority_exponent)
        if prioritized
        else reverb.selectors.Uniform()
    )
    return reverb.Table(
        name=name,
        sampler=sampler,
        remover=reverb.selectors.Fifo(),
        max_size=max_replay_size,
        rate_limiter=rate_limiter,
        signature=signature,
    )


def make_queue_table(name: str, signature, max_size: int, batch_size: int = 1) -> reverb.Table:
    """A FIFO queue: each item is sampled once, then removed.

    Inserts block while `max_size` items wait (actors cannot run ahead of the
    learner); samples block while it is empty. It must hold more than
    `batch_size + 1` items, or actors and learner can deadlock at episode ends.
    """
    if max_size <= batch_size + 1:
        raise ValueError(f"a queue for batches of {batch_size} needs max_size > "
                         f"{batch_size + 1}, got {max_size}")
    return reverb.Table.queue(name, max_size, signature=signature)
