"""The Ray a run stands on: a local instance kept to this machine and this run (its session
files in a private folder, its servers on the loopback address, its workers importing what
this process can), or a cluster at `--ray_address`, checked to answer before anything starts."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import threading

from launch_programs.program import first_line

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
RAY_ADDRESS_ENV = "RAY_ADDRESS"
TEMP_PREFIX = "agentkit-ray-"


def private_temp_dir() -> str:
    """A new folder (mode 0700) for a local Ray's session files. Ray makes its temp dir
    mode 0777, so Ray gets `ray/` inside it: the 0700 parent keeps other users out. Under
    /tmp, not $TMPDIR: Ray's unix socket paths inside must stay under the kernel's 107 bytes."""
    import tempfile

    return tempfile.mkdtemp(prefix=TEMP_PREFIX, dir="/tmp")


def no_implicit_ray_init(ray) -> None:
    """Turns off Ray's auto-connect in this process: a node handle used after `close()` (a
    stray helper thread, a user's late call) would otherwise start a fresh default Ray under
    /tmp/ray that nothing shuts down; it now raises Ray's "not started" error instead."""
    hook = getattr(getattr(ray, "_private", None), "auto_init_hook", None)
    if hook is not None and hasattr(hook, "enable_auto_connect"):
        hook.enable_auto_connect = False


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


class OwnedProcesses:
    """The processes one start of Ray here makes, found again at its end, and this
    process's environment as it was before.

    Everything started inside `starting()` carries a mark in its environment, and so does
    every process below it: the raylet's agents too, which Ray does not track and which a
    raylet killed without its graceful stop (after Ray's one-second grace, on a loaded
    machine) leaves under pid 1. `end()` stops what is left of them, then puts back the
    environment variables (and Ray's cluster-mode switch) that starting Ray changed here, so
    that a process that ran Ray once (a test runner, a notebook) does not carry its
    connect timeouts or paths into the next.
    """

    def __init__(self):
        import uuid

        self.mark = uuid.uuid4().hex
        self._environ = dict(os.environ)
        self._started: dict[str, str] | None = None  # The environment once Ray was up.

    def starting(self):
        from launch_programs.processes import marking

        return marking(self.mark)

    def started(self) -> None:
        """Notes the environment as starting Ray left it: `end()` puts back only what
        starting changed and nobody changed again since (another session's settings stay)."""
        self._started = dict(os.environ)

    def left(self) -> dict[int, str]:
        """The marked processes alive now: pid -> start time."""
        from launch_programs.processes import marked

        return marked(self.mark)

    def end(self, grace_s: float = 2.0) -> list[str]:
        """Stops the marked processes still alive (SIGTERM, then SIGKILL after `grace_s`),
        restores the environment; the command lines it had to stop."""
        from launch_programs.processes import reap

        stopped = reap(self.left(), grace_s)
        started = dict(os.environ) if self._started is None else self._started
        for name in set(self._environ) | set(started):
            before, after = self._environ.get(name), started.get(name)
            if before == after or os.environ.get(name) != after:
                continue  # Not starting's change, or changed again since: not ours to undo.
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before
        ray = sys.modules.get("ray")
        constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
        if constants is not None and hasattr(constants, "ENABLE_RAY_CLUSTER"):
            constants.ENABLE_RAY_CLUSTER = constants.env_bool(
                constants.ENABLE_RAY_CLUSTERS_ENV_VAR, not constants.IS_WINDOWS_OR_OSX)
        return stopped


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


class RaySession:
    """The Ray a launcher runs on: a local instance of its own (`ray_address` empty), with
    `cpus_needed` CPUs at least, or the cluster at `ray_address`; `close()` shuts down what
    this session started and removes its session files."""

    def __init__(self, ray_address: str = "", cpus_needed: float = 0.0):
        self.ray_address = ray_address
        self.cpus_needed = cpus_needed
        self.imported = False  # `import ray` done (a signal may have cut it short before).
        self._owns_ray = False
        self._temp_dir: str | None = None  # A local Ray's session files; removed by close().
        self._owned: OwnedProcesses | None = None  # What start() changed and started here.

    def start(self) -> None:
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
        hold = in_main_thread and not self.ray_address
        if hold:
            for signum in previous:
                signal.signal(signum, lambda signum, frame: held.append(signum))
        self._owned = OwnedProcesses()
        os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
        try:
            import ray

            self.imported = True
            no_implicit_ray_init(ray)
            if not ray.is_initialized():
                os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # Node processes inherit it.
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
                self._owns_ray = True  # Set first: an init that fails still gets shut down.
                with _without_ray_sigterm_handler(ray), self._owned.starting():
                    self._init_ray(ray)
                self._owned.started()
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
        if self.ray_address:
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
        ray.init(address="local", num_cpus=max(os.cpu_count() or 1, int(self.cpus_needed + 0.999)),
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
        address = self.ray_address
        if is_loopback_address(address):  # A cluster on this machine (local_cluster).
            loopback_only(ray)
        quiet_token_auth_notice()
        try:
            ray.init(address=address, log_to_driver=True)
        except ConnectionError as e:
            raise RayAddressError(f"--ray_address={address}: {first_line(e)}") from None

    def is_up(self) -> bool:
        return self.imported and sys.modules["ray"].is_initialized()

    def close(self) -> None:
        """Shuts down a Ray instance started here (also one interrupted inside ray.init),
        stops any process it left (see OwnedProcesses), puts back the environment variables
        start() changed, and removes its session files."""
        try:
            if self._owns_ray:
                sys.modules["ray"].shutdown()
                self._owns_ray = False
        finally:
            if self._owned is not None:  # Ray's agents a hard-killed raylet left, and more.
                self._owned.end()
                self._owned = None
            if self._temp_dir is not None:
                shutil.rmtree(self._temp_dir, ignore_errors=True)
                self._temp_dir = None
