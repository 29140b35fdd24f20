"""Keeps tf.function's autograph out of libraries that need none of it.

While tracing, autograph rewrites the source of every Python function it
meets, recursively, unless the function's package is exempt (TensorFlow
exempts itself, NumPy and Keras). Sonnet's modules wrap every method in
name-scope helpers and hold no tensor-dependent control flow, yet rewriting
them took 1.0 s of the 1.7 s that tracing DQN's learner step took (CartPole's
MLP; 0.66 s without), paid at start-up by every learner, actor and
evaluator, under the GIL. Methods of a project network (a subclass of
`snt.Module`) are reached through Sonnet's wrappers and so are not rewritten
either: write their loops and branches with tf.cond / tf.while_loop (or
Python values), as the project's networks do.
"""

from __future__ import annotations

# Autograph's rule list has no public setter; TensorFlow is pinned at 2.15.
from tensorflow.python.autograph.core import config as _config

PACKAGES = ("sonnet", "reverb", "tree")


def skip_autograph_for(packages=PACKAGES) -> None:
    """Puts `packages` first on autograph's do-not-convert list (once each)."""
    present = {rule._prefix for rule in _config.CONVERSION_RULES}  # noqa: SLF001
    new = tuple(_config.DoNotConvert(p) for p in packages if p not in present)
    _config.CONVERSION_RULES = new + tuple(_config.CONVERSION_RULES)
