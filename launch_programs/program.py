"""A program: a graph of named nodes, each built from a constructor and handles.

A node's arguments may hold `Handle`s to other nodes; a launcher resolves
each handle to something with the same methods as the node's object (the
object itself in threads, a proxy to another process elsewhere). Nodes talk
only through method calls, so the same graph runs under every launcher.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Container, Iterable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Handle:
    """A reference to another node of the program."""

    name: str


@dataclasses.dataclass
class Node:
    """One node: `constructor(*args, **kwargs)` with handles resolved.

    `kind` groups nodes for logs and resources (replay, counter, learner,
    actor, evaluator). The program ends when every node with
    `ends_program=True` has returned from `run()`.
    """

    name: str
    kind: str
    constructor: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    ends_program: bool = False


@dataclasses.dataclass(frozen=True)
class Stage:
    """Nodes a launcher stops together; the next stage starts once they have stopped.

    With `wait_for_run`, stopped means their `run()` returned (the launcher
    bounds the wait); otherwise, that their `stop()` returned.
    """

    names: tuple[str, ...]
    wait_for_run: bool


class Program:
    """An ordered collection of nodes; a node may only use earlier nodes."""

    def __init__(self, name: str):
        self.name = name
        self.nodes: dict[str, Node] = {}

    def add_node(
        self,
        name: str,
        kind: str,
        constructor: Callable[..., Any],
        *args: Any,
        ends_program: bool = False,
        **kwargs: Any,
    ) -> Handle:
        if name in self.nodes:
            raise ValueError(f"node {name!r} already exists")
        for value in list(args) + list(kwargs.values()):
            if isinstance(value, Handle) and value.name not in self.nodes:
                raise ValueError(f"node {name!r} uses {value.name!r}, which is not defined yet")
        self.nodes[name] = Node(name, kind, constructor, args, kwargs, ends_program)
        return Handle(name)

    def resolve(self, node: Node, lookup: Callable[[Handle], Any]) -> tuple[tuple, dict]:
        """Replaces every Handle among a node's arguments with `lookup(handle)`."""
        def one(value):
            return lookup(value) if isinstance(value, Handle) else value

        return tuple(one(a) for a in node.args), {k: one(v) for k, v in node.kwargs.items()}

    def shutdown_stages(self, built: Iterable[str], running: Container[str]) -> list[Stage]:
        """The order in which every launcher stops the `built` nodes.

        First the nodes that end the program, waiting for their `run()`: their
        adders flush while the learner still samples (a rate limiter would
        block their last inserts otherwise). Then the other nodes with a
        `run()` (`running`: learner, evaluator). Last the nodes without one,
        one at a time in reverse order of construction: a node may use only
        earlier nodes, so none is stopped before a node that uses it (the
        replay server goes last). A node that was never built is skipped.
        """
        built = set(built)
        order = [name for name in self.nodes if name in built]
        enders = tuple(n for n in order if self.nodes[n].ends_program)
        runners = tuple(n for n in order if n in running and n not in enders)
        rest = [n for n in reversed(order) if n not in running and n not in enders]
        stages = [Stage(enders, True), Stage(runners, True)] + [Stage((n,), False) for n in rest]
        return [stage for stage in stages if stage.names]


# After a node failed, how long a stage may take to stop: the learner that a blocked insert
# waits for may be the node that died, so waiting the full join timeout only stalls the exit.
FAILED_JOIN_TIMEOUT_S = 5.0


def announce_failure(error: NodeError) -> None:
    """One line as soon as a launcher sees a node fail (the summary names it again at the end)."""
    print(f"[run] node {error.node} failed ({type(error.error).__name__}: "
          f"{first_line(error.error)}); stopping the others", file=sys.stderr, flush=True)


def first_line(error: BaseException) -> str:
    """An exception's message cut to its first line (its type's name when it has none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class NodeError(RuntimeError):
    """A node raised; carries the node's name and formatted traceback."""

    def __init__(self, node: str, error: BaseException, formatted: str):
        super().__init__(f"node {node} failed: {type(error).__name__}: {error}")
        self.node = node
        self.error = error
        self.formatted = formatted


@dataclasses.dataclass
class LaunchResult:
    status: str  # "completed", "interrupted" or "failed".
    objects: dict[str, Any]
    error: NodeError | None = None


def shutdown_despite_interrupts(shutdown: Callable[[], None], attempts: int = 3) -> bool:
    """Runs `shutdown()` to the end even if Ctrl-C lands in the middle of it.

    Stopping nodes is idempotent, so an interrupted shutdown simply starts
    again. Returns whether an interrupt arrived.
    """
    interrupted = False
    for _ in range(attempts):
        try:
            shutdown()
            return interrupted
        except KeyboardInterrupt:
            interrupted = True
    return interrupted
