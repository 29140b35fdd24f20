"""Rainbow's builder: DQN's n-step replay, actors and Ape-X parts with Rainbow's network and loss.

Everything but the network, the policy's exploration and the learner is
DQN's (`agents.dqn.DQNBuilder`): the n-step table, dataset and adders,
the batched actor, the variable client.
"""

from __future__ import annotations

from agentkit.builders import Networks
from agentkit.specs import EnvironmentSpec
from agents.dqn import DQNBuilder, DQNLearner
from agents.rainbow.config import RainbowConfig
from agents.rainbow.learning import RainbowLearner
from agents.rainbow.networks import make_network
from components.actors import EpsilonGreedyPolicy
from components.networks import set_noise


class RainbowBuilder(DQNBuilder):
    """Makes Rainbow's networks, policies and learner on top of DQN's parts."""

    config_class = RainbowConfig

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        return {"q": make_network(spec, self.config)}

    def make_policy(self, *, networks: Networks, spec: EnvironmentSpec,
                    evaluation: bool = False, seed: int = 0, actor_id: int = 0,
                    num_actors: int = 1) -> EpsilonGreedyPolicy:
        """With noisy nets, actors are greedy on noisy Q-values (fresh noise every step) and
        the evaluator greedy on the noiseless mean; without, DQN's epsilon-greedy."""
        if evaluation:
            set_noise(networks["q"], False)  # The evaluator's own networks: deterministic.
            eps = self.config.epsilon_eval
            return EpsilonGreedyPolicy(networks["q"], spec, eps, eps, 0, seed)
        if self.config.noisy:
            return EpsilonGreedyPolicy(networks["q"], spec, 0.0, 0.0, 0, seed)
        return super().make_policy(networks=networks, spec=spec, seed=seed, actor_id=actor_id,
                                   num_actors=num_actors)

    @property
    def learner_class(self):
        """Rainbow's loss; with `num_atoms=1` (the ablation) DQN's on the scalar noisy network."""
        return RainbowLearner if self.config.num_atoms > 1 else DQNLearner
