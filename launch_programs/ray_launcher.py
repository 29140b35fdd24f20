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

import sys
import time
import uuid
from collections import Counter
from typing import Any

from launch_programs.placement import ClusterNode, KindPlacement
from launch_programs.program import (
    FAILED_JOIN_TIMEOUT_S,
    Handle,
    LaunchResult,
    NodeError,
    Program,
    Stage,
    announce_failure,
    shutdown_despite_interrupts,
)
from launch_programs.ray_config import RayConfig
from launch_programs.ray_nodes import NodeProcess, RemoteNode, require_ray
from launch_programs.ray_session import RaySession


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
        self._session = RaySession(self._config.ray_address, sum(
            self._config.resources_for(n.kind).cpus for n in program.nodes.values()))

    def request_stop(self) -> None:
        """Asks a running `launch()` (in another thread) to stop the program."""
        self._stop_requested = True

    # -- start ---------------------------------------------------------------

    def _waves(self) -> list[list[str]]:
        """The nodes in the order they are built: first those that another node calls or
        that end the program, then the rest (the evaluator, which ends the program only
        after the actors). On a machine short of cores the nodes that the first learner step
        waits for do not share the CPU of their start-up (an import of TensorFlow each) with
        one that nobody waits for."""
        nodes = self._program.nodes
        called = {value.name for node in nodes.values()
                  for value in (*node.args, *node.kwargs.values()) if isinstance(value, Handle)}
        first = [name for name, node in nodes.items() if name in called
                 or (node.ends_program and node.kind != "evaluator")]
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
        ray = require_ray(name)

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
        ray = require_ray(name)

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
        self._session.start()
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
            if self._session.is_up() and shutdown_despite_interrupts(self.shutdown):
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

    def close(self) -> None:
        """Kills every node process and shuts down a Ray instance started here."""
        if not self._session.imported:
            return  # Stopped before Ray was (fully) imported: nothing was started.
        import ray

        if ray.is_initialized():
            for handle in self._handles.values():
                try:
                    ray.kill(handle, no_restart=True)
                except ray.exceptions.RayError:
                    pass
        self._handles.clear()
        self._session.close()

