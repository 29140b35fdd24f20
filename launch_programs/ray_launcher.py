"""The ray launcher: every node of a program in its own Ray actor process.

A handle between nodes becomes a `RemoteNode` whose method calls are Ray
calls, so the nodes' code is the same as under threads. Each node process
serves calls on several threads (its `run()` occupies one). When a node's
process dies, Ray rebuilds it from the same arguments and the launcher starts
its `run()` again, up to `max_restarts` times. Shutdown follows
`Program.shutdown_stages`, as under threads (actors, then the other runners,
then replay last); then every node process is killed and a Ray instance
started here is shut down. What a node reserves comes from its kind through
`RayConfig.resources_for`, a lookup: a new kind of node needs no edit here.

Without `ray_address`, a local Ray instance is started on the loopback
address with no dashboard: none of Ray's ports listens on the network (they
run code for whoever reaches them). Checked by the tests with `ss`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from typing import Any

from agentkit.config import require
from agentkit.core import ADVERTISE_HOST_ENV
from launch_programs.devices import configure_tensorflow, tensorflow_environment
from launch_programs.placement import ClusterNode, KindPlacement, parse_pins, plan_placement
from launch_programs.program import (
    FAILED_JOIN_TIMEOUT_S,
    Handle,
    LaunchResult,
    NodeError,
    Program,
    Stage,
    announce_failure,
    first_line,
    shutdown_despite_interrupts,
)


@dataclasses.dataclass(frozen=True)
class NodeResources:
    """What one node's process reserves on the cluster, and its TensorFlow thread budget."""

    cpus: float = 0.0
    gpus: float = 0.0
    tf_threads: int = 0  # 0: TensorFlow's default (one thread per core).

    def ray_options(self) -> dict[str, float]:
        return {"num_cpus": self.cpus, "num_gpus": self.gpus}


def threads_for(cpus: float) -> int:
    """The threads of a node reserving `cpus`: at least one, none (the default) for 0."""
    return max(1, int(cpus)) if cpus else 0


@dataclasses.dataclass
class RayConfig:
    """Where the nodes run and what each may use."""

    ray_address: str = ""  # "": start a local Ray on 127.0.0.1; else join it ("auto", "host:6379").
    cpus_per_actor: float = 1.0  # CPUs reserved for each actor node.
    learner_cpus: float = 1.0  # CPUs reserved for the learner node.
    learner_gpus: float = 0.0  # GPUs for the learner node (it goes to a node that has them).
    max_restarts: int = 3  # Restarts of one node's process before the program fails.
    # Node kinds pinned to cluster nodes, KIND:NODE[,KIND:NODE]; NODE is a custom resource of
    # the node (survives the host's loss) or its Ray node id. Example: replay:head.
    pin: str = ""
    spread_actors: bool = True  # Actor nodes spread over the cluster's nodes (Ray's SPREAD).

    def __post_init__(self):
        from agentkit.config import require_finite_floats

        require_finite_floats(self)
        require(self.cpus_per_actor >= 0, "cpus_per_actor", ">= 0", self.cpus_per_actor)
        require(self.learner_cpus >= 0, "learner_cpus", ">= 0", self.learner_cpus)
        require(self.learner_gpus >= 0, "learner_gpus", ">= 0", self.learner_gpus)
        require(self.max_restarts >= 0, "max_restarts", ">= 0", self.max_restarts)
        self.pins()  # A malformed --pin fails here, before Ray starts.

    def pins(self) -> dict[str, str]:
        return parse_pins(self.pin)

    def node_resources(self) -> dict[str, NodeResources]:
        """The flags as a table by node kind. The learner keeps TensorFlow's
        default threads (its large steps use every core it gets); an actor's
        small forward passes run fastest on as many threads as it reserves."""
        return {
            "actor": NodeResources(self.cpus_per_actor, tf_threads=threads_for(self.cpus_per_actor)),
            "learner": NodeResources(self.learner_cpus, self.learner_gpus),
        }

    def resources_for(self, kind: str) -> NodeResources:
        """A node of a kind the table does not list (replay, counter, evaluator, any new
        one) reserves nothing: it runs wherever Ray has room."""
        return self.node_resources().get(kind, NodeResources())

    def plan(self, kinds: Counter, nodes: list[ClusterNode]) -> dict[str, KindPlacement]:
        """Each kind's placement on these live nodes; PlacementError (one line) if unmet."""
        reservations = {kind: (r.cpus, r.gpus) for kind in kinds
                        for r in [self.resources_for(kind)]}
        return plan_placement(self.pins(), reservations, kinds, nodes, self.spread_actors,
                              flags=RESERVATION_FLAGS)


# The flag behind each kind's reservation ("kind_unit"), for placement errors.
RESERVATION_FLAGS = {"actor_cpu": "cpus_per_actor", "learner_cpu": "learner_cpus",
                     "learner_gpu": "learner_gpus"}


class RayAddressError(ValueError):
    """No Ray cluster answers at --ray_address (one line naming it)."""


def check_ray_address(address: str, timeout_s: float = 5.0) -> str:
    """The host:port that `address` names, once something accepts a connection there.

    Ray itself would retry an unreachable address for many minutes; this
    answers within `timeout_s`, and `auto` without a cluster in one line.
    """
    import ray
    from ray._private import services

    if is_loopback_address(address):  # Else Ray rewrites 127.0.0.1 to the host's address.
        loopback_only(ray)
    try:
        resolved = services.canonicalize_bootstrap_address_or_die(address)
    except (ConnectionError, ValueError) as e:
        raise RayAddressError(f"--ray_address={address}: {first_line(e)}") from None
    host, _, port = resolved.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as conn:
            reason = None if _speaks_grpc(conn) else "it answers, but not as a gRPC server"
    except (OSError, ValueError) as e:
        reason = getattr(e, "strerror", None) or str(e) or type(e).__name__
    if reason is not None:
        where = resolved if resolved == address else f"{resolved}, as Ray resolves it"
        raise RayAddressError(
            f"--ray_address={address}: no Ray cluster answers ({where}: {reason}); start one "
            f"with `ray start --head`, or leave the flag out for a local Ray")
    return resolved


# Ray's connect timeouts when joining a cluster (its defaults retry for minutes).
CONNECT_TIMEOUTS = {"RAY_py_gcs_connect_timeout_s": "10", "RAY_gcs_rpc_server_connect_timeout_s": "5"}
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _speaks_grpc(conn: socket.socket) -> bool:
    """Whether the peer answers an HTTP/2 preface with a SETTINGS frame, as Ray's GCS
    (a gRPC server) does; anything else would keep ray.init waiting on it."""
    header = b""
    try:
        conn.sendall(_HTTP2_PREFACE)
        while len(header) < 9:
            chunk = conn.recv(9 - len(header))
            if not chunk:
                return False
            header += chunk
    except OSError:  # Silent (a timeout) or reset: no gRPC server.
        return False
    return header[3] == 4  # The frame type byte: SETTINGS.


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
            import ray

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


@contextlib.contextmanager
def _without_ray_sigterm_handler(ray):
    """Keeps ray.init from replacing the SIGTERM handler (it installs sys.exit)."""
    utils = ray._private.utils
    original = getattr(utils, "set_sigterm_handler", None)
    if original is None:
        yield
        return
    utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        utils.set_sigterm_handler = original


def _exit_on_sigterm(signum, frame):
    sys.exit(128 + signum)


LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
RAY_ADDRESS_ENV = "RAY_ADDRESS"
TEMP_PREFIX = "agentkit-ray-"


def private_temp_dir() -> str:
    """A new folder (mode 0700) for a local Ray's session files. Ray makes its temp dir
    mode 0777, so Ray gets `ray/` inside it: the 0700 parent keeps other users out. Under
    /tmp, not $TMPDIR: Ray's unix socket paths inside must stay under the kernel's 107 bytes."""
    import tempfile

    return tempfile.mkdtemp(prefix=TEMP_PREFIX, dir="/tmp")


def is_loopback_address(address: str) -> bool:
    """Whether a host:port names this machine's loopback interface (a local_cluster)."""
    host = address.rpartition(":")[0].strip("[]") if ":" in address else address
    return host in ("localhost", "::1") or host.startswith("127.")


def share_import_path() -> None:
    """Puts this directory on PYTHONPATH, which the processes Ray starts here inherit: node
    processes then import what this process can (the packages, test fakes)."""
    paths = [os.getcwd()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


def quiet_token_auth_notice() -> None:
    """Ray 2.60 turns token authentication on for a new local instance (good: its ports run
    code for whoever reaches them) and says so in a WARNING line on every run. The
    authentication stays; only that logger's warnings are muted. Errors still show."""
    import logging

    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(
        logging.ERROR)


def loopback_only(ray) -> None:
    """Makes a local Ray listen on 127.0.0.1 only.

    On Linux, Ray 2.x replaces 127.0.0.1 with the machine's reachable address
    and its GCS, raylets and workers listen on all interfaces. With cluster
    mode off (the switch Ray uses on macOS and Windows) the node address is
    the loopback one, and Ray's servers bind to it. The variable reaches the
    processes Ray starts; the constant is set here for this process, which
    may have imported Ray already.
    """
    os.environ[LOOPBACK_ENV] = "0"
    ray._private.ray_constants.ENABLE_RAY_CLUSTER = False


class RayLauncher:
    """Runs a program's nodes as Ray actor processes until it ends."""

    def __init__(self, program: Program, config: RayConfig | None = None,
                 join_timeout_s: float = 30.0, startup_timeout_s: float = 300.0):
        self._program = program
        self._config = config or RayConfig()
        self._join_timeout_s = join_timeout_s
        self._startup_timeout_s = startup_timeout_s
        self._handles: dict[str, Any] = {}
        self.objects: dict[str, RemoteNode] = {}
        self._runs: dict[Any, str] = {}  # In-flight run() call -> node name.
        self._finished: set[str] = set()
        self.restarts: dict[str, int] = {}
        self._pids: dict[str, int] = {}
        self._owns_ray = False
        self._ray_imported = False
        self._stop_requested = False
        self._idle: list[str] = []  # Nodes without run(): watched by pinging them.
        self._pings: dict[Any, str] = {}
        self._next_ping: dict[str, float] = {}
        self._ping_every_s = 1.0
        self.timings: dict[str, float] = {}  # Phase -> time.time() it ended (start-up figures).
        self._plan: dict[str, KindPlacement] | None = None  # Checked at the first build.
        self._threads_per_node = 16
        self._remote_class: Any = None  # ray.remote(NodeProcess), made with the plan.
        self._run_id = uuid.uuid4().hex[:12]  # Actor names are unique in the cluster.
        self._temp_dir: str | None = None  # A local Ray's session files; removed by close().

    def request_stop(self) -> None:
        """Asks a running `launch()` (in another thread) to stop the program."""
        self._stop_requested = True

    # -- start ---------------------------------------------------------------

    def _start_ray(self) -> None:
        """Imports and starts (or joins) Ray with Ctrl-C and SIGTERM held until it is up.

        A signal inside `import ray` leaves Ray half-imported, and one inside
        ray.init leaves the processes it started without an owner: both are
        held until Ray is up, then handed to the handlers that were there
        before. ray.init would also install its own SIGTERM handler (sys.exit,
        which skips the ordered shutdown) and the driver's C++ failure-signal
        handler: the first is kept out, the second switched off.
        """
        in_main_thread = threading.current_thread() is threading.main_thread()
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        held: list[int] = []
        # Joining a cluster starts no process here, so nothing is orphaned by a
        # signal: Ctrl-C stays live while Ray tries to connect.
        hold = in_main_thread and not self._config.ray_address
        if hold:
            for signum in previous:
                signal.signal(signum, lambda signum, frame: held.append(signum))
        os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
        try:
            import ray

            self._ray_imported = True
            if not ray.is_initialized():
                os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # Node processes inherit it.
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
                self._owns_ray = True  # Set first: an init that fails still gets shut down.
                with _without_ray_sigterm_handler(ray):
                    self._init_ray(ray)
        finally:
            if hold:
                for signum, handler in previous.items():
                    if signum == signal.SIGTERM and not callable(handler):
                        handler = _exit_on_sigterm  # What Ray would have installed.
                    signal.signal(signum, handler)
        if held:
            handler = previous[held[0]]
            if callable(handler):
                handler(held[0], None)
            raise KeyboardInterrupt

    def _init_ray(self, ray) -> None:
        if self._config.ray_address:
            self._join_ray(ray)
            return
        loopback_only(ray)
        quiet_token_auth_notice()
        share_import_path()
        # A local Ray of this run's own: not one that RAY_ADDRESS or a stale
        # /tmp/ray/ray_current_cluster names (only --ray_address joins a cluster), and its
        # session files (unix sockets among them) in a folder only this user can enter,
        # removed by close(), instead of the host's shared /tmp/ray.
        os.environ.pop(RAY_ADDRESS_ENV, None)
        self._temp_dir = private_temp_dir()
        needed = sum(self._config.resources_for(n.kind).cpus for n in self._program.nodes.values())
        ray.init(address="local", num_cpus=max(os.cpu_count() or 1, int(needed + 0.999)),
                 include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=True,
                 _temp_dir=os.path.join(self._temp_dir, "ray"))

    def _join_ray(self, ray) -> None:
        """ray.init on the cluster at --ray_address, failing in about 20 s, not 14 minutes.

        `check_ray_address` has seen a gRPC server there; if it is no Ray
        cluster, Ray's own connect timeouts (shortened here) end the retries
        with a ConnectionError, which becomes one line.
        """
        for name, value in CONNECT_TIMEOUTS.items():
            os.environ.setdefault(name, value)
        address = self._config.ray_address
        if is_loopback_address(address):  # A cluster on this machine (local_cluster).
            loopback_only(ray)
        quiet_token_auth_notice()
        try:
            ray.init(address=address, log_to_driver=True)
        except ConnectionError as e:
            raise RayAddressError(f"--ray_address={address}: {first_line(e)}") from None

    def _waves(self) -> list[list[str]]:
        """The nodes in the order they are built: first those that another node calls or
        that end the program, then the rest (the evaluator). On a machine short of cores the
        nodes that the first learner step waits for do not share the CPU of their start-up
        (an import of TensorFlow each) with one that nobody waits for."""
        nodes = self._program.nodes
        called = {value.name for node in nodes.values()
                  for value in (*node.args, *node.kwargs.values()) if isinstance(value, Handle)}
        first = [name for name, node in nodes.items() if name in called or node.ends_program]
        rest = [name for name in nodes if name not in first]
        return [wave for wave in (first, rest) if wave]

    def _build(self, names: list[str]) -> None:
        """Creates these nodes' processes and waits for their constructors."""
        import ray

        if self._plan is None:
            self._plan_nodes()
        on_cluster = bool(self._config.ray_address)
        for name in names:
            node = self._program.nodes[name]
            args, kwargs = self._program.resolve(node, lambda h: self.objects[h.name])
            resources = self._config.resources_for(node.kind)
            actor_name = f"{self._program.name}-{self._run_id}-{node.name}"
            handle = self._remote_class.options(
                name=actor_name, max_restarts=self._config.max_restarts,
                max_concurrency=self._threads_per_node,
                **resources.ray_options(), **self._plan[node.kind].ray_options(),
            ).remote(node.name, node.constructor, args, kwargs, on_cluster, resources.tf_threads)
            self._handles[node.name] = handle
            self.objects[node.name] = RemoteNode(node.name, actor_name, handle)
        # Constructors run at once; a node waits in its constructor for the
        # earlier nodes it calls. Wait for all, naming the first that fails.
        deadline = time.monotonic() + self._startup_timeout_s
        for name in names:
            try:
                self._pids[name] = ray.get(self._handles[name].ready.remote(),
                                           timeout=max(1.0, deadline - time.monotonic()))
            except ray.exceptions.RayError as e:
                raise NodeError(name, e, str(e)) from None
        pids = ", ".join(f"{name}={self._pids[name]}" for name in names)
        print(f"[ray] nodes up: {pids}", flush=True)

    def node_location(self, name: str) -> str:
        """The Ray node id that a node's process runs on."""
        import ray

        return ray.get(self._handles[name].node_id.remote())

    def node_pid(self, name: str, timeout_s: float = 120.0) -> int:
        """The process id of a node (for fault-injection tests and debugging); while Ray
        rebuilds it (a run can end before a lost node is back), the rebuilt one's."""
        pid = self._wait_for_process(name, timeout_s)
        if pid is None:
            raise RuntimeError(f"node {name} has no process (it died for good, or was not "
                               f"rebuilt within {timeout_s:.0f} s)")
        return pid

    def _wait_for_process(self, name: str, timeout_s: float = 120.0) -> int | None:
        """The pid of the node's process once Ray has rebuilt it; None if it never is."""
        import ray

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                return ray.get(self._handles[name].ready.remote(), timeout=timeout_s)
            except ray.exceptions.ActorDiedError:
                return None  # Out of restarts: dead for good.
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                time.sleep(0.2)
        return None

    def _start_run(self, name: str) -> None:
        self._runs[self._handles[name].run.remote()] = name

    # -- run -----------------------------------------------------------------

    def start(self) -> None:
        """Starts (or joins) Ray and plans where each node goes: a placement that cannot be
        met (PlacementError) or a cluster that does not answer (RayAddressError) fails here,
        before any node exists. `launch()` calls it if the caller did not."""
        if self._plan is not None:
            return
        self._start_ray()
        self.timings["ray_up"] = time.time()
        self._plan_nodes()

    def _plan_nodes(self) -> None:
        """Where each kind of node goes on the live cluster (PlacementError if unmet)."""
        import ray

        kinds = Counter(node.kind for node in self._program.nodes.values())
        self._plan = self._config.plan(kinds, ClusterNode.alive(ray.nodes()))
        # Calls a node serves at once: its run() and every caller that may wait in it
        # (an inference node holds one call per actor group while it gathers a batch).
        self._threads_per_node = max(16, 2 * kinds.get("actor", 0) + 4)
        self._remote_class = ray.remote(NodeProcess)

    def launch(self) -> LaunchResult:
        status, error = "completed", None
        try:
            self.start()
            import ray

            for wave in self._waves():
                self._build(wave)
                for name in wave:
                    if ray.get(self._handles[name].has_run.remote()):
                        self._start_run(name)
                    else:
                        self._idle.append(name)
                self.timings.setdefault("nodes_up", time.time())  # Those the others wait for.
            self.timings["all_nodes_up"] = time.time()
            enders = [n for n, node in self._program.nodes.items() if node.ends_program]
            while error is None:
                if enders and all(n in self._finished for n in enders):
                    break
                if self._stop_requested:
                    status = "stopped"
                    break
                error = self._poll(timeout_s=0.2)
        except NodeError as e:
            error = e
        except KeyboardInterrupt:
            status = "interrupted"
        finally:
            if error is not None:
                announce_failure(error)
                self._join_timeout_s = min(self._join_timeout_s, FAILED_JOIN_TIMEOUT_S)
            if self._ray_up() and shutdown_despite_interrupts(self.shutdown):
                status = "interrupted"
        if error is not None:
            status = "failed"
        # Only nodes that finished their constructors: a call to one still in
        # it (stopped during start-up) would wait for it.
        ready = {name: obj for name, obj in self.objects.items() if name in self._pids}
        return LaunchResult(status, ready, error)

    def _poll(self, timeout_s: float) -> NodeError | None:
        """Handles run() calls that returned (done, failed, or their process died) and
        the liveness pings of nodes without a run() (replay, counter)."""
        import ray

        self._ping_idle_nodes()
        refs = list(self._runs) + list(self._pings)
        if not refs:
            time.sleep(timeout_s)
            return None
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        for ref in ready:
            if ref in self._pings:
                name = self._pings.pop(ref)
                self._next_ping[name] = time.monotonic() + self._ping_every_s
                try:
                    self._note_process(name, ray.get(ref))
                except ray.exceptions.RayActorError as e:
                    error = self._recover(name, e)
                    if error is not None:
                        return error
                continue
            name = self._runs.pop(ref)
            try:
                ray.get(ref)
                self._finished.add(name)
            except ray.exceptions.RayActorError as e:
                error = self._recover(name, e)
                if error is not None:
                    return error
                self._start_run(name)
            except ray.exceptions.RayError as e:
                return NodeError(name, e, str(e))
        return None

    def _ping_idle_nodes(self) -> None:
        """Asks each node without a run() for its pid every `ping_every_s`."""
        now = time.monotonic()
        pinged = set(self._pings.values())
        for name in self._idle:
            if name not in pinged and now >= self._next_ping.get(name, 0.0):
                self._pings[self._handles[name].ready.remote()] = name

    def _recover(self, name: str, error: BaseException) -> NodeError | None:
        """After a node's process died: waits for Ray to rebuild it, or names the failure."""
        pid = self._wait_for_process(name)
        if pid is None:
            count = self.restarts.get(name, 0)
            return NodeError(name, error, f"its process died and was not rebuilt "
                                          f"(restarts so far: {count}); last error: {error}")
        self._note_process(name, pid)
        return None

    def _note_process(self, name: str, pid: int) -> None:
        """Counts a restart when a node answers from a new process."""
        if pid != self._pids.get(name):
            self._pids[name] = pid
            count = self.restarts[name] = self.restarts.get(name, 0) + 1
            print(f"[ray] node {name}'s process died; restarted ({count} of at most "
                  f"{self._config.max_restarts})", file=sys.stderr, flush=True)

    # -- stop ----------------------------------------------------------------

    def _stop_stage(self, stage: Stage) -> None:
        """Sends each node stop(), then waits (one deadline) for their run() calls to
        return or, in a stage without run(), for the stop() calls."""
        import ray

        stops = []
        for name in stage.names:
            try:
                stops.append(self._handles[name].stop.remote())
            except ray.exceptions.RayError:
                pass
        if stage.wait_for_run:
            runs = [ref for ref, name in self._runs.items() if name in stage.names]
            if runs:
                ray.wait(runs, num_returns=len(runs), timeout=self._join_timeout_s)
            for ref in runs:
                self._runs.pop(ref, None)
            return
        deadline = time.monotonic() + self._join_timeout_s
        for ref in stops:
            try:
                ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
            except ray.exceptions.RayError:  # Dead, or stuck past the deadline: close() kills it.
                pass

    def shutdown(self) -> None:
        """Stops every node stage by stage; processes stay up for queries."""
        # A node still in its constructor (stopped during start-up) has nothing
        # to flush or save, and a call to it would wait for the constructor:
        # close() kills it instead.
        built = [n for n in self._program.nodes if n in self._handles and n in self._pids]
        running = set(self._runs.values()) | self._finished
        for stage in self._program.shutdown_stages(built, running):
            self._stop_stage(stage)

    def _ray_up(self) -> bool:
        return self._ray_imported and sys.modules["ray"].is_initialized()

    def close(self) -> None:
        """Kills every node process and shuts down a Ray instance started here."""
        if not self._ray_imported:
            return  # Stopped before Ray was (fully) imported: nothing was started.
        import ray

        if not ray.is_initialized():
            if self._owns_ray:  # Interrupted inside ray.init: release what it started.
                ray.shutdown()
                self._owns_ray = False
            self._remove_temp_dir()
            return
        for handle in self._handles.values():
            try:
                ray.kill(handle, no_restart=True)
            except ray.exceptions.RayError:
                pass
        self._handles.clear()
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
        self._remove_temp_dir()

    def _remove_temp_dir(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None


def launch_ray(program: Program, config: RayConfig | None = None) -> LaunchResult:
    """Runs `program` as Ray processes until it ends, then releases them."""
    launcher = RayLauncher(program, config)
    try:
        return launcher.launch()
    finally:
        launcher.close()
