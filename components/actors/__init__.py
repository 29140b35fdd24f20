"""Actors: feed-forward (one environment), batched (K environments, one policy call), recurrent."""

from components.actors.exploration import apex_epsilon
from components.actors.feed_forward import BatchedFeedForwardActor, FeedForwardActor
from components.actors.recurrent import BatchedRecurrentActor

__all__ = ["BatchedFeedForwardActor", "BatchedRecurrentActor", "FeedForwardActor", "apex_epsilon"]
