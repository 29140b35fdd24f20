"""The builder contract: what an agent supplies so that one generic program can run it.

A builder makes every part of an agent from its config and the acting layout
(`agentkit.acting.ActingLayout`: actors, environments per actor, groups), both
given when it is made and never changed after: each method depends only on
them and its arguments, so the builder can travel to any node (another
process) and make the same parts there. The generic program
(`launch_programs.agent_program.make_agent_program`) calls these methods, by
keyword, inside whichever node needs each part:

    node        when                      calls
    (command)   before launch             preset(env), program_preset(env), the constructor
                                          (a layout it cannot run fails here), make_networks
                                          (a mismatch fails here)
    replay      at construction           make_replay_tables
    learner     at construction           make_networks, make_dataset_iterator, make_learner
    inference   at construction           central_inference_problem (when the graph is
    (central)                             made), make_networks, make_policy (actor 0 of 1),
                                          make_actor(adder=None) for its weights
    actor_i     at construction           make_networks, make_adder (one per group of
                                          environments), make_policy, make_actor
                                          (central: a stand-in policy, no variable source)
    evaluator   at construction           make_networks, make_policy(evaluation=True),
                                          make_actor(adder=None)

A builder knows nothing of launchers, processes or node names. Methods with
a default here are optional.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from agentkit import core
from agentkit.acting import ActingLayout
from agentkit.adders import BatchedAdder
from agentkit.policies import FeedForwardPolicy, RecurrentPolicy
from agentkit.presets import family_preset, family_program_preset
from agentkit.specs import EnvironmentSpec

if TYPE_CHECKING:  # Annotations only: the vocabulary imports no replay code at run time.
    import reverb

    from agentkit.counting import Counter
    from agentkit.loggers import Logger

ConfigT = TypeVar("ConfigT")
# An agent's networks by name ("q", "policy", "critic"...): what its policy,
# actor and learner share, and what the learner serves to actors by name.
Networks = dict[str, Any]


class ActorLearnerBuilder(abc.ABC, Generic[ConfigT]):
    """Makes an agent's tables, dataset, adders, policies, actors and learner from a config.

    Subclasses set `config_class` (a validated dataclass; every field becomes
    a command-line flag, and its family classmethods and `program_presets` are the
    agent's presets, `agentkit.presets`).
    """

    config_class: ClassVar[type]

    def __init__(self, config: ConfigT, layout: ActingLayout | None = None):
        """`layout`: how the program acts (None: one actor of one environment, as when a test
        makes the parts by hand). A builder whose parts depend on it reads it here, and raises
        ConfigError, naming the flag, for a layout it cannot run."""
        self.config = config
        self.layout = ActingLayout() if layout is None else layout

    @classmethod
    def preset(cls, env: str) -> dict[str, Any]:
        """Config values that suit the environment named `env` ("atari:Pong"): those of the
        config class's classmethod named after its family (`atari()`, `classic_control()`;
        `agentkit.presets`), {} when it has none. Flags the user gives override these."""
        return family_preset(cls.config_class, env)

    @classmethod
    def program_preset(cls, env: str) -> dict[str, Any]:
        """Program flags (fields of `launch_programs.ProgramConfig`: actors, environments per
        actor, evaluation) that suit this agent on `env`: the config class's
        `program_presets[family]`, beside its config values; {} keeps the command line's
        defaults. Flags the user gives override these."""
        return family_program_preset(cls.config_class, env)

    def central_inference_problem(self) -> str | None:
        """Why this agent cannot act through a policy that another node holds and batches
        over many actors (central inference), or None when it can. Its actors then get
        `make_actor(policy=<a stand-in with the policy's calling convention>,
        variable_source=None)`: an actor that needs weights of its own (for priorities) or
        waits on the learner each round cannot."""
        return None

    @abc.abstractmethod
    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        """Fresh networks for `spec`; raises ValueError (or ConfigError) when they cannot fit
        it. Every node that acts or learns makes its own copy."""

    @abc.abstractmethod
    def make_replay_tables(self, *, spec: EnvironmentSpec) -> list[reverb.Table]:
        """The Reverb tables (with their rate limiters) that the replay node serves."""

    @abc.abstractmethod
    def make_dataset_iterator(
        self, *, replay_address: str, should_stop: Callable[[], bool] | None = None
    ) -> Iterator[Any]:
        """The learner's batches from replay; it ends (StopIteration) once `should_stop()`."""

    @abc.abstractmethod
    def make_adder(self, *, replay_client: reverb.Client, spec: EnvironmentSpec,
                   num_envs: int) -> BatchedAdder:
        """The adder of one group of `num_envs` lock-stepped environments (1 included), writing
        to the replay behind `replay_client`. An agent whose items come from one environment
        each wraps one adder per environment in `components.adders.PerEnvironmentAdders`."""

    @abc.abstractmethod
    def make_policy(self, *, networks: Networks, spec: EnvironmentSpec,
                    evaluation: bool = False, seed: int = 0, actor_id: int = 0,
                    num_actors: int = 1) -> FeedForwardPolicy | RecurrentPolicy:
        """The behaviour policy of actor `actor_id` of `num_actors` (its own exploration), or
        with `evaluation` the evaluator's. Its calling convention is one of
        `agentkit.policies`' (the actor `make_actor` makes must know it); a policy that is
        also a `ServablePolicy` can be exported (`launch_programs.evaluate --export`)."""

    @abc.abstractmethod
    def make_actor(self, *, policy: Any, networks: Networks,
                   adder: BatchedAdder | None,
                   variable_source: core.VariableSource | None) -> core.Actor:
        """A batched actor over one group of environments. `adder` is None for the
        evaluator; `variable_source` (the learner) is None for an actor whose networks
        another actor of the same node updates."""

    @abc.abstractmethod
    def make_learner(self, *, networks: Networks, spec: EnvironmentSpec,
                     iterator: Iterator[Any], replay_address: str | None,
                     counter: Counter | None = None, logger: Logger | None = None,
                     seed: int = 0) -> core.Learner:
        """The learner over `iterator`'s batches. `replay_address` reaches the tables for
        priority updates (None: no write-back, as in tests). `seed` (the run's `--seed`)
        seeds the learner's own draws (SAC's actions, PPO's minibatch order); the networks'
        initial weights are fixed by the same seed where `networks` were made."""
