"""This host's processes, read from Linux /proc: memory of a process tree, and who is running.

Read directly rather than through `ps`, whose output width (and so whether a long
command line, such as a raylet's under a deep checkout, still shows its name) depends
on the terminal and on the `ps` build. Light on purpose: scripts that watch runs
import it without TensorFlow.
"""

from __future__ import annotations

import os

# What names a Ray process in its command line: the raylet, the GCS, and a worker
# (which retitles itself `ray::<class or task>`).
RAY_PROCESS_MARKS = ("raylet", "gcs_server", "ray::")
_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else 4096 / 2**20
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _children(pid: int) -> list[int]:
    """The direct children of `pid` (Linux /proc), [] where that cannot be read."""
    children: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return children


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE_MB
    except (OSError, IndexError, ValueError):
        return 0.0  # Gone between listing and reading, or not Linux.


def descendants(root: int) -> list[int]:
    """`root` and every process under it, [root] alone where /proc cannot be read."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.append(pid)
            todo += _children(pid)
    return found


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) that `pid` has used so far, its exited children not
    counted; 0.0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def process_table() -> list[tuple[int, int, str]]:
    """(pid, process group, whole command line) of every process on this host; [] where
    /proc cannot be read (not Linux)."""
    table = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return table
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # Gone between listing and reading.
        # The name in stat may hold spaces and brackets: the fields after it follow the last ")".
        fields = stat[stat.rfind(")") + 2:].split()
        if not args:
            args = "[" + stat[stat.find("(") + 1:stat.rfind(")")] + "]"  # A kernel thread.
        table.append((pid, int(fields[2]), args))
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
    total, todo, seen = 0.0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _rss_mb(pid)
        todo += _children(pid)
    return total
