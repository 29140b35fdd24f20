"""A policy exported as a TensorFlow SavedModel: served anywhere TensorFlow runs, without
this toolkit.

A servable policy (`agentkit.policies.ServablePolicy`; every policy in components.actors)
has `spec`, `core_size` (0 for a feed-forward policy, else its LSTM's size) and `serve`, the policy in
TensorFlow ops only: `serve(observation)`, or `serve(observation, state)` with
state = (hidden, cell), returns a dict of tensors with "actions" (and "state" when
recurrent). `export_policy` saves it with one signature, `serving_default`:

    inputs   observation [B, ...] (a nested observation: observation_<path> each),
             and, recurrent, core_state_hidden and core_state_cell [B, core_size]
             (zeros at an episode's first step)
    outputs  actions [B, ...], what the policy computes them from (q_values or logits),
             and, recurrent, core_state_hidden and core_state_cell (the next step's state)

    model = tf.saved_model.load(directory)
    actions = model.signatures["serving_default"](observation=batch)["actions"]

Random draws (epsilon-greedy, sampling) come from the policy's TensorFlow generator, saved
with its state at export: a sampling policy's served draws are not the ones its numpy sampler
makes in the toolkit, but they follow the same distribution.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf
import tree

from agentkit.policies import ServablePolicy
from components.compiled import batched_signature, core_state_signature

SIGNATURE = "serving_default"
STATE_NAMES = ("core_state_hidden", "core_state_cell")


class ExportError(ValueError):
    """A policy that cannot be served: one line naming what it lacks."""


def _observation_names(observation_specs: Any) -> list[str]:
    paths = [path for path, _ in tree.flatten_with_path(observation_specs)]
    if paths == [()]:
        return ["observation"]
    return ["observation_" + "_".join(str(p) for p in path) for path in paths]


def serving_function(policy: Any) -> tf.types.experimental.GenericFunction:
    """`policy.serve` as a tf.function of named flat inputs and a dict of outputs."""
    if not isinstance(policy, ServablePolicy):
        raise ExportError(f"the policy {type(policy).__name__} has no serve(), spec and "
                          f"core_size: it cannot be exported (agentkit.policies.ServablePolicy)")
    observation = batched_signature(policy.spec.observations)
    names = _observation_names(observation)
    flat = [tf.TensorSpec(s.shape, s.dtype, name=n) for s, n in zip(tree.flatten(observation), names)]
    core_size = int(policy.core_size)
    state = [tf.TensorSpec(s.shape, s.dtype, name=n)
             for s, n in zip(core_state_signature(core_size), STATE_NAMES)] if core_size else []

    def serve(*inputs):
        observations = tree.unflatten_as(observation, list(inputs[:len(flat)]))
        if not core_size:
            return dict(policy.serve(observations))
        outputs = dict(policy.serve(observations, tuple(inputs[len(flat):])))
        outputs.update(zip(STATE_NAMES, outputs.pop("state")))
        return outputs

    return tf.function(serve, input_signature=flat + state, autograph=False)


def export_policy(policy: Any, directory: str) -> dict[str, Any]:
    """Saves `policy` (its network's variables and its generator's state as they are now) as a
    SavedModel in `directory`; returns its signature's input and output names."""
    function = serving_function(policy)
    concrete = function.get_concrete_function()
    module = tf.Module()
    module.policy = policy  # Tracks the network's variables and the random generator.
    module.serve = function
    os.makedirs(directory, exist_ok=True)
    tf.saved_model.save(module, directory, signatures={SIGNATURE: concrete})
    outputs = concrete.structured_outputs
    return {"signature": SIGNATURE,
            "inputs": [s.name for s in concrete.structured_input_signature[0]],
            "outputs": sorted(outputs)}
