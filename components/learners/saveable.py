"""save()/restore() of a learner's named variable groups (what its checkpoint holds)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from agentkit import core


class VariablesSaveable(core.Saveable):
    """save()/restore() of the variables in `_variable_groups()`, named by group and index."""

    def _variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        raise NotImplementedError

    def _state_variables(self) -> dict[str, tf.Variable]:
        state = {}
        for group, variables in self._variable_groups().items():
            if isinstance(variables, tf.Variable):
                state[group] = variables
                continue
            for i, variable in enumerate(variables):
                state[f"{group}/{i:03d}/{variable.name}"] = variable
        return state

    def save(self) -> core.State:
        return {name: np.asarray(v.numpy()) for name, v in self._state_variables().items()}

    def restore(self, state: core.State) -> None:
        variables = self._state_variables()
        missing = sorted(set(variables) - set(state))
        if missing:
            raise ValueError(f"checkpoint lacks {len(missing)} variables, e.g. {missing[:3]}")
        for name, variable in variables.items():
            variable.assign(state[name])
