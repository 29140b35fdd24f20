"""A node in its own Ray actor process (`NodeProcess`), and the handle other nodes call it
through (`RemoteNode`): the same node code as under threads, its calls made Ray calls."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from agentkit.core import ADVERTISE_HOST_ENV
from launch_programs.devices import configure_tensorflow, tensorflow_environment


class RayClosedError(RuntimeError):
    """A node handle used after its launcher shut Ray down."""


def require_ray(name: str):
    """The ray module, if Ray is up in this process; else RayClosedError naming the node."""
    import ray

    if not ray.is_initialized():
        raise RayClosedError(f"node {name}: Ray is not running here (its launcher was closed)")
    return ray


class RemoteNode:
    """Stands for a node in another process: `node.method(*args)` runs it there.

    A call that meets a restarting node is retried until `timeout_s`, so a
    node's clients ride out its restart. It travels to other nodes by its Ray
    actor name, not by its handle, and looks the handle up where it lands: Ray
    counts a handle among a constructor's arguments as an argument in the
    object store, which it cannot promise to rebuild for a restart (and warns
    about: ray-project/ray#53727).
    """

    def __init__(self, name: str, actor_name: str, handle: Any = None, timeout_s: float = 120.0):
        self.name = name
        self._actor_name = actor_name
        self._handle = handle
        self._timeout_s = timeout_s

    def __getstate__(self) -> dict:
        return {"name": self.name, "_actor_name": self._actor_name, "_handle": None,
                "_timeout_s": self._timeout_s}

    def _resolve(self) -> Any:
        if self._handle is None:
            import ray

            self._handle = ray.get_actor(self._actor_name)
        return self._handle

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args, **kwargs):
            ray = require_ray(self.name)
            deadline = time.monotonic() + self._timeout_s
            while True:
                try:
                    return ray.get(self._resolve().call.remote(method, *args, **kwargs))
                except ray.exceptions.RayActorError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)

        call.__name__ = method
        return call

    def __repr__(self) -> str:
        return f"RemoteNode({self.name})"


class NodeProcess:
    """The Ray actor that holds one node's object."""

    def __init__(self, name: str, constructor, args: tuple, kwargs: dict, on_cluster: bool,
                 tf_threads: int = 0):
        import ray

        self._name = name
        if on_cluster:
            os.environ[ADVERTISE_HOST_ENV] = ray.util.get_node_ip_address()
        # Ray has unpickled the arguments. A node whose constructor and arguments brought in
        # TensorFlow gets its settings before the first op; one without (the counter) is not
        # made to import it (3 s of CPU that the other nodes' start-up waits for on 2 cores),
        # and the environment carries the settings should it import TensorFlow later.
        tensorflow_environment(tf_threads)
        configured = "tensorflow" in sys.modules
        if configured:
            configure_tensorflow(tf_threads)
        self._object = constructor(*args, **kwargs)
        if not configured and "tensorflow" in sys.modules:  # The constructor imported it.
            from components.autograph_rules import skip_autograph_for

            skip_autograph_for()

    def __repr__(self) -> str:  # Ray prefixes the node's output with this.
        return getattr(self, "_name", "node")

    def ready(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        """The Ray node (raylet) this process runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def has_run(self) -> bool:
        return callable(getattr(self._object, "run", None))

    def call(self, method: str, *args, **kwargs):
        return getattr(self._object, method)(*args, **kwargs)

    def run(self) -> None:
        self._object.run()
        sys.stdout.flush()

    def stop(self) -> None:
        stop = getattr(self._object, "stop", None)
        if stop is not None:
            stop()
