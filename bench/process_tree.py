"""The processes a run started, seen from outside it (for fault-injection benchmarks and tests).

A run isolated in its own pid namespace prints pids of that namespace; these
helpers read this machine's /proc, where every process has its outer pid.
"""

from __future__ import annotations

import contextlib
import os


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state first)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def descendants(root: int) -> dict[int, tuple[str, str]]:
    """Every live process below `root`: pid -> (start time, command name)."""
    table = {}
    for name in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                comm = stat[stat.index("(") + 1:stat.rindex(")")]
                table[int(name)] = (int(fields[1]), fields[19], comm)
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
    """Whether `pid` is still the process that started at `start` (a reused pid is not) and no zombie."""
    try:
        fields = _stat(pid)
    except OSError:
        return False
    return fields[19] == start and fields[0] != "Z"


def outer_pid(root: int, inner: int) -> int:
    """This machine's pid of the process below `root` whose innermost pid is `inner`."""
    for pid in descendants(root):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("NSpid:") and int(line.split()[-1]) == inner:
                        return pid
    raise LookupError(f"no process below {root} has pid {inner} in its namespace")
