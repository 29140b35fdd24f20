"""Actors and the behaviour policies agents share.

Actors: batched feed-forward and recurrent (K environments, one policy call
per step). Policies: epsilon-greedy (scheduled, or fixed per Ape-X
actor), Gaussian noise for deterministic policies, sampling from a softmax or
a tanh-squashed Gaussian, Ape-X's actor-side priorities.
"""

from components.actors.epsilon_greedy import (
    EpsilonGreedyPolicy,
    RecurrentEpsilonGreedyPolicy,
    epsilon_greedy_actions,
)
from components.actors.exploration import apex_epsilon
from components.actors.feed_forward import BatchedFeedForwardActor, network_actor
from components.actors.gaussian_noise import GaussianNoisePolicy
from components.actors.recurrent import BatchedRecurrentActor
from components.actors.sampling import RecurrentSamplingPolicy, SamplingPolicy
from components.actors.squashed_gaussian import SquashedGaussianPolicy
from components.actors.td_priority import TDPriority

__all__ = ["BatchedFeedForwardActor", "BatchedRecurrentActor", "EpsilonGreedyPolicy",
           "GaussianNoisePolicy", "RecurrentEpsilonGreedyPolicy",
           "RecurrentSamplingPolicy", "SamplingPolicy", "SquashedGaussianPolicy",
           "TDPriority", "apex_epsilon", "epsilon_greedy_actions", "network_actor"]
