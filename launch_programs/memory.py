"""Whether a run fits in this machine's memory, checked before launch: a flag that asks for
more than the machine has (`--max_replay_size=1e9`, `--eval_episodes=1e6`, a huge
`--batch_size`) fails in one line naming it, not in an OOM kill minutes later.

The estimate is a lower bound, so that a run that fits is never refused:

- replay: each table's `max_size` items, each at least Reverb's own bookkeeping
  (`REVERB_ITEM_BYTES`, measured with one-scalar items, bench/replay.py) plus its
  signature's raw bytes compressed `COMPRESSION` times (more than Reverb's zstd gets on
  Atari frames: about 10x for frames-once items, 4x for R2D2's sequences);
- environments: every actor's and the evaluator's (an evaluation plays its episodes at once,
  one environment each), at the bytes a few made here took;
- the learner's batch: `batch_size` items, raw, once.

Only local runs are checked: a cluster's nodes live on other hosts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import numpy as np

REVERB_ITEM_BYTES = 520  # Reverb's bytes per item beyond its data (bench/replay.py).
COMPRESSION = 50  # Never reached by Reverb's compression of this project's items.
SAMPLE_ENVIRONMENTS = 4  # Made to measure an environment's bytes (their mean).
GB = 1e9


Folders = list[tuple[str, str]]  # memory_cgroup_folders(): (folder, "cgroup2" or "cgroup").


def available_bytes(meminfo: str = "/proc/meminfo", proc_self: str = "/proc/self",
                    folders: Folders | None = None) -> int | None:
    """What this process can still allocate before the kernel's OOM killer acts: the
    machine's MemAvailable, or less where a memory cgroup (a container, a CI runner, a
    batch scheduler's job) caps this process lower; None if neither says. `folders`: the
    cgroups found once by `memory_cgroup_folders` (a watch that looks often passes them:
    finding them is half of a look's 0.4 ms)."""
    return _least(_meminfo(meminfo, "MemAvailable:"), _cgroup_memory(proc_self, folders)[1])


def total_bytes(meminfo: str = "/proc/meminfo", proc_self: str = "/proc/self",
                folders: Folders | None = None) -> int | None:
    """All this process may ever use: MemTotal, or a memory cgroup's lower limit."""
    return _least(_meminfo(meminfo, "MemTotal:"), _cgroup_memory(proc_self, folders)[0])


def _least(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _meminfo(meminfo: str, key: str) -> int | None:
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# (limit, usage, the memory.stat entries of page cache and of the shared memory within it)
# for cgroup v2 and v1. A v1 limit at or above 2**62 is "no limit".
_CGROUP_FILES = {"cgroup2": ("memory.max", "memory.current", "file", "shmem"),
                 "cgroup": ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_cache",
                            "total_shmem")}


def cgroup_headroom_bytes(proc_self: str = "/proc/self") -> int | None:
    """The least headroom of the memory cgroups this process is in, from its own up to the
    hierarchy's root; None where none has a limit. Headroom is the limit less what the
    kernel cannot take back: usage without its file cache (which the kernel drops at the
    limit before it kills; shared memory in it stays). With the cache counted as used, a
    cgroup at its limit reads a few MB of room for minutes, then the OOM kill."""
    return _cgroup_memory(proc_self)[1]


def _cgroup_memory(proc_self: str, folders: Folders | None = None
                   ) -> tuple[int | None, int | None]:
    """(the least limit, the least headroom) of this process's memory cgroups."""
    limits, rooms = [], []
    for folder, kind in memory_cgroup_folders(proc_self) if folders is None else folders:
        limit_file, usage_file, cache_key, shared_key = _CGROUP_FILES[kind]
        try:
            with open(os.path.join(folder, limit_file)) as f:
                limit = f.read().strip()
            if limit == "max" or int(limit) >= 2**62:
                continue
            with open(os.path.join(folder, usage_file)) as f:
                usage = int(f.read())
            stat = {}
            with open(os.path.join(folder, "memory.stat")) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    stat[key] = int(value)
        except (OSError, ValueError):
            continue
        kept = usage - stat.get(cache_key, 0) + stat.get(shared_key, 0)
        limits.append(int(limit))
        rooms.append(max(0, int(limit) - kept))
    return _least(*limits), _least(*rooms)


def memory_cgroup_folders(proc_self: str = "/proc/self") -> Folders:
    """(folder, "cgroup2" or "cgroup") of each memory cgroup from this process's own up to
    its mount's root, read from /proc/self/cgroup and mountinfo."""
    try:
        with open(os.path.join(proc_self, "cgroup")) as f:
            memberships = [line.rstrip("\n").split(":", 2) for line in f]
        with open(os.path.join(proc_self, "mountinfo")) as f:
            mounts = [line.split() for line in f]
    except OSError:
        return []
    folders = []
    for fields in mounts:
        try:
            dash = fields.index("-")
            root, point, kind, options = fields[3], fields[4], fields[dash + 1], fields[-1]
        except (ValueError, IndexError):
            continue
        for member in memberships:
            if len(member) != 3:
                continue
            _, controllers, path = member
            memory = controllers == "" if kind == "cgroup2" else (
                kind == "cgroup" and "memory" in controllers.split(",")
                and "memory" in options.split(","))
            if not memory or not (path == root or path.startswith(root.rstrip("/") + "/")):
                continue
            relative = path[len(root.rstrip("/")):].strip("/")
            parts = relative.split("/") if relative else []
            for depth in range(len(parts), -1, -1):
                folders.append((os.path.join(point, *parts[:depth]), kind))
    return folders


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def environment_bytes(factory: Callable[..., Any], count: int = SAMPLE_ENVIRONMENTS) -> int:
    """This process's resident memory's growth while `count` environments are made and reset,
    over `count`. One more is made first, outside the count: it takes the imports and the
    memory a closed environment gave back to the allocator (which would read as no growth);
    a small environment grows memory by less than a page, so one alone would read 0."""
    made = []
    try:
        for seed in range(count + 1):
            if seed == 1:
                before = _resident_bytes()
            made.append(factory(seed=seed + 1, evaluation=False))
            made[-1].reset()
        return max(0, _resident_bytes() - before) // count
    finally:
        for environment in made:
            environment.close()


def raw_bytes(signature: Any) -> int:
    """An item's bytes before compression, from its table's signature (0 without one)."""
    import tensorflow as tf

    total = 0
    for spec in tf.nest.flatten(signature):
        if isinstance(spec, tf.TensorSpec) and spec.shape.is_fully_defined():
            total += int(np.prod(spec.shape.as_list(), dtype=np.int64)) * spec.dtype.size
    return total


@dataclasses.dataclass(frozen=True)
class Part:
    """One part of a run's memory: what it is, the flags that size it, its lower bound."""
    what: str
    flags: str
    bytes: int


def lower_bound(tables: list, environments: int, environment_bytes_each: int,
                batch_size: int, replay_flags: str = "--max_replay_size") -> list[Part]:
    """The run's memory parts, largest first; `replay_flags` names the tables' sizes."""
    sizes = [(int(t.info.max_size), raw_bytes(t.info.signature)) for t in tables]
    items = sum(size for size, _ in sizes)
    largest_item = max((raw for _, raw in sizes), default=0)
    replay = sum(size * (REVERB_ITEM_BYTES + raw // COMPRESSION) for size, raw in sizes)
    parts = [Part(f"replay: {items:,} items", replay_flags, replay),
             Part(f"{environments:,} environments", "--num_actors x --num_envs_per_actor "
                  "+ --eval_episodes", environments * environment_bytes_each),
             Part(f"a batch of {batch_size:,} items", "--batch_size", batch_size * largest_item)]
    return sorted(parts, key=lambda p: -p.bytes)


def check_fits(parts: list[Part], available: int | None) -> None:
    """Raises UsageError (one line, naming the flags of the largest part) when the parts'
    sum is more than the memory available."""
    from launch_programs.flags import UsageError

    needed = sum(p.bytes for p in parts)
    if available is None or needed <= available:
        return
    largest = parts[0]
    shares = ", ".join(f"{p.what} {p.bytes / GB:.1f} GB" for p in parts if p.bytes >= 0.05 * GB)
    raise UsageError(f"{largest.flags}: this run needs at least {needed / GB:.1f} GB of memory "
                     f"({shares}) and {available / GB:.1f} GB available to it (MemAvailable, or "
                     f"its memory cgroup's headroom); "
                     f"lower {largest.flags}")


def check_memory(run, builder, factory, spec) -> None:
    """Refuses a local run whose lower bound does not fit in the available memory."""
    from agentkit.config import MAX_TABLE_SIZE_FIELDS

    if run.on_cluster:
        return
    program = run.program_config
    layout = program.layout
    environments = layout.num_actors * layout.num_envs_per_actor + program.eval_episodes
    tables = builder.make_replay_tables(spec=spec)
    each = environment_bytes(factory) if environments > SAMPLE_ENVIRONMENTS else 0
    batch = int(getattr(run.agent_config, "batch_size", 0) or 0)
    sizes = [f"--{name}" for name in MAX_TABLE_SIZE_FIELDS if hasattr(run.agent_config, name)]
    parts = lower_bound(tables, environments, each, batch,
                        " and ".join(sizes) or f"--agent={run.agent}'s replay size")
    check_fits(parts, available_bytes())
