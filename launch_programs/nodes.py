"""The node objects of the generic agent program.

Each receives other nodes as objects with methods (the replay's `address()`,
the counter's `increment`/`get_counts`, the learner's `get_variables`), so it
runs the same whether they live in this process or another one.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import reverb

from agentkit.builders import ActorLearnerBuilder
from agentkit.checkpointing import Checkpointer
from agentkit.counting import Counter
from agentkit.environment_loop import EnvironmentLoop
from agentkit.loggers import make_logger
from agentkit.specs import EnvironmentSpec
from components.environments import BatchedEnvironment
from components.replay import ReplayServer
from launch_programs.inference import RemotePolicy
from launch_programs.schedules import resume_schedule

EnvironmentFactory = Callable[..., Any]  # (seed, evaluation) -> dm_env.Environment
# (seeds, evaluation) -> a batched environment with one environment per seed.
BatchedEnvironmentFactory = Callable[[list, bool], Any]

ACTOR_KEYS = ["wall_time_s", "actor_steps", "steps_per_s", "episode_return", "episode_length"]
LEARNER_KEYS = ["wall_time_s", "learner_steps", "learner_steps_per_s", "loss", "q_mean",
                "data_wait_fraction"]
EVALUATOR_KEYS = ["wall_time_s", "actor_steps", "learner_steps", "episode_return"]


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What every logging node of a run shares: where it writes, its clock, its seed."""

    logdir: str | None = None  # None: no CSVs, TensorBoard or checkpoints (tests).
    start_time: float = 0.0  # time.time() at launch: rows carry wall_time_s from it.
    seed: int = 0
    print_every_s: float = 5.0  # Progress line period (0: silent).

    def logger(self, label: str, keys: list[str], step_key: str, printing: bool = True):
        return make_logger(label, self.logdir, self.start_time,
                           self.print_every_s if printing else 0, keys, step_key=step_key)


@dataclasses.dataclass(frozen=True)
class ActingConfig:
    """How long each actor node acts and how many simulator failures it tolerates (its
    environments, their groups and its share of the actors are the builder's layout)."""

    max_env_failures: int = 10
    max_actor_steps: int = 100_000  # All actors together.

    @classmethod
    def from_program_config(cls, config) -> ActingConfig:
        return cls(max_env_failures=config.max_env_failures,
                   max_actor_steps=config.max_actor_steps)


def make_replay(*, builder: ActorLearnerBuilder, spec: EnvironmentSpec, port: int | None = None,
                checkpoint_dir: str | None = None,
                checkpoint_every_s: float = 300.0) -> ReplayServer:
    """The replay node; with `checkpoint_dir` it restores from and checkpoints there."""
    return ReplayServer(builder.make_replay_tables(spec=spec), port=port,
                        checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s)


class LearnerNode:
    """Steps the learner until stopped; serves its variables; checkpoints it."""

    def __init__(
        self,
        *,
        builder: ActorLearnerBuilder,
        spec: EnvironmentSpec,
        replay,
        counter,
        run: RunContext,
        checkpoint_every_s: float = 300.0,
    ):
        import tensorflow as tf

        address = replay.address()
        # The run's seed fixes the initial weights (which the actors fetch), so that a seed's
        # runs start alike; thread interleaving and replay sampling still differ between them.
        tf.random.set_seed(run.seed)
        networks = builder.make_networks(spec=spec)
        self._stop = threading.Event()
        # One counter call per learner step would cost a round trip when the
        # counter is another process: batch them.
        self._counter = Counter(counter, "learner", sync_every_s=0.25)
        # Restarts after rate-limiter timeouts; ends (StopIteration) once stopped.
        iterator = builder.make_dataset_iterator(replay_address=address,
                                                 should_stop=self._stop.is_set)
        self._learner = builder.make_learner(
            networks=networks, spec=spec, iterator=iterator, replay_address=address,
            counter=self._counter,
            logger=run.logger("learner", LEARNER_KEYS, step_key="learner_steps"),
            seed=run.seed,
        )
        self._checkpointer = None
        self.first_step_time: float | None = None  # time.time() after its first step here.
        self.restored_step = 0  # The learner step its checkpoint held (0: started fresh).
        if run.logdir:
            self._checkpointer = Checkpointer(
                self._learner, os.path.join(run.logdir, "checkpoints"), "learner",
                interval_s=checkpoint_every_s,
            )
            if self._checkpointer.restore():
                self.restored_step = int(getattr(self._learner, "num_steps", 0))
                print(f"[learner] restored from {self._checkpointer.path} at step "
                      f"{self.restored_step}", flush=True)

    def get_restored_step(self) -> int:
        return self.restored_step

    def get_first_step_time(self) -> float | None:
        """When this process finished its first learner step (None: not yet)."""
        return self.first_step_time

    def get_variables(self, names):
        return self._learner.get_variables(names)

    def learner_stats(self) -> dict:
        """What the learner reports about its data (e.g. IMPALA's unrolls learned)."""
        return self._learner.stats()

    def run(self) -> None:
        try:
            while not self._stop.is_set():
                self._learner.step()
                if self.first_step_time is None:
                    self.first_step_time = time.time()
                if self._checkpointer is not None:
                    self._checkpointer.maybe_save()
        except StopIteration:
            pass  # The dataset ended because this node was asked to stop.
        finally:
            self._counter.flush()
            if self._checkpointer is not None:
                self._checkpointer.save()

    def stop(self) -> None:
        self._stop.set()


def _python_environments(environment_factory: EnvironmentFactory, seeds: list, evaluation: bool,
                         **kwargs) -> BatchedEnvironment:
    """One Python environment per seed, stepped one after the other."""
    return BatchedEnvironment(
        [environment_factory(seed=s, evaluation=evaluation) for s in seeds], **kwargs)


class ActorNode:
    """Runs a batched actor over K environments until the step budget is spent."""

    def __init__(
        self,
        *,
        builder: ActorLearnerBuilder,
        environment_factory: EnvironmentFactory,
        spec: EnvironmentSpec,
        actor_id: int,
        replay,
        variable_source,
        counter,
        run: RunContext,
        acting: ActingConfig,
        batched_environment_factory: BatchedEnvironmentFactory | None = None,
        inference=None,
    ):
        networks = builder.make_networks(spec=spec)
        # The loop counts at every episode end; batching the calls keeps a
        # counter in another process from costing a round trip per episode.
        self._actor_counter = Counter(counter, "actor", sync_every_s=0.1)
        self._actor_id = actor_id
        client = reverb.Client(replay.address())
        layout = builder.layout
        groups, size = layout.env_groups, layout.envs_per_group
        # One adder per group of environments (per environment inside, if the agent's are).
        self._adders = [builder.make_adder(replay_client=client, spec=spec, num_envs=size)
                        for _ in range(groups)]
        if inference is not None:
            # Central inference: each group acts through the inference node, which holds the
            # behaviour policy and its weights; this node fetches none.
            policies = [RemotePolicy(inference, f"actor_{actor_id}.{g}") for g in range(groups)]
            variable_source = None
        else:
            policy = builder.make_policy(networks=networks, spec=spec,
                                         seed=run.seed * 7919 + actor_id, actor_id=actor_id,
                                         num_actors=layout.num_actors)
            # A resumed run (or a rebuilt actor): a behaviour policy with a schedule (epsilon)
            # goes on from this actor's share of the steps taken so far, not from its start.
            resume_schedule(policy, counter, share=layout.num_actors)
            policies = [policy] * groups
        self._policies = policies
        # With alternating groups each group has its own actor (adder, recurrent
        # states) over the same networks and policy; the first one's variable
        # client updates the networks for all.
        actors = [builder.make_actor(policy=policies[g], networks=networks,
                                     adder=self._adders[g],
                                     variable_source=variable_source if g == 0 else None)
                  for g in range(groups)]
        self._actors = actors
        base_seed = run.seed * 100_003 + actor_id * layout.num_envs_per_actor
        make_group = batched_environment_factory or functools.partial(
            _python_environments, environment_factory, max_failures=acting.max_env_failures,
            on_failure=self._environment_failed)
        environments = [make_group([base_seed + g * size + i for i in range(size)], False)
                        for g in range(groups)]
        self._environments = environments
        self._loop = EnvironmentLoop(
            environments, actors, counter=self._actor_counter,
            logger=run.logger("actor", ACTOR_KEYS, step_key="actor_steps",
                              printing=actor_id == 0),
            should_stop=self._budget_spent, row_fields={"actor_id": actor_id},
        )
        self._max_actor_steps = acting.max_actor_steps
        self._counter = counter

    def _budget_spent(self, counts) -> bool:
        return counts.get("actor_steps", 0) >= self._max_actor_steps

    def _environment_failed(self, index: int, error: BaseException) -> None:
        self._actor_counter.increment(failed_episodes=1)
        print(f"[actor_{self._actor_id}] environment {index} raised "
              f"{type(error).__name__}: {error}; reset, episode counted as failed", flush=True)

    def policy_calls(self) -> dict[str, float]:
        """Central inference: this actor's requests and their mean latency as it saw them
        (transport included); {} with local inference."""
        remote = [p for p in self._policies if isinstance(p, RemotePolicy)]
        calls = sum(p.calls for p in remote)
        if not calls:
            return {}
        return {"calls": calls, "mean_latency_ms": 1000 * sum(p.seconds for p in remote) / calls}

    def items_written(self) -> int:
        """Replay items this actor's adders wrote."""
        return sum(adder.items_written for adder in self._adders)

    def steps(self) -> int:
        """Environment steps this actor took (since its process started)."""
        return self._loop.steps

    def _watch_budget(self, done: threading.Event) -> None:
        """Stops the loop once all actors together spent the budget, even while this actor
        waits for its learner (a synchronous round that the other actors, already stopped,
        will never complete)."""
        while not done.wait(0.5):
            if self._budget_spent(self._counter.get_counts()):
                self._loop.stop()
                return

    def run(self) -> None:
        done = threading.Event()
        try:
            if self._budget_spent(self._counter.get_counts()):
                return
            self._actors[0].update(wait=True)
            threading.Thread(target=self._watch_budget, args=(done,), daemon=True,
                             name=f"actor_{self._actor_id}-budget").start()
            self._loop.run()
        finally:
            done.set()
            for actor in self._actors:
                actor.close()  # Flushes every adder: the last items reach replay.
            self._actor_counter.flush()
            for environment in self._environments:  # Simulator threads and processes end here.
                try:
                    environment.close()
                except Exception as error:  # noqa: BLE001  (a failing close must not hide the run's end)
                    print(f"[actor_{self._actor_id}] closing environments raised "
                          f"{type(error).__name__}: {error}", flush=True)

    def stop(self) -> None:
        self._loop.stop()


class EvaluatorNode:
    """Every `eval_every` actor steps (and at 0 with `eval_at_start`), runs `eval_episodes`
    greedy episodes at once; and once more when the actors have taken `max_actor_steps`,
    then returns: a run's last round is of the agent at its budget, not one round before.

    The episodes run in a batch of environments, one episode each, with one
    policy call per step; each episode's return is logged as its own row.
    """

    def __init__(
        self,
        *,
        builder: ActorLearnerBuilder,
        environment_factory: EnvironmentFactory,
        spec: EnvironmentSpec,
        variable_source,
        counter,
        run: RunContext,
        eval_every: int,
        eval_episodes: int,
        eval_at_start: bool = True,
        max_actor_steps: int | None = None,
    ):
        networks = builder.make_networks(spec=spec)
        policy = builder.make_policy(networks=networks, spec=spec, evaluation=True,
                                     seed=run.seed + 12345)
        self._actor = builder.make_actor(policy=policy, networks=networks, adder=None,
                                         variable_source=variable_source)
        seed = run.seed
        self._env = BatchedEnvironment.from_factory(
            lambda i: environment_factory(seed=seed + 10_000 + i, evaluation=True), eval_episodes
        )
        self._counter = counter
        self._eval_every = eval_every
        self._eval_at_start = eval_at_start
        self._max_actor_steps = max_actor_steps
        self._logger = run.logger("evaluator", EVALUATOR_KEYS, step_key="actor_steps")
        # The actors' loop, one episode in each environment a round; it counts nothing.
        self._loop = EnvironmentLoop(self._env, self._actor, logger=self._logger,
                                     update_actor=False)
        self._stop = threading.Event()
        self.returns: list[float] = []

    def evaluate(self) -> list[float]:
        """Runs one episode in each environment; logs and returns their returns."""
        self._actor.update(wait=True)
        returns = self._loop.run_episode_each(row_fields=self._counter.get_counts())
        if returns is None:  # Stopped mid-round.
            return []
        self.returns.extend(returns)
        return returns

    def run(self) -> None:
        # Without the step-0 round the evaluator's first tracing and episodes do
        # not compete with the actor and learner for the CPU while they start.
        next_eval = 0 if self._eval_at_start else self._eval_every
        last_round = None  # The actor steps the last round began at.
        while not self._stop.is_set():
            steps = self._counter.get_counts().get("actor_steps", 0)
            budget = self._max_actor_steps
            if budget is not None and steps >= budget:
                # The actors are done: a round at the budget (unless one began there), the end.
                if last_round is None or last_round < budget:
                    self.evaluate()
                return
            if steps >= next_eval:
                next_eval = (steps // self._eval_every + 1) * self._eval_every
                last_round = steps
                self.evaluate()
            else:
                self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._loop.stop()
