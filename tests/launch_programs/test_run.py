"""The command line: one-line errors before anything starts; Ctrl-C still writes the summary."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from agentkit.loggers import read_csv
from launch_programs import run
from launch_programs.processes import process_table
from tests.commands import module_command, run_module, shell_signals, start_module
from tests.launch_programs.help_text import help_entry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("argv,flag", [
    (["--agent=nope"], "--agent"),
    (["--env=nope:x"], "--env"),
    (["--env=gym:NoSuchEnv-v9"], "--env"),
    (["--launch=mpi"], "--launch"),
    (["--num_actors=0"], "--num_actors"),
    (["--batch_size=0"], "--batch_size"),
    (["--discount=2"], "--discount"),
    (["--dueling=maybe"], "--dueling"),
    (["--torso=atari"], "--torso"),
    (["--max_actor_steps=-5"], "--max_actor_steps"),
    (["--no_such_flag=1"], "--no_such_flag"),
    (["--max_actor_step=100"], "--max_actor_step"),  # A prefix is not taken for the flag.
    (["--private_network=maybe"], "--private_network"),
])
def test_bad_input_fails_with_one_line_naming_the_flag(argv, flag, capsys, tmp_path):
    code = run.main(argv + [f"--logdir={tmp_path}/run"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: ") and flag in err, err
    assert not os.path.exists(tmp_path / "run")  # Nothing started, nothing written.


def test_a_bad_flag_fails_in_one_line_from_the_shell_too(tmp_path):
    """As `python -m launch_programs.run`, whose isolation step reads a few flags first."""
    out = subprocess.run([sys.executable, "-m", "launch_programs.run", "--private_network=maybe",
                          f"--logdir={tmp_path}/run"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: argument --private_network: expected true or false, got 'maybe'"]


def test_help_lists_agent_flags(capsys):
    assert run.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--samples_per_insert" in out and "--num_envs_per_actor" in out


def test_help_shows_each_flag_with_its_comment_and_default(capsys):
    assert run.main(["--env=memory:10", "--help"]) == 0  # A family without presets.
    out = capsys.readouterr().out
    assert help_entry(out, "--batch_size") == (
        "--batch_size INT Transitions per learner step. (default: 128)")
    # A comment on the lines above the field is its help too.
    assert help_entry(out, "--num_sgd_steps_per_step").startswith(
        "--num_sgd_steps_per_step INT SGD steps per learner call, on batches sampled together")
    assert help_entry(out, "--hidden_sizes") == (
        "--hidden_sizes INTS MLP torso layers. (default: 256,256)")
    assert help_entry(out, "--num_actors") == "--num_actors INT Actor nodes. (default: 2)"
    assert help_entry(out, "--max_restarts").endswith("(default: 3)")
    headings = ["run flags:", "program flags (nodes, budget, evaluation, checkpoints):",
                "ray flags (with --launch=ray):", "dqn flags (DQNConfig):"]
    positions = [out.index(heading) for heading in headings]
    assert positions == sorted(positions)
    assert out.index("--agent NAME") < positions[1] < out.index("--num_actors") < positions[2]
    assert positions[2] < out.index("--ray_address") < positions[3] < out.index("--batch_size")


def test_help_defaults_follow_the_environment_preset(capsys):
    assert run.main(["--agent=dqn", "--env=atari:Pong", "--help"]) == 0
    out = capsys.readouterr().out
    assert "dqn flags (DQNConfig, atari:Pong preset applied):" in out
    assert help_entry(out, "--batch_size") == (
        "--batch_size INT Transitions per learner step. (default: 32)")
    assert help_entry(out, "--torso").endswith("(default: atari)")


CTRL_C_FLAGS = ["--env=gym:CartPole-v1", "--print_every_s=1", "--min_replay_size=200",
                "--batch_size=32", "--hidden_sizes=32", "--head_hidden_size=32",
                "--eval_every=1000000", "--num_envs_per_actor=1"]


def _stop_once_learning(cmd: list[str], logdir, signum: int, to_group: bool = False):
    """Starts `cmd`, waits for the learner to log, sends `signum`; returns (proc, out, seconds)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=to_group, preexec_fn=shell_signals)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            path = logdir / "learner.csv"
            if path.exists() and len(path.read_text().splitlines()) >= 3:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the learner never logged")
        sent = time.time()
        if to_group:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        out, _ = proc.communicate(timeout=60)
        return proc, out, time.time() - sent
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_cleanly_like_ctrl_c(tmp_path, signum):
    """SIGHUP: a closed terminal or a dropped SSH session (it used to kill the run at once,
    with no summary or checkpoint)."""
    logdir = tmp_path / "run"
    cmd = module_command("launch_programs.run", "--max_actor_steps=10000000",
                         f"--logdir={logdir}", *CTRL_C_FLAGS)
    proc, out, stopped_in = _stop_once_learning(cmd, logdir, signum)
    assert proc.returncode == 128 + signum, out[-2000:]
    assert stopped_in < 30, stopped_in
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert summary["signal"] == signal.Signals(signum).name
    assert summary["learner_steps"] > 0
    assert len(np.load(logdir / "checkpoints" / "learner.npz").files) > 0
    assert (logdir / "checkpoints" / "counter.npz").exists()


def test_ctrl_c_stops_cleanly_and_writes_the_summary(tmp_path):
    logdir = tmp_path / "run"
    cmd = [sys.executable, "-m", "launch_programs.run", "--max_actor_steps=10000000",
           f"--logdir={logdir}"] + CTRL_C_FLAGS
    # As a terminal does: SIGINT to the whole process group.
    proc, out, stopped_in = _stop_once_learning(cmd, logdir, signal.SIGINT, to_group=True)
    assert proc.returncode == 130, out[-2000:]
    assert stopped_in < 30, stopped_in
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["signal"] == "SIGINT"
    assert summary["actor_steps"] > 200 and summary["learner_steps"] > 0
    assert summary["config"]["batch_size"] == 32
    assert (logdir / "checkpoints" / "learner.npz").exists()
    # The driver's monitor: memory at the start, the end and its peak; the replay's size.
    memory = summary["memory"]
    assert 100 < memory["rss_mb_start"] <= memory["rss_mb_max"]
    assert memory["rss_mb_end"] <= memory["rss_mb_max"]
    monitored = read_csv(str(logdir / "monitor.csv"))
    items = [int(r["replay_items"]) for r in monitored if r.get("replay_items")]
    assert items and items == sorted(items) and items[-1] <= summary["actor_steps"]

    # The same command again resumes: the counts go on from the checkpoint
    # and the step budget covers the whole run. With one environment per actor,
    # 600 more steps end at least one episode (CartPole truncates at 500), so
    # the actor writes a row in this life even when the resumed policy
    # balances the pole.
    before = summary
    extra = 600
    budget = before["actor_steps"] + extra
    resumed = subprocess.run(cmd[:3] + [f"--max_actor_steps={budget}"] + cmd[4:], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"resuming from {logdir}: actor_steps={before['actor_steps']}" in resumed.stdout
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert budget <= summary["actor_steps"] < budget + 2 * extra
    assert summary["learner_steps"] >= before["learner_steps"]
    # Wall time and rates go on across lives; each life is recorded.
    assert summary["wall_time_s"] > before["wall_time_s"]
    rate = summary["actor_steps"] / summary["wall_time_s"]
    assert summary["actor_steps_per_s"] == pytest.approx(rate, rel=0.01)
    lives = summary["lives"]
    assert [life["status"] for life in lives] == ["interrupted", "completed"]
    assert lives[1]["actor_steps_before"] == before["actor_steps"]
    assert lives[1]["wall_time_s_before"] == pytest.approx(before["wall_time_s"], abs=2.5)
    assert lives[1]["changed"] == {"max_actor_steps": [10000000, budget]}
    # Each life recorded its start-up (node builds: under a second or two here), which
    # time-to-target figures leave out; the summary says where wall_time_s counts from.
    assert all(0 < life["startup_s"] < min(life["wall_time_s"], 20) for life in lives)
    assert summary["wall_time_origin"].startswith("the start of the run's first life")
    times = [float(r["wall_time_s"]) for r in read_csv(str(logdir / "actor.csv"))]
    assert times == sorted(times) and times[-1] > before["wall_time_s"]


def _listening_socket() -> socket.socket:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", 0))
    listener.listen()
    return listener


@pytest.mark.parametrize("address,needle", [
    ("127.0.0.1:1", "no Ray cluster answers"),  # Nothing listens.
    ("auto", "Could not find any running Ray instance"),  # No cluster on this machine.
    ("listener", "not as a gRPC server"),  # Something that is no Ray cluster.
])
def test_an_unreachable_ray_address_fails_fast_in_one_line(tmp_path, address, needle):
    """As a user runs it, in a process of its own: `auto` finds any raylet on the machine
    (Ray scans every process, and caches what it found for the life of the process), and a
    run that joins one in the test runner would hold it to that cluster's fate."""
    if address == "auto":
        servers = [f"{pid} {args[:80]}" for pid, _, args in process_table()
                   if ("raylet" in args or "gcs_server" in args) and "ray::" not in args]
        if servers:
            pytest.skip(f"a Ray runs on this machine, which `auto` would join: {servers}")
    with _listening_socket() as listener:
        if address == "listener":
            address = f"127.0.0.1:{listener.getsockname()[1]}"
        started = time.time()
        # Its own Ray folder: a stale /tmp/ray/ray_current_cluster is not this test's.
        done = run_module("launch_programs.run", "--launch=ray", f"--ray_address={address}",
                          f"--logdir={tmp_path}/run", timeout=90, RAY_TMPDIR=str(tmp_path))
        took = time.time() - started
    err = done.stderr.strip()
    assert done.returncode == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: --ray_address={address}: ") and needle in err, err
    assert took < 40, took  # Start-up included (imports: about 5 s).
    assert not os.path.exists(tmp_path / "run")  # Refused before anything was written.


def test_ctrl_c_ends_a_run_that_is_still_joining_a_cluster(tmp_path):
    """A gRPC server that is no Ray cluster keeps ray.init retrying; Ctrl-C still ends the run."""
    import reverb

    from components.replay.server import NoCheckpointer

    server = reverb.Server(tables=[reverb.Table.queue("q", 10)], checkpointer=NoCheckpointer())
    try:
        cmd = [sys.executable, "-m", "launch_programs.run", "--launch=ray",
               f"--ray_address=127.0.0.1:{server.port}", f"--logdir={tmp_path}/run"]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True, preexec_fn=shell_signals)
        try:
            for line in proc.stdout:  # ray.init is trying to connect.
                if line.startswith("[run] joining the Ray cluster at"):
                    break
            time.sleep(2.0)
            sent = time.time()
            os.killpg(proc.pid, signal.SIGINT)
            out = proc.communicate(timeout=60)[0]
            stopped_in = time.time() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
    finally:
        server.stop()
    assert proc.returncode == 130, out[-2000:]
    assert stopped_in < 12, stopped_in
    # Joining comes before the logdir is touched: nothing was written.
    assert "stopped before the run started: nothing in --logdir changed" in out, out[-2000:]
    assert not os.path.exists(tmp_path / "run")


def test_a_non_finite_float_flag_is_refused_in_one_line_before_launch(tmp_path):
    """`--clip_rho_threshold=nan` used to start the run and fail at the learner's first step,
    after a 30 s stall: the parse refuses it (as any float flag's nan or inf), in seconds. Run
    as a user's shell runs it: none of this test session's settings (TF_CPP_MIN_LOG_LEVEL)."""
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    started = time.time()
    out = subprocess.run([sys.executable, "-m", "launch_programs.run", "--agent=appo",
                          "--clip_rho_threshold=nan", f"--logdir={tmp_path}/run"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    took = time.time() - started
    assert out.returncode == 2, out.stderr[-2000:]
    error = "error: --clip_rho_threshold: must be a finite number, got nan"
    lines = out.stderr.strip().splitlines()
    assert [line for line in lines if "clip_rho_threshold" in line] == [error], out.stderr
    assert lines[-1] == error and "Traceback" not in out.stderr, out.stderr
    assert took < 20, took  # The agent's import; no environment, node or Ray started.
    assert not os.path.exists(tmp_path / "run")


def _a_finished_run(logdir) -> dict[str, bytes]:
    """A logdir as a finished run leaves it (marker, run.json, CSVs, checkpoints, tb); its
    files' contents by relative path."""
    from tests.launch_programs.test_run_dir import _recorded_run

    _recorded_run(logdir)
    (logdir / "checkpoints" / "learner.npz").write_bytes(b"weights")
    return {str(p.relative_to(logdir)): p.read_bytes() for p in logdir.rglob("*") if p.is_file()}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_before_the_clear_stops_fresh_with_nothing_deleted(tmp_path, signum):
    """`--fresh` used to clear the old run even when Ctrl-C came in its first seconds."""
    logdir = tmp_path / "run"
    before = _a_finished_run(logdir)
    proc = start_module("launch_programs.run", "--fresh", f"--logdir={logdir}",
                        "--max_actor_steps=3000")
    try:
        first = proc.stdout.readline()  # The isolation line: before TensorFlow is imported.
        assert first.startswith("[run] "), first
        proc.send_signal(signum)
        out = first + proc.communicate(timeout=60)[0]
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, out[-2000:]
    assert "stopped before the run started: nothing in --logdir changed" in out, out[-2000:]
    assert "Traceback" not in out, out[-2000:]
    after = {str(p.relative_to(logdir)): p.read_bytes() for p in logdir.rglob("*") if p.is_file()}
    assert after == before


AGENT_MODULES = {
    "exits": "import sys\nsys.exit(0)\n",
    "interrupts": "def make():\n    raise KeyboardInterrupt\n",
    "blocks": ("import os, pathlib, time\npathlib.Path(__file__).with_name('importing')"
               ".write_text('')\nwhile True:\n    time.sleep(0.2)\n"),
}


@pytest.mark.parametrize("target,needle", [
    ("exits:Builder", "error: --agent: importing module 'exits' called sys.exit(0)"),
    ("interrupts:make", "error: --agent=interrupts:make: loading it raised KeyboardInterrupt"),
])
def test_an_agent_module_that_exits_or_interrupts_is_one_line(tmp_path, target, needle):
    for name, text in AGENT_MODULES.items():
        (tmp_path / f"{name}.py").write_text(text)
    out = run_module("launch_programs.run", f"--agent={target}", f"--logdir={tmp_path}/run",
                     PYTHONPATH=str(tmp_path))
    assert out.returncode == 2, out.stdout[-1000:] + out.stderr[-2000:]
    assert out.stderr.strip().splitlines() == [needle + out.stderr.strip()[len(needle):]]
    assert out.stderr.startswith(needle), out.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_an_agent_module_that_blocks_on_import(tmp_path, signum):
    (tmp_path / "blocks.py").write_text(AGENT_MODULES["blocks"])
    proc = start_module("launch_programs.run", "--agent=blocks:Builder", f"--logdir={tmp_path}",
                        PYTHONPATH=str(tmp_path))
    try:
        deadline = time.time() + 60
        while not (tmp_path / "importing").exists():
            assert time.time() < deadline and proc.poll() is None, "the import never began"
            time.sleep(0.1)
        proc.send_signal(signum)
        out = proc.communicate(timeout=15)[0]
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, out[-2000:]
    assert "stopped before the run started" in out and "Traceback" not in out, out[-2000:]


FULL_DISK = '''
import errno, os, numpy as np
_savez, _calls = np.savez, {"learner": 0}
def _savez_until_the_disk_fills(file, *args, **kwargs):
    if "learner" in os.readlink(f"/proc/self/fd/{file.fileno()}"):
        _calls["learner"] += 1
        if _calls["learner"] > 1:  # The first learner checkpoint fits; then the disk is full.
            file.write(b"partial")
            raise OSError(errno.ENOSPC, "No space left on device")
    return _savez(file, *args, **kwargs)
np.savez = _savez_until_the_disk_fills
'''


def test_a_full_disk_stops_the_run_within_seconds_and_a_resume_works_once_freed(tmp_path):
    """The learner's second checkpoint meets a full disk (a sitecustomize that the command's
    Python loads stands for the disk): the failure is named at once, the run ends within
    seconds though the actor is blocked on the rate limiter of the learner that died (it
    used to wait out a 30 s join, silently), the first checkpoint is kept, and once there
    is space the same command resumes from it."""
    (tmp_path / "fault").mkdir()
    (tmp_path / "fault" / "sitecustomize.py").write_text(FULL_DISK)
    logdir = tmp_path / "run"
    flags = [f"--logdir={logdir}", "--min_replay_size=100", "--batch_size=16",
             "--eval_episodes=0", "--print_every_s=1", "--checkpoint_every_s=2",
             "--hidden_sizes=32", "--head_hidden_size=32"]
    proc = start_module("launch_programs.run", "--max_actor_steps=1000000", *flags,
                        PYTHONPATH=str(tmp_path / "fault"))
    failed_at = None
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("[run] node learner failed"):
                failed_at = time.time()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    out = "".join(lines)
    assert failed_at is not None, out[-3000:]
    assert proc.returncode == 1, out[-3000:]
    assert time.time() - failed_at < 15, out[-3000:]  # Stopping: 5 s at most per stage.
    assert "Traceback" not in out, out[-3000:]
    assert lines[-1].startswith("error: learner: cannot write checkpoint"), lines[-1]
    assert "learner.npz: No space left on device; the previous one is kept" in lines[-1]
    saved = np.load(logdir / "checkpoints" / "learner.npz")  # The first one, whole.
    assert len(saved.files) > 0
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["status"] == "failed"
    resumed = run_module("launch_programs.run", f"--max_actor_steps={summary['actor_steps'] + 500}",
                         *flags)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"resuming from {logdir}" in resumed.stdout
    assert "[learner] restored from" in resumed.stdout


def test_a_builder_whose_constructor_takes_no_layout_fails_in_one_line(tmp_path, monkeypatch,
                                                                      capsys):
    """The acting layout goes to the builder's constructor: an agent written against the older
    contract, `__init__(self, config)`, is told so before anything starts."""
    (tmp_path / "old_contract.py").write_text(
        "from agents.dqn import DQNBuilder\n\n"
        "class Builder(DQNBuilder):\n"
        "    def __init__(self, config):\n"
        "        super().__init__(config)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert run.main(["--agent=old_contract:Builder", f"--logdir={tmp_path}/run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --agent=old_contract:Builder: its builder's constructor must "
                          "take (config, layout=None)") and "\n" not in err
    assert "takes (config)" in err
    assert not (tmp_path / "run").exists()
