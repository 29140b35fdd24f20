"""Nests in the adders: fields checked against their first step, nested n-step returns, and
extras cast to their spec's dtypes.

Each field of a step (observation, action, reward, discount, extras) is a
nest of arrays. Its structure, leaf shapes and dtypes are fixed by its first
value (or, for extras, by `extras_spec`); a later value that differs raises
one line naming the leaf, instead of an error from deep inside Reverb.

Rewards may be nests of arrays; a discount is either one array (usually a
scalar) broadcast over every reward leaf, or a nest of the reward's
structure. The n-step return and discount are computed leaf by leaf; the
discount of reward leaf j is its own leaf j, or the broadcast one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf
import tree

_PYTHON_DTYPES = {float: np.dtype(np.float64), int: np.asarray(0).dtype}


def numpy_dtype(spec: Any) -> np.dtype:
    """A spec's dtype as numpy's: extras keep theirs (float32 logits, int64 policy versions)."""
    return np.dtype(tf.as_dtype(spec.dtype).as_numpy_dtype)


def as_dtypes(extras: Any, dtypes: list[np.dtype]) -> Any:
    """`extras` with array leaves of the spec's dtypes; as given when they already are (the
    usual case: a structure walk per step is a measurable share of an adder's cost)."""
    leaves = tree.flatten(extras)
    if all(isinstance(x, np.ndarray) and x.dtype == d for x, d in zip(leaves, dtypes)):
        return extras
    converted = [np.asarray(x, d) for x, d in zip(leaves, dtypes)]
    return tree.unflatten_as(extras, converted)


def path_str(path: Sequence) -> str:
    """`['vec'][1]` for the path ('vec', 1) of `tree.flatten_with_path`."""
    return "".join(f"[{key!r}]" for key in path)


def _describe(shape: tuple, dtype: Any) -> str:
    return f"shape {tuple(shape)}" if dtype is None else f"shape {tuple(shape)} {np.dtype(dtype).name}"


def _as_array(x: Any) -> Any:
    return x if isinstance(x, (np.ndarray, np.generic)) else np.asarray(x)


def discount_leaves(reward: Any, discount: Any) -> list:
    """The discount of each reward leaf (flattened): `discount` itself for every leaf where it
    is not nested (a scalar, or one array broadcast over every leaf), else its leaves, which
    then must have the reward's structure. Works on values and on specs alike."""
    if not tree.is_nested(discount):
        return [discount] * len(tree.flatten(reward))
    try:
        tree.assert_same_structure(reward, discount)
    except (ValueError, TypeError) as error:
        raise ValueError("discount: must be one array for every reward leaf or a nest of the "
                         f"reward's structure: {error}") from None
    return tree.flatten(discount)


class Field:
    """One field of a step whose structure, leaf shapes and (if `check_dtype`) dtypes are those of
    `reference` (a first value, or a nest of specs with `shape` and `dtype`).

    `flatten(value)` returns a later value's leaves after checking them; for the usual case of
    one array it compares one shape and one dtype and walks no structure.
    """

    def __init__(self, name: str, reference: Any, origin: str = "the first step",
                 check_dtype: bool = True, batch_shape: tuple = ()):
        self.name = name
        self.origin = origin
        self.nested = tree.is_nested(reference)
        self.structure = tree.map_structure(lambda _: None, reference) if self.nested else None
        pairs = tree.flatten_with_path(reference) if self.nested else [((), reference)]
        self.paths = [path_str(path) for path, _ in pairs]
        leaves = [leaf if hasattr(leaf, "dtype") and hasattr(leaf, "shape") else _as_array(leaf)
                  for _, leaf in pairs]
        self.shapes = [tuple(batch_shape) + tuple(leaf.shape) for leaf in leaves]
        self.dtypes = [np.dtype(getattr(leaf.dtype, "as_numpy_dtype", leaf.dtype)) if check_dtype
                       else None for leaf in leaves]
        self.num_leaves = len(leaves)
        # The one leaf's shape and dtype, where the field is one array.
        self.shape, self.dtype = (None, None) if self.nested else (self.shapes[0], self.dtypes[0])

    def flatten(self, value: Any) -> list:
        """`value`'s leaves; a ValueError naming the leaf if they differ from the reference."""
        if not self.nested:
            try:  # The common case: one array of the right shape and dtype.
                if value.shape == self.shape and (self.dtype is None or value.dtype == self.dtype):
                    return [value]
            except AttributeError:  # A Python number (dm_env's discounts are): as cheap.
                kind = type(value)
                if ((kind is float or kind is int) and self.shape == ()
                        and (self.dtype is None or self.dtype == _PYTHON_DTYPES[kind])):
                    return [value]
            if tree.is_nested(value):
                raise ValueError(f"{self.name}: structure differs from {self.origin}: expected one "
                                 f"array, got {type(value).__name__} {value!r:.200}")
            self.check_leaves([value])
            return [value]
        try:
            tree.assert_same_structure(self.structure, value)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{self.name}: structure differs from {self.origin}: {error}") from None
        leaves = tree.flatten(value)
        self.check_leaves(leaves)
        return leaves

    def check_leaves(self, leaves: list) -> None:
        """Raises a ValueError naming the first leaf whose shape or dtype is not the reference's."""
        for leaf, path, shape, dtype in zip(leaves, self.paths, self.shapes, self.dtypes):
            array = _as_array(leaf)
            if array.shape != shape or (dtype is not None and array.dtype != dtype):
                where = "in extras_spec" if self.origin == "extras_spec" else f"at {self.origin}"
                got = _describe(array.shape, None if dtype is None else array.dtype)
                raise ValueError(f"{self.name}{path}: expected {_describe(shape, dtype)} "
                                 f"(as {where}), got {got}")

    def check_batch(self, num_envs: int) -> None:
        """Raises unless every leaf has a leading axis of `num_envs` (a batched field)."""
        for path, shape in zip(self.paths, self.shapes):
            if not shape or shape[0] != num_envs:
                raise ValueError(f"{self.name}{path}: expected a leading axis of num_envs = "
                                 f"{num_envs}, got shape {shape}")

    def unflatten(self, leaves: list) -> Any:
        return tree.unflatten_as(self.structure, leaves) if self.nested else leaves[0]


def extras_field(extras_spec: Any, batch_shape: tuple = ()) -> Field | None:
    """The extras field of an adder: None without extras_spec (or with one of no leaves)."""
    if extras_spec is None or not tree.flatten(extras_spec):
        return None
    return Field("extras", extras_spec, origin="extras_spec", batch_shape=batch_shape)


def check_no_extras(extras: Any) -> None:
    """Raises unless `extras` holds nothing (None, or a nest without leaves such as ())."""
    if extras is None or (type(extras) is tuple and not extras):  # The usual case: cheap.
        return
    if not (isinstance(extras, (tuple, list, dict)) and not tree.flatten(extras)):
        raise ValueError("add got extras, but this adder stores none: construct it with an "
                         "extras_spec (and its table with transition_signature(spec, extras_spec))")


def column_at(columns: Any, index: int, nested: bool) -> Any:
    """The references at `index` of a writer's history field (a nest of columns where `nested`)."""
    return tree.map_structure(lambda column: column[index], columns) if nested else columns[index]


class RewardLayout:
    """The reward and discount fields of a stream, fixed by its first step.

    `scalar`: both are single arrays of the batch shape (one float per
    environment): the adders keep their scalar fast path. Otherwise reward
    leaf j is discounted by `discount_index[j]`'s discount leaf; R_j has the
    broadcast shape of both, D_j the discount leaf's shape, and both are
    nests of the reward's structure (single arrays if the reward is one).
    """

    def __init__(self, reward: Any, discount: Any, batch_shape: tuple = ()):
        self.reward = Field("reward", reward, check_dtype=False)
        self.discount = Field("discount", discount, check_dtype=False)
        if batch_shape:
            self.reward.check_batch(batch_shape[0])
            self.discount.check_batch(batch_shape[0])
        discount_leaves(reward, discount)  # Validates the structures.
        batch = len(batch_shape)
        self.discount_index = ([0] * self.reward.num_leaves if not self.discount.nested
                               else list(range(self.reward.num_leaves)))
        self.scalar = (not self.reward.nested and not self.discount.nested
                       and self.reward.shapes[0] == self.discount.shapes[0] == tuple(batch_shape))
        self.reward_shapes = [s[batch:] for s in self.reward.shapes]  # Per environment.
        self.discount_shapes = [s[batch:] for s in self.discount.shapes]
        try:
            self.return_shapes = [np.broadcast_shapes(self.reward_shapes[j], self.discount_shapes[i])
                                  for j, i in enumerate(self.discount_index)]
        except ValueError as error:
            raise ValueError(f"reward and discount shapes do not broadcast: {error}") from None

    def nest(self, leaves: list) -> Any:
        """A nest of the reward's structure (R or D) from its leaves."""
        return self.reward.unflatten(leaves)

    def leaf_returns(self, rewards: list, discounts: list, gamma: float,
                     axis: int = 0) -> tuple[list, list]:
        """Per reward leaf, float32 (R, D) along time `axis` of its window of rewards (one
        array per reward leaf) and its discount's window (one per discount leaf)."""
        returns, bootstraps = [], []
        for j, i in enumerate(self.discount_index):
            r, d = nstep_return_arrays(rewards[j], discounts[i], gamma, axis)
            returns.append(r.astype(np.float32))
            bootstraps.append(d.astype(np.float32))
        return returns, bootstraps


def _pad(x: np.ndarray, lead: int, ndim: int) -> np.ndarray:
    """`x` with 1-axes inserted after its first `lead` axes, up to `ndim` axes (a free view),
    so that leaves of different ranks broadcast on their trailing axes."""
    missing = ndim - x.ndim
    return x if missing <= 0 else x.reshape(x.shape[:lead] + (1,) * missing + x.shape[lead:])


def nstep_return_arrays(rewards: np.ndarray, discounts: np.ndarray, gamma: float,
                        axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(R, D) of the n-step formula for one reward leaf, along time `axis` (the axes before it
    are batch axes, those after it the leaf's own): rewards [..., m, *rs], discounts
    [..., m, *ds]. R has shape [..., broadcast(rs, ds)], D shape [..., ds]."""
    lead = axis + 1
    ndim = max(rewards.ndim, discounts.ndim)
    r, d = _pad(rewards, lead, ndim), _pad(discounts, lead, ndim)
    m = r.shape[axis]
    before = (slice(None),) * axis
    factors = np.ones(d.shape)
    if m > 1:
        factors[before + (slice(1, None),)] = np.cumprod(d[before + (slice(None, -1),)], axis=axis)
    powers = (gamma ** np.arange(m)).reshape((m,) + (1,) * (ndim - lead))
    returns = (factors * powers * r).sum(axis=axis)
    bootstrap = gamma ** m * np.prod(discounts, axis=axis)
    return returns, bootstrap
