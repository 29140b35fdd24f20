"""A Ray cluster of several nodes on this machine: a head and workers, each its own raylet.

For tests, benchmarks, and rehearsing a cluster run on a laptop before a real
one. Every node listens on 127.0.0.1 only, and each carries a custom resource
named after it (`head`, `worker_1`, ...), so that `--pin=replay:head` works
here as it would on hosts started with `ray start --resources`. Losing a host
is `kill(name)`: its raylet, object store and every worker process on it die
at once, without a graceful stop; `add(name)` brings a host (back) into the
cluster.

    python -m launch_programs.local_cluster --workers=2 --cpus_per_node=2

prints the address for `--launch=ray --ray_address=...` and holds the
cluster until Ctrl-C, SIGTERM or SIGHUP (its terminal closed; not under
nohup): each stops every node it started and prints `[cluster] stopped`. CPU counts are whole
numbers >= 0 (Ray takes no fractions; a node with 0 CPUs hosts only what
reserves none); a bad flag fails in one line, before Ray starts.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import sys
import threading
import time
from typing import Any

LOOPBACK = "127.0.0.1"
OBJECT_STORE_BYTES = 200 * 1024 * 1024  # Per node: the programs here move small objects.


class LocalCluster:
    """A head node and `workers` worker nodes, started by `start()`, removed by `shutdown()`."""

    def __init__(self, workers: int = 2, cpus_per_node: float = 2.0, head_cpus: float | None = None,
                 own_temp_dir: bool = True):
        """`own_temp_dir`: the nodes' session files in a folder of this cluster's own, removed
        by `shutdown()` (else Ray's shared one, /tmp/ray or $RAY_TMPDIR/ray, where `ray
        status` and `address="auto"` find the cluster: the command line's rehearsal cluster)."""
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self._workers = workers
        self._cpus = whole_cpus(cpus_per_node, "cpus_per_node")
        self._head_cpus = self._cpus if head_cpus is None else whole_cpus(head_cpus, "head_cpus")
        self._cluster: Any = None
        self._own_temp_dir = own_temp_dir
        self._temp_dir: str | None = None  # Every node's session files; removed by shutdown().
        self._owned: Any = None  # ray_session.OwnedProcesses: what the nodes started.
        self.nodes: dict[str, Any] = {}  # Name -> ray._private.node.Node, live ones only.

    @property
    def temp_dir(self) -> str | None:
        """The cluster's own folder of the nodes' session files while it is up (None before,
        and without `own_temp_dir`)."""
        return self._temp_dir

    @property
    def address(self) -> str:
        """The head's GCS address, for `ray.init(address=...)` and `--ray_address`."""
        return self._cluster.address

    def start(self) -> LocalCluster:
        import ray
        from ray.cluster_utils import Cluster

        from launch_programs.ray_session import (
            OwnedProcesses,
            loopback_only,
            private_temp_dir,
            quiet_token_auth_notice,
            share_import_path,
        )

        self._owned = OwnedProcesses()  # Before anything here changes the environment.
        loopback_only(ray)
        quiet_token_auth_notice()
        share_import_path()
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        # The nodes' session files (sockets, logs) in a folder of this cluster's own, removed
        # by shutdown(), as a launcher's own Ray does: not the host's shared /tmp/ray.
        self._temp_dir = private_temp_dir() if self._own_temp_dir else None
        # Made empty, then the head added: a head that fails after its processes started
        # (Cluster(initialize_head=True) would raise before it was ours) is still stopped.
        self._cluster = Cluster(initialize_head=False)
        try:
            with self._address_file(), self._owned.starting():
                self.nodes["head"] = self._cluster.add_node(
                    **self._node_args("head", self._head_cpus))
            for i in range(1, self._workers + 1):
                self.add(f"worker_{i}")
            self._cluster.wait_for_nodes()
            self._owned.started()
        except BaseException:  # A node that did not come up: none of the others stays.
            self.shutdown()
            raise
        return self

    @contextlib.contextmanager
    def _address_file(self):
        """Ray's Cluster writes the head's address to the host's shared
        /tmp/ray/ray_current_cluster (where `address="auto"` looks; it fails where /tmp/ray
        does not exist yet) and deletes that file at shutdown, whoever wrote it. A cluster
        with its own folder keeps the file there: nothing shared is written or removed."""
        if self._temp_dir is None:
            yield
            return
        import ray._common.utils as common_utils
        import ray._private.utils as private_utils

        own = os.path.join(self._temp_dir, "ray")
        write, reset = private_utils.write_ray_address, common_utils.reset_ray_address
        private_utils.write_ray_address = lambda address, temp_dir=None: write(address, own)
        common_utils.reset_ray_address = lambda temp_dir=None: reset(own)
        try:
            yield
        finally:
            private_utils.write_ray_address, common_utils.reset_ray_address = write, reset

    def _node_args(self, name: str, cpus: float) -> dict:
        args = dict(num_cpus=cpus, num_gpus=0, node_ip_address=LOOPBACK, resources={name: 1.0},
                    include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES)
        if self._temp_dir is not None:
            args["temp_dir"] = os.path.join(self._temp_dir, "ray")
        return args

    def add(self, name: str, cpus: float | None = None) -> Any:
        """Starts a worker node called `name` (its custom resource too) and waits for it."""
        if name in self.nodes:
            raise ValueError(f"node {name} is already up")
        cpus = self._cpus if cpus is None else whole_cpus(cpus, "cpus")
        with self._owned.starting():  # A node whose start fails half-way is still found.
            node = self._cluster.add_node(**self._node_args(name, cpus))
        self.nodes[name] = node
        return node

    def node_id(self, name: str) -> str:
        return self.nodes[name].node_id

    def name_of(self, node_id: str) -> str:
        """The name of the live node with this Ray node id."""
        for name, node in self.nodes.items():
            if node.node_id == node_id:
                return name
        raise KeyError(node_id)

    def kill(self, name: str) -> None:
        """Loses a worker host: SIGKILL to its raylet, object store and workers, no grace."""
        if name == "head":
            raise ValueError("the head holds the cluster's GCS: kill a worker node")
        node = self.nodes.pop(name)
        self._cluster.remove_node(node, allow_graceful=False)

    def shutdown(self) -> None:
        """Stops every node, then whatever process the nodes left (a node that failed to
        start and so was never Ray's to stop, a hard-killed raylet's agents), restores the
        environment start() changed, then removes their session files."""
        try:
            if self._cluster is not None:
                with self._address_file():
                    self._cluster.shutdown()
        finally:
            self._cluster = None
            self.nodes.clear()
            if self._owned is not None:
                self._owned.end()
                self._owned = None
            if self._temp_dir is not None:
                shutil.rmtree(self._temp_dir, ignore_errors=True)
                self._temp_dir = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.shutdown()


def whole_cpus(value: float, name: str) -> int:
    """`value` as Ray's CPU count: a whole number >= 0 (Ray refuses fractions of a node's
    CPUs); ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or value != int(value):
        raise ValueError(f"{name}: must be a whole number >= 0, got {value!r}")
    return int(value)


def _whole_number_flag(text: str, whole_floats: bool) -> int:
    """A flag's value, a whole number >= 0 ("2.0" too where `whole_floats`); argparse puts
    the flag's name before the error."""
    try:
        return whole_cpus(float(text) if whole_floats else int(text), "")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number >= 0, got {text or 'nothing'}") from None


def _cpus_flag(text: str) -> int:
    return _whole_number_flag(text, whole_floats=True)


def _count_flag(text: str) -> int:
    return _whole_number_flag(text, whole_floats=False)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # One line, not argparse's usage block, and exit code 2.
        message = message.removeprefix("argument ")  # "--flag: ...", as the run's errors.
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m launch_programs.local_cluster",
                     description=__doc__.split("\n\n")[0],
                     epilog="Ctrl-C, SIGTERM and SIGHUP (the terminal closed; under nohup "
                            "it is ignored) each stop every node this started.")
    parser.add_argument("--workers", type=_count_flag, default=2,
                        help="worker nodes besides the head: a whole number >= 0")
    parser.add_argument("--cpus_per_node", type=_cpus_flag, default=2,
                        help="logical CPUs each node offers (Ray's reservations, not cores; "
                             "Ray takes no fractions): a whole number >= 0; a node with 0 "
                             "hosts only what reserves no CPU, such as replay or counter "
                             "nodes pinned to it")
    parser.add_argument("--head_cpus", type=_cpus_flag, default=None,
                        help="the head's logical CPUs, a whole number >= 0 (default: "
                             "--cpus_per_node); 0 keeps nodes that reserve CPUs, such as "
                             "actors, off the head")
    return parser


def _say(text: str) -> None:
    """Prints `text`; once the terminal is gone (SIGHUP: writes fail with EIO, or EPIPE on
    a closed pipe), output goes to /dev/null instead of raising."""
    try:
        print(text, flush=True)
    except OSError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # The failed text's flush at exit too.
            os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # SIGHUP: its terminal closed; the same clean stop, unless it came in ignored (nohup).
    if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
        signal.signal(signal.SIGHUP, lambda *_: stop.set())
    # Ray's shared folder: `ray status` in another terminal finds this cluster.
    cluster = LocalCluster(args.workers, args.cpus_per_node, args.head_cpus, own_temp_dir=False)
    start = time.time()
    try:
        cluster.start()
        names = ", ".join(cluster.nodes)
        _say(f"[cluster] {len(cluster.nodes)} nodes up in {time.time() - start:.1f} s ({names}); "
             f"join with --launch=ray --ray_address={cluster.address}; Ctrl-C stops it")
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        cluster.shutdown()
        _say("[cluster] stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
