"""launch_programs/memory.py: a run that cannot fit in memory is refused before launch, in one
line naming the flag, and a run that fits is never refused (the estimate is a lower bound)."""

from __future__ import annotations

import os
import types

import numpy as np
import pytest
import tensorflow as tf

from launch_programs import memory
from launch_programs.flags import UsageError
from tests.commands import run_module


def _table(max_size: int, signature) -> types.SimpleNamespace:
    return types.SimpleNamespace(info=types.SimpleNamespace(max_size=max_size,
                                                            signature=signature))


def test_an_items_raw_bytes_come_from_its_signature():
    signature = {"frames": tf.TensorSpec([2, 84, 84], tf.uint8),
                 "reward": tf.TensorSpec([], tf.float32), "index": tf.TensorSpec([3], tf.int64)}
    assert memory.raw_bytes(signature) == 2 * 84 * 84 + 4 + 24
    assert memory.raw_bytes(None) == 0


def test_the_lower_bound_adds_replay_environments_and_the_batch_largest_first():
    tables = [_table(1000, tf.TensorSpec([5000], tf.uint8)),  # 520 + 100 bytes an item.
              _table(10, tf.TensorSpec([50_000], tf.uint8))]  # 520 + 1,000; the largest item.
    parts = memory.lower_bound(tables, environments=8, environment_bytes_each=1_000_000,
                               batch_size=32)
    assert [(p.flags, p.bytes) for p in parts] == [
        ("--num_actors x --num_envs_per_actor + --eval_episodes", 8_000_000),
        ("--batch_size", 32 * 50_000),
        ("--max_replay_size", 1000 * 620 + 10 * 1520)]
    assert parts[2].what == "replay: 1,010 items"


def test_a_run_that_fits_passes_and_one_that_does_not_names_its_largest_part():
    parts = [memory.Part("replay: 10 items", "--max_replay_size", 3 * 10**9),
             memory.Part("a batch", "--batch_size", 10**6)]
    memory.check_fits(parts, available=4 * 10**9)
    memory.check_fits(parts, available=None)  # A kernel that does not say: no refusal.
    with pytest.raises(UsageError) as e:
        memory.check_fits(parts, available=2 * 10**9)
    message = str(e.value)
    assert message.startswith("--max_replay_size: this run needs at least 3.0 GB") and \
        "2.0 GB available" in message and message.endswith("lower --max_replay_size")
    assert "\n" not in message and "a batch" not in message  # Parts under 0.05 GB left out.


def test_available_memory_is_read_from_meminfo(tmp_path):
    meminfo, no_proc = tmp_path / "meminfo", str(tmp_path / "no-proc")
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n")
    assert memory.available_bytes(str(meminfo), no_proc) == 20000000 * 1024
    meminfo.write_text("MemTotal:       24000000 kB\n")
    assert memory.available_bytes(str(meminfo), no_proc) is None
    assert memory.available_bytes(str(tmp_path / "none"), no_proc) is None


def _fake_proc(tmp_path, kind: str, path: str, folders: dict[str, dict[str, str]]) -> str:
    """A /proc/self whose process sits at `path` of a memory cgroup hierarchy of `kind`
    ("cgroup2" or "cgroup") mounted at tmp_path/cg, with `folders`' files."""
    proc, mount = tmp_path / "proc", tmp_path / "cg"
    proc.mkdir(parents=True)
    line = f"0::{path}" if kind == "cgroup2" else f"4:memory:{path}"
    (proc / "cgroup").write_text(f"9:name=systemd:/\n{line}\n")
    options = "rw,nsdelegate" if kind == "cgroup2" else "rw,memory"
    (proc / "mountinfo").write_text(
        f"23 1 0:21 / /proc rw - proc proc rw\n"
        f"31 23 0:28 / {mount} rw,relatime - {kind} {kind} {options}\n")
    for folder, files in folders.items():
        (mount / folder).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (mount / folder / name).write_text(text)
    return str(proc)


def test_a_cgroup_v2_limit_caps_the_available_memory_at_its_least_headroom(tmp_path):
    """A container's limit is what the OOM killer enforces, whatever the machine has:
    limit - usage + the page cache the kernel frees first, the least along the path."""
    gb = 10**9
    proc = _fake_proc(tmp_path, "cgroup2", "/jobs/run", {
        ".": {},  # The root has no memory.max.
        "jobs": {"memory.max": str(8 * gb), "memory.current": str(2 * gb),
                 "memory.stat": "anon 1\nfile 0\nshmem 0\n"},
        "jobs/run": {"memory.max": str(3 * gb), "memory.current": str(2 * gb),
                     "memory.stat": f"anon 1\nfile {gb // 2}\nshmem {gb // 10}\n"}})
    # The file cache is the kernel's to drop before it kills; shared memory in it is not.
    assert memory.cgroup_headroom_bytes(proc) == 3 * gb - (2 * gb - gb // 2 + gb // 10)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:   24000000 kB\nMemAvailable:   20000000 kB\n")
    assert memory.available_bytes(str(meminfo), proc) == 1.4 * gb  # Less than the machine's.
    found = memory.memory_cgroup_folders(proc)  # A watch finds them once, then passes them.
    assert memory.available_bytes(str(meminfo), folders=found) == 1.4 * gb
    assert memory.total_bytes(str(meminfo), proc) == 3 * gb  # The least limit.
    meminfo.write_text("MemTotal:   2000000 kB\nMemAvailable:   1000000 kB\n")
    assert memory.available_bytes(str(meminfo), proc) == 1000000 * 1024  # The machine's less.
    assert memory.total_bytes(str(meminfo), proc) == 2000000 * 1024


def test_an_unlimited_cgroup_leaves_the_machines_figure(tmp_path):
    proc = _fake_proc(tmp_path, "cgroup", "/a", {
        "a": {"memory.limit_in_bytes": str(2**63 - 4096), "memory.usage_in_bytes": "5",
              "memory.stat": "total_inactive_file 0\n"}})
    assert memory.cgroup_headroom_bytes(proc) is None
    proc2 = _fake_proc(tmp_path / "v2", "cgroup2", "/a", {"a": {"memory.max": "max"}})
    assert memory.cgroup_headroom_bytes(proc2) is None


def test_a_cgroup_v1_limit_counts_its_file_cache_as_room_but_not_its_shared_memory(tmp_path):
    proc = _fake_proc(tmp_path, "cgroup", "/a/b", {
        "a/b": {"memory.limit_in_bytes": "1000", "memory.usage_in_bytes": "900",
                "memory.stat": "cache 9\ntotal_cache 500\ntotal_shmem 100\n"}})
    assert memory.cgroup_headroom_bytes(proc) == 1000 - (900 - 500 + 100)


class _Environment:
    def __init__(self, megabytes: int):
        self.megabytes, self.data, self.closed = megabytes, None, False

    def reset(self):
        self.data = np.ones(self.megabytes * 2**20, np.uint8)  # Touched: resident.

    def close(self):
        self.closed = True


def test_an_environments_bytes_are_what_making_a_few_grew_memory_by():
    made = []

    def factory(seed, evaluation):
        made.append(_Environment(16))
        return made[-1]

    each = memory.environment_bytes(factory, count=4)
    assert 15 * 2**20 <= each <= 18 * 2**20
    assert len(made) == 5 and all(e.closed for e in made)  # One made before the count.


@pytest.mark.parametrize("flag, said", [
    ("--max_replay_size=2000000000", "--max_replay_size: this run needs at least"),
    ("--eval_episodes=1000000000", "--eval_episodes: this run needs at least"),
    ("--max_replay_size=1000000000000", "--max_replay_size: must be <= 2,147,483,647"),
])
def test_a_flag_that_blows_up_memory_is_refused_before_launch(flag, said, tmp_path):
    done = run_module("launch_programs.run", "--agent=dqn", "--env=atari:Pong", flag,
                      "--max_actor_steps=1", f"--logdir={tmp_path}/run", timeout=120)
    lines = done.stderr.strip().splitlines()  # TensorFlow's and ALE's banners come first.
    assert done.returncode == 2 and lines[-1].startswith("error: ") and said in lines[-1], lines
    assert [line for line in lines if "error" in line] == lines[-1:], lines
    assert "Traceback" not in done.stderr and not os.path.exists(tmp_path / "run")
