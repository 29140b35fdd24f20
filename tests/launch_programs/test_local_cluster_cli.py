"""`python -m launch_programs.local_cluster` as a user runs it: bad flags fail in one line
before Ray starts; SIGHUP (the terminal closed) stops every node it started, as Ctrl-C does.

Each command runs in a fresh process with a clean environment whose RAY_TMPDIR is the
test's own, so Ray's files (`ray/ray_current_cluster`, the session) are this test's
alone, whatever other Ray instance runs on the machine.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from launch_programs.processes import alive, descendants
from tests.commands import SUITE_MARK_ENV, shell_signals

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMAND = [sys.executable, "-m", "launch_programs.local_cluster"]


@pytest.fixture
def ray_tmpdir():
    """A short RAY_TMPDIR of the test's own (Ray's socket paths must stay under 108 bytes)."""
    path = tempfile.mkdtemp(prefix="rc")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(ray_tmpdir: str) -> dict[str, str]:
    """A bare shell's environment, and the suite's mark: what the cluster leaves is found."""
    return {"PATH": os.defpath, "RAY_TMPDIR": ray_tmpdir, "RAY_USAGE_STATS_ENABLED": "0",
            SUITE_MARK_ENV: os.environ[SUITE_MARK_ENV]}


@pytest.mark.parametrize("flag", [
    "--cpus_per_node=-1", "--cpus_per_node=0.5", "--cpus_per_node=nan",
    "--head_cpus=nan", "--head_cpus=inf", "--head_cpus=-1", "--head_cpus=0.5",
    "--workers=-1", "--workers=1.5",
])
def test_a_bad_flag_fails_fast_in_one_line_without_starting_ray(ray_tmpdir, flag):
    start = time.monotonic()
    done = subprocess.run([*COMMAND, "--workers=0", flag], cwd=ROOT, env=_env(ray_tmpdir),
                          capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 20
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    name, value = flag.split("=")
    assert done.stderr.splitlines() == [
        f"error: {name}: must be a whole number >= 0, got {value} (see --help)"]
    assert "[cluster]" not in done.stdout
    assert not os.listdir(ray_tmpdir), "Ray started"  # It would have made ray/ there.


def test_whole_cpu_counts_and_a_head_with_none_are_accepted():
    from launch_programs.local_cluster import make_parser

    args = make_parser().parse_args(["--workers=0", "--cpus_per_node=1.0", "--head_cpus=0"])
    assert (args.workers, args.cpus_per_node, args.head_cpus) == (0, 1, 0)


def _read_until(fd: int, text: bytes, timeout: float) -> bytes:
    """What `fd` gave until it held `text` (fails after `timeout` or at its end)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while text not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {text!r} within {timeout} s: {seen!r}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, f"end of output before {text!r}: {seen!r}"
            seen += chunk
    return seen


@contextlib.contextmanager
def _sighup_not_ignored():
    """Children started inside get SIGHUP's default action even where this test runs under
    nohup (an ignored signal stays ignored in a child; a handled one does not)."""
    previous = signal.signal(signal.SIGHUP, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)


def _left_behind(processes: dict[int, tuple[str, str]], timeout: float = 10.0) -> list[str]:
    """The processes of `processes` (pid -> (start, name)) still alive after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        left = [f"{pid} {name}" for pid, (start, name) in processes.items() if alive(pid, start)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


@pytest.mark.slow
def test_sighup_stops_the_cluster_as_ctrl_c_does(ray_tmpdir):
    with _sighup_not_ignored():
        cluster = subprocess.Popen([*COMMAND, "--workers=0", "--cpus_per_node=1"], cwd=ROOT,
                                   env=_env(ray_tmpdir), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True,
                                   preexec_fn=shell_signals)
    try:
        up = _read_until(cluster.stdout.fileno(), b"[cluster]", timeout=180).decode()
        assert "nodes up" in up, up
        current = os.path.join(ray_tmpdir, "ray", "ray_current_cluster")
        assert os.path.exists(current)
        processes = descendants(cluster.pid)
        assert any(name in ("raylet", "gcs_server") for _, name in processes.values()), processes
        cluster.send_signal(signal.SIGHUP)  # To it alone: its handler must stop the rest.
        out, err = cluster.communicate(timeout=60)
    finally:
        with contextlib.suppress(OSError):
            os.killpg(cluster.pid, signal.SIGKILL)  # Whatever a failure left.
        cluster.wait(timeout=30)
    assert cluster.returncode == 0, (cluster.returncode, err.decode()[-2000:])
    assert b"Traceback" not in err, err.decode()[-2000:]
    assert out.decode().splitlines()[-1] == "[cluster] stopped"
    assert not _left_behind(processes)
    assert not os.path.exists(current)


@pytest.mark.slow
def test_after_its_terminal_closed_it_stops_without_raising(ray_tmpdir):
    """The terminal gone: its output fails (EIO), and SIGHUP comes to its whole process
    group; it still stops every node and exits 0."""
    main, terminal = os.openpty()
    with _sighup_not_ignored():
        cluster = subprocess.Popen([*COMMAND, "--workers=0", "--cpus_per_node=1"], cwd=ROOT,
                                   env=_env(ray_tmpdir), stdin=terminal, stdout=terminal,
                                   stderr=terminal, start_new_session=True,
                                   preexec_fn=shell_signals)
    os.close(terminal)
    try:
        _read_until(main, b"[cluster]", timeout=180)
        processes = descendants(cluster.pid)
        os.close(main)  # The terminal closes: writes to it fail from now on.
        main = -1
        os.killpg(cluster.pid, signal.SIGHUP)
        cluster.wait(timeout=60)
    finally:
        if main >= 0:
            os.close(main)
        with contextlib.suppress(OSError):
            os.killpg(cluster.pid, signal.SIGKILL)
        cluster.wait(timeout=30)
    assert cluster.returncode == 0  # 1: an exception; 120: its output failed at exit.
    assert not _left_behind(processes)
    assert not os.path.exists(os.path.join(ray_tmpdir, "ray", "ray_current_cluster"))
