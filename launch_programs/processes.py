"""This host's processes, read from Linux /proc: a run's process tree, its memory and CPU
time, whether a process still lives, and what each is.

For benchmarks, fault-injection tests and the driver's monitor. Read directly rather
than through `ps`, whose output width (and so whether a long command line, such as a
raylet's under a deep checkout, still shows its name) depends on the terminal and on
the `ps` build. Light on purpose: scripts that watch runs import it without TensorFlow.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

# What names a Ray process in its command line: the raylet, the GCS, and a worker
# (which retitles itself `ray::<class or task>`).
RAY_PROCESS_MARKS = ("raylet", "gcs_server", "ray::")
_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else 4096 / 2**20
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _pids() -> list[int]:
    """Every pid in /proc now; [] where /proc cannot be read (not Linux)."""
    try:
        return [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE_MB
    except (OSError, IndexError, ValueError):
        return 0.0  # Gone between listing and reading, or not Linux.


def _read_stat(pid: int | str) -> tuple[str, list[str]]:
    """(command name, the fields of /proc/<pid>/stat after it, state first). The name may
    hold spaces and brackets, so the fields are split after its last ")"."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    return stat[stat.index("(") + 1:stat.rindex(")")], stat.rsplit(")", 1)[1].split()


def command_line(pid: int) -> str:
    """`pid`'s whole command line ("[name]" for a kernel thread); "" once it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        return args or f"[{_read_stat(pid)[0]}]"
    except OSError:
        return ""


def descendants(root: int) -> dict[int, tuple[str, str]]:
    """Every live process below `root` (not `root` itself): pid -> (start time, command
    name); {} where /proc cannot be read."""
    table = {}
    for pid in _pids():
        with contextlib.suppress(OSError, ValueError, IndexError):
            comm, fields = _read_stat(pid)
            if fields[0] != "Z":
                table[pid] = (int(fields[1]), fields[19], comm)
    found: dict[int, tuple[str, str]] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, start, comm) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = (start, comm)
                frontier.append(pid)
    return found


def alive(pid: int, start: str) -> bool:
    """Whether `pid` is still the process that started at `start` (a reused pid is not) and
    no zombie."""
    try:
        _, fields = _read_stat(pid)
    except OSError:
        return False
    return fields[19] == start and fields[0] != "Z"


def outer_pid(root: int, inner: int) -> int:
    """This machine's pid of the process below `root` whose innermost pid is `inner` (a run
    isolated in its own pid namespace prints pids of that namespace)."""
    for pid in descendants(root):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("NSpid:") and int(line.split()[-1]) == inner:
                        return pid
    raise LookupError(f"no process below {root} has pid {inner} in its namespace")


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) that `pid` has used so far, its exited children not
    counted; 0.0 once it is gone."""
    try:
        _, fields = _read_stat(pid)
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def process_table() -> list[tuple[int, int, str]]:
    """(pid, process group, whole command line) of every process on this host; [] where
    /proc cannot be read (not Linux)."""
    table = []
    for pid in _pids():
        args = command_line(pid)
        try:
            group = int(_read_stat(pid)[1][2])
        except OSError:
            continue  # Gone between listing and reading.
        if args:
            table.append((pid, group, args))
    return table


def process_kind(args: str) -> str:
    """What a process of a run is, from its command line: Ray's GCS, a raylet, a Ray worker
    (a node process, or an idle worker Ray started), the command line's driver, or other."""
    if "gcs_server" in args:
        return "ray_gcs"
    if "raylet" in args:
        return "ray_raylet"
    if "ray::" in args:
        return "ray_worker"
    if "launch_programs.run" in args:
        return "driver"
    return "other"  # Ray's log monitor, its dashboard agent, a benchmark's own process.


def process_tree_rss_mb(root: int | None = None) -> float | None:
    """Resident memory (MB) of process `root` (default: this one) and all its descendants;
    None where /proc cannot be read (not Linux)."""
    root = os.getpid() if root is None else root
    if not os.path.exists(f"/proc/{root}/statm"):
        return None
    return _rss_mb(root) + sum(_rss_mb(pid) for pid in descendants(root))


# Ray's helper processes (its dashboard and runtime-env agents) are children of a raylet
# that Ray does not track: when a raylet dies without its graceful stop (SIGKILL after
# Ray's one-second grace, on a loaded machine), they live on under pid 1. What a session
# starts carries a mark in its environment, which every process below it inherits, so
# that the session can find all of them at its end, orphans included.
OWNER_ENV = "AGENTKIT_PROCESS_OWNER"


def marked(value: str, name: str = OWNER_ENV) -> dict[int, str]:
    """Live processes (not this one) whose environment holds `name=value`: pid -> start
    time. Only processes this user may read are seen."""
    needle = f"{name}={value}".encode()
    found: dict[int, str] = {}
    for pid in _pids():
        if pid == os.getpid():
            continue
        with contextlib.suppress(OSError, IndexError):
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            _, fields = _read_stat(pid)
            if fields[0] != "Z":
                found[pid] = fields[19]
    return found


@contextlib.contextmanager
def marking(value: str, name: str = OWNER_ENV):
    """Processes started inside the block (and all theirs) carry `name=value`; the variable
    is as it was after it."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def reap(processes: dict[int, str], grace_s: float = 5.0) -> list[str]:
    """Ends `processes` (pid -> start time): SIGTERM, up to `grace_s` to exit, then SIGKILL;
    the command lines of those that were still alive to be signalled."""
    living = {pid: start for pid, start in processes.items() if alive(pid, start)}
    names = [command_line(pid) or str(pid) for pid in living]
    for signum, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        for pid in living:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)
        deadline = time.monotonic() + wait_s
        while living and time.monotonic() < deadline:
            time.sleep(0.05)
            living = {pid: start for pid, start in living.items() if alive(pid, start)}
        if not living:
            break
    return names
