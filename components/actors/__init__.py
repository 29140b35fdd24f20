"""Actors: feed-forward (one environment) and batched (K environments, one policy call)."""

from components.actors.feed_forward import BatchedFeedForwardActor, FeedForwardActor

__all__ = ["BatchedFeedForwardActor", "FeedForwardActor"]
