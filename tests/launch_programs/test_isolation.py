"""isolate_local_run(): a local run is unreachable from outside and leaves no process behind.

Each test starts a small helper program (written below) in a fresh Python:
the test process itself runs threads, and isolation is only possible in a
single-threaded one. Where the kernel refuses user namespaces the tests skip.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from launch_programs.isolation import ISOLATED
from launch_programs.processes import alive, descendants

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HELPER = r"""
import os, signal, sys, time
mode = sys.argv[1]
# As a shell starts a program: under nohup (as CI may run) SIGHUP would come in ignored.
for signum in (signal.SIGHUP, signal.SIGTERM):
    signal.signal(signum, signal.SIG_DFL)
if mode == "tty":  # A session leader (start_new_session) whose stdin is a pty: make it the terminal.
    import fcntl, termios
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
if mode == "threads":
    import threading
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
before = (os.getpid(), os.readlink("/proc/self/ns/net"), os.readlink("/proc/self/ns/pid"))
import launch_programs.isolation as isolation
from launch_programs.isolation import isolate_local_run, isolation_status
if mode == "noproc":  # As where a container masks parts of /proc: mounting a new one is refused.
    real = isolation._libc_call
    def refuse_proc(name, *args):
        if name == "mount" and args[0] == b"proc":
            raise OSError(1, "mount: Operation not permitted")
        real(name, *args)
    isolation._libc_call = refuse_proc
print("message:", isolate_local_run(), flush=True)
print("status:", isolation_status(), flush=True)
after = (os.getpid(), os.readlink("/proc/self/ns/net"), os.readlink("/proc/self/ns/pid"))
print("changed:", before != after, flush=True)
with open("/proc/self/stat") as f:
    print("pid in /proc:", f.read().split()[0], "getpid:", os.getpid(), flush=True)
if mode in ("signals", "tty"):
    received = []
    def handle(signum, frame):
        received.append(signum)
        print("handled", signal.Signals(signum).name, flush=True)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handle)
    if mode == "tty":
        print("foreground:", os.tcgetpgrp(0) == os.getpgrp(), flush=True)
    print("ready", flush=True)
    while not received:
        time.sleep(0.05)
    time.sleep(1.0)  # A second delivery of the signal would show here.
    sys.exit(40 + received[0])
if mode == "uncaught":  # No handler for SIGTERM or SIGHUP: their default action must still apply.
    print("ready", flush=True)
    while True:
        time.sleep(1)
if mode in ("exit", "noproc"):
    sys.exit(int(sys.argv[2]))
if mode == "reverb":
    import reverb
    from components.replay.server import NoCheckpointer
    port = int(sys.argv[2])
    server = reverb.Server(tables=[reverb.Table.queue("q", 10)], port=port,
                           checkpointer=NoCheckpointer())
    client = reverb.Client(f"localhost:{port}")
    client.insert([1.0], {"q": 1.0})
    print("sampled", float(next(iter(client.sample("q", num_samples=1)))[0].data[0]), flush=True)
    print("ready", flush=True)
    sys.stdin.readline()
    server.stop()
if mode == "ray":
    import ray
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             _temp_dir=sys.argv[2])  # The test's own folder, not the host's /tmp/ray.
    @ray.remote
    class Adder:
        def add(self, x):
            return x + 1
    print("result", ray.get(Adder.remote().add.remote(41), timeout=60), flush=True)
    print("ready", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture(scope="module")
def helper(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("isolation") / "helper.py"
    path.write_text(HELPER)
    return str(path)


@pytest.fixture(scope="module")
def namespaces() -> None:
    """Skips where the kernel refuses the namespaces (the probe runs in a fresh, thread-free Python)."""
    code = "from launch_programs.isolation import _probe; print(_probe())"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         timeout=30)
    if out.returncode != 0 or out.stdout.strip() != "None":
        pytest.skip(f"namespaces refused here: {(out.stdout + out.stderr).strip()}")


@pytest.fixture
def start(helper, namespaces):
    """Starts the helper in some mode; at the end kills what is left of it."""
    started: list[subprocess.Popen] = []

    def run(*args: str, **options) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2", RAY_USAGE_STATS_ENABLED="0",
                   RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
        options.setdefault("stdin", subprocess.PIPE)
        options.setdefault("stdout", subprocess.PIPE)
        proc = subprocess.Popen([sys.executable, helper, *args], cwd=REPO, env=env, **options)
        proc.seen = b""  # type: ignore[attr-defined]
        started.append(proc)
        return proc

    yield run
    for proc in started:
        with contextlib.suppress(OSError):
            proc.kill()  # The isolated run (and all it started) dies with it.
        proc.wait(timeout=30)


def read_until(proc: subprocess.Popen, text: str, timeout: float = 60.0, fd: int | None = None) -> str:
    """Output of `proc` so far, once it holds `text` (fails after `timeout` or at EOF)."""
    fd = proc.stdout.fileno() if fd is None else fd
    deadline = time.monotonic() + timeout
    while text.encode() not in proc.seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {text!r} within {timeout} s; output: {proc.seen.decode(errors='replace')}"
        if select.select([fd], [], [], left)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError as e:  # A pty whose other side has closed.
                chunk = b"" if e.errno == errno.EIO else b"?"
            assert chunk, f"EOF before {text!r}; output: {proc.seen.decode(errors='replace')}"
            proc.seen += chunk
    return proc.seen.decode(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def outer_addresses() -> list[str]:
    """This machine's non-loopback IPv4 addresses (as far as it can tell)."""
    found = set()
    with contextlib.suppress(OSError):
        found |= {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.123", 9))  # No packet is sent: only picks the route's source address.
        found.add(s.getsockname()[0])
    return sorted(a for a in found if not a.startswith("127."))


def connects(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2.0)
        try:
            s.connect((host, port))
        except OSError:
            return False
        return True


def test_reverb_inside_is_unreachable_from_outside(start):
    port = free_port()
    proc = start("reverb", str(port))
    out = read_until(proc, "ready")
    assert "sampled 1.0" in out and "status: private network namespace (loopback only)" in out
    for host in ["127.0.0.1", *outer_addresses()]:
        assert not connects(host, port), f"the isolated Reverb server answers on {host}:{port}"
    with socket.socket() as outside:  # Another namespace: the same port is free out here.
        outside.bind(("0.0.0.0", port))
        outside.listen()
        assert connects("127.0.0.1", port)
    proc.stdin.write(b"\n")
    proc.stdin.flush()
    assert proc.wait(timeout=30) == 0


def test_ray_runs_inside_and_nothing_outlives_kill_9(start):
    ray_tmp = tempfile.mkdtemp(dir="/tmp")  # Short: Ray's socket paths must fit 107 bytes.
    proc = start("ray", os.path.join(ray_tmp, "ray"))
    assert "result 42" in read_until(proc, "ready", timeout=90)
    time.sleep(1.0)  # Let Ray's agents finish starting.
    run = descendants(proc.pid)
    names = {name for _, name in run.values()}
    assert "raylet" in names and "gcs_server" in names, names
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 15.0
    while any(alive(pid, st) for pid, (st, _) in run.items()) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = {pid: name for pid, (st, name) in run.items() if alive(pid, st)}
    for pid in left:  # Do not leave them to other tests.
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert not left, f"outlived kill -9 of the launched process by 15 s: {left}"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_launched_process_reaches_the_run_once(start, signum):
    proc = start("signals")
    read_until(proc, "ready")
    os.kill(proc.pid, signum)
    assert proc.wait(timeout=20) == 40 + signum  # The run's own exit code.
    out = proc.seen + proc.stdout.read()
    assert out.count(b"handled") == 1, out


def test_ctrl_c_at_a_terminal_reaches_the_run_once(start):
    master, slave = os.openpty()
    try:
        proc = start("tty", stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    finally:
        os.close(slave)
    try:
        assert "foreground: True" in read_until(proc, "ready", fd=master)
        os.write(master, b"\x03")
        assert proc.wait(timeout=20) == 40 + signal.SIGINT
        with contextlib.suppress(AssertionError):
            read_until(proc, "never printed", timeout=0.5, fd=master)  # The rest of the output.
        assert proc.seen.count(b"handled SIGINT") == 1, proc.seen
    finally:
        os.close(master)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_the_run_does_not_handle_still_ends_it(start, signum):
    """PID 1 of a pid namespace would ignore it: the supervisor applies the default action."""
    proc = start("uncaught")
    read_until(proc, "ready")
    run = descendants(proc.pid)
    os.kill(proc.pid, signum)
    assert proc.wait(timeout=20) == 128 + signum
    assert not any(alive(pid, st) for pid, (st, _) in run.items())


def test_the_runs_exit_code_is_the_launched_process_exit_code(start):
    proc = start("exit", "7")
    assert proc.wait(timeout=20) == 7
    out = proc.stdout.read().decode()
    assert "changed: True" in out and "/proc of the new pid namespace" in out
    assert "pid in /proc: 1 getpid: 1" in out  # Ray and psutil look pids up there.


def test_without_a_new_proc_the_run_is_still_isolated(start):
    proc = start("noproc", "3")
    assert proc.wait(timeout=20) == 3
    out = proc.stdout.read().decode()
    assert "/proc not remounted (mount: Operation not permitted)" in out
    assert "status: private network namespace (loopback only)" in out
    assert "getpid: 1" in out and "pid in /proc: 1 " not in out  # The outer /proc, outer pids.


def test_a_process_with_threads_is_left_unchanged(start):
    proc = start("threads")
    proc.stdin.close()
    out = proc.stdout.read().decode()
    assert proc.wait(timeout=20) == 0
    assert "message: network isolation not possible: the process already runs 2 threads" in out
    assert "status: network isolation not possible" in out and "changed: False" in out


def test_a_refused_user_namespace_leaves_the_process_unchanged(helper, namespaces):
    """A user namespace with user.max_user_namespaces=0 inside: unshare fails, nothing changes."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to set the refusal up")
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$1" exit 0'
    out = subprocess.run(["unshare", "-r", "sh", "-c", script, sys.executable, helper], cwd=REPO,
                         env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True,
                         timeout=30)
    if "max_user_namespaces" in out.stderr:
        pytest.skip(f"cannot set the refusal up: {out.stderr.strip()}")
    assert out.returncode == 0, out.stderr
    assert "message: not isolated: unshare: No space left on device" in out.stdout
    assert "changed: False" in out.stdout and "status: not isolated" in out.stdout


# -- the command line ----------------------------------------------------------

RUN_FLAGS = ["--min_replay_size=200", "--batch_size=32", "--hidden_sizes=32", "--head_hidden_size=32",
             "--eval_every=1000000", "--eval_episodes=1", "--print_every_s=0"]


def _command_line(logdir, *flags: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "launch_programs.run", f"--logdir={logdir}", *RUN_FLAGS, *flags]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def _wait_for_learning(proc: subprocess.Popen, logdir, rows: int = 2, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    path = logdir / "learner.csv"
    while not (path.exists() and len(path.read_text().splitlines()) > rows):
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "the learner never logged"
        time.sleep(0.3)


@pytest.mark.parametrize("private", [True, False])
def test_a_local_runs_replay_is_reachable_by_the_run_alone(tmp_path, namespaces, private):
    """The learner learns from the replay (inside), while the replay's port answers no one outside;
    with --private_network=false it does (so this test can tell the difference)."""
    port = free_port()
    logdir = tmp_path / "run"
    proc = _command_line(logdir, f"--replay_port={port}", "--max_actor_steps=100000000",
                         f"--private_network={str(private).lower()}")
    try:
        _wait_for_learning(proc, logdir)
        reached = {host: connects(host, port) for host in ["127.0.0.1", *outer_addresses()]}
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out[-3000:]
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["learner_steps"] > 0
    if private:
        assert not any(reached.values()), reached
        assert summary["network"] == ISOLATED and "[run] isolated: " in out
    else:
        assert all(reached.values()), reached
        assert "replay server reachable from the network (--private_network=false)" in out


@pytest.mark.slow
def test_a_killed_ray_driver_leaves_no_process_and_a_rerun_continues_its_counts(tmp_path, namespaces):
    """kill -9 of the launched process of a ray run: within 15 s nothing of it is left; the same
    command again resumes the counts the counter saved (every 2 s), and the summary counts both lives."""
    logdir = tmp_path / "run"
    flags = ["--launch=ray", "--num_actors=2", "--checkpoint_every_s=5"]
    proc = _command_line(logdir, *flags, "--max_actor_steps=100000000")
    try:
        _wait_for_learning(proc, logdir, rows=4)
        time.sleep(3.0)  # Past a counter save.
        processes = descendants(proc.pid)
        assert len(processes) >= 6, processes  # The run, Ray's servers and the node processes.
        saved = np.load(logdir / "checkpoints" / "counter.npz")["actor_steps"]
        os.kill(proc.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        while any(alive(pid, start) for pid, (start, _) in processes.items()):
            assert time.monotonic() - killed_at < 15, [
                comm for pid, (start, comm) in processes.items() if alive(pid, start)]
            time.sleep(0.1)
        gone_in = time.monotonic() - killed_at
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
    assert gone_in < 15
    counts = np.load(logdir / "checkpoints" / "counter.npz")
    at_kill = int(counts["actor_steps"])
    assert at_kill >= int(saved) > 0
    budget = at_kill + 2000
    rerun = subprocess.run(
        [sys.executable, "-m", "launch_programs.run", f"--logdir={logdir}", *RUN_FLAGS, *flags,
         f"--max_actor_steps={budget}"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert f"resuming from {logdir}: actor_steps={at_kill} " in rerun.stdout
    summary = json.loads((logdir / "summary.json").read_text())
    assert budget <= summary["actor_steps"] < budget + 2000
    lives = summary["lives"]
    assert len(lives) == 2 and "status" not in lives[0]  # The killed life never ended itself.
    assert lives[1]["actor_steps_before"] == at_kill
    assert summary["wall_time_s"] > lives[1]["wall_time_s"] + 5  # The first life's time counts.
