"""Target networks that trail the online ones: made as copies of the online networks
(`target_copies`, from the builder's one network hook), then a copy every N steps, or Polyak
averaging (`TargetUpdate`)."""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf


class TargetUpdate:
    """theta' <- theta every `period` learner steps, or theta' <- (1 - tau) theta' + tau theta
    after every step when `tau > 0`.

    `pairs` are (target, online) modules with the same variables in the same
    order (a target built as a copy of its online network). Call `update`
    inside the compiled step, after the step count was incremented.
    """

    def __init__(self, pairs: Sequence[tuple[snt.Module, snt.Module]], period: int = 1,
                 tau: float = 0.0):
        if period < 1:
            raise ValueError(f"target update period must be >= 1, got {period}")
        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"target update tau must be in [0, 1], got {tau}")
        self._pairs = [(t, s) for target, online in pairs
                       for t, s in zip(target.variables, online.variables, strict=True)]
        self._period = int(period)
        self._tau = float(tau)

    def update(self, num_steps: tf.Variable) -> None:
        if self._tau > 0:
            for target, source in self._pairs:
                target.assign((1.0 - self._tau) * target + self._tau * source)
        else:  # An explicit cond: the learner's step is traced without autograph.
            def copy() -> tf.Tensor:
                for target, source in self._pairs:
                    target.assign(source)
                return tf.constant(True)

            tf.cond(tf.equal(num_steps % self._period, 0), copy, lambda: tf.constant(False))


def _mismatch(online: snt.Module, other: snt.Module) -> str | None:
    """How two networks' variables differ (count, or the first shape that does), or None."""
    a, b = online.variables, other.variables
    if len(a) != len(b):
        return f"{len(a)} variables against {len(b)}"
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return (f"{x.name} {x.shape.as_list()} {x.dtype.name} against "
                    f"{y.name} {y.shape.as_list()} {y.dtype.name}")
    return None


def target_copies(online: dict[str, snt.Module],
                  fresh: dict[str, snt.Module]) -> dict[str, snt.Module]:
    """Target networks: `fresh` (a second call of the builder's `make_networks`, so that an
    agent overriding that one hook gets matching targets) holding `online`'s values, one
    for each online network. A target that does not match its online network fails in one
    line naming the hook."""
    targets = {}
    for name in online:
        if name not in fresh:
            raise ValueError(f"make_networks: a second call gave no '{name}' network for the "
                             f"target (the learner's targets are made by it)")
        problem = _mismatch(online[name], fresh[name])
        if problem:
            raise ValueError(f"make_networks: the target '{name}' made by a second call does "
                             f"not match the online network ({problem}); the learner's targets "
                             f"are made by it: it must build the same networks every call")
        for target, source in zip(fresh[name].variables, online[name].variables):
            target.assign(source)
        targets[name] = fresh[name]
    return targets
