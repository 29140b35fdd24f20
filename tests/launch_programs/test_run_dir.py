"""The run directory: --fresh clears only a run's files, a resume must match, lives add up.

Each case runs the command line in this process up to its checks (nothing
trains): every refusal is one line, exit code 2, and leaves the files as
they were.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from launch_programs import run, run_files
from launch_programs.counter_node import CounterNode
from launch_programs.run_dir import MARKER, RECORD, RunDir, RunDirError
from launch_programs.summary import evaluation_stats, write_json
from tests.commands import ROOT
from tests.components.replay.test_checkpoints import write_replay_checkpoint

SMALL = ["--hidden_sizes=32", "--head_hidden_size=32", "--max_actor_steps=1000"]


def _main(capsys, *argv) -> tuple[int, str]:
    code = run.main(list(argv))
    err = capsys.readouterr().err.strip()
    return code, err


def _one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: "), err
    for needle in needles:
        assert needle in err, err


def _recorded_run(logdir, *flags, actor_steps: float = 500.0, wall_s: float = 30.0) -> RunDir:
    """A logdir as a run of `flags` leaves it: marker, run.json, run files, a counter save."""
    spec = run.parse(SMALL + list(flags) + [f"--logdir={logdir}"])
    run_dir = RunDir.inspect(spec)
    run_dir.open()
    node = CounterNode(initial={"actor_steps": actor_steps, "learner_steps": 40.0},
                       logdir=str(logdir), start_time=time.time() - wall_s)
    node.checkpoint()
    run_dir.end_life("completed", node.get_counts(), wall_s)
    for name in ("actor.csv", "learner.csv", "summary.json"):
        (logdir / name).write_text("x\n")
    (logdir / "tb").mkdir()
    run_dir.close()  # Its lock: the life is over.
    return run_dir


def test_fresh_refuses_a_directory_that_no_run_wrote(tmp_path, capsys, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "thesis.txt").write_text("years of work")
    code, err = _main(capsys, *SMALL, f"--logdir={tmp_path}", "--fresh")
    _one_line_error(code, err, "--fresh", str(tmp_path), MARKER)
    monkeypatch.chdir(tmp_path)  # `--logdir=. --fresh` in a working directory.
    code, err = _main(capsys, *SMALL, "--logdir=.", "--fresh")
    _one_line_error(code, err, "--fresh")
    assert sorted(os.listdir(tmp_path)) == ["src", "thesis.txt"]
    assert (tmp_path / "thesis.txt").read_text() == "years of work"


def test_fresh_clears_an_unmarked_directory_that_holds_only_a_runs_files(tmp_path):
    """A run from before the marker existed (as `make run` leaves in runs/make-run)."""
    (tmp_path / "checkpoints").mkdir()
    for name in ("summary.json", "actor.csv", ".actor.csv.lock"):
        (tmp_path / name).write_text("x")
    fresh = RunDir.inspect(run.parse(SMALL + [f"--logdir={tmp_path}", "--fresh"]))
    fresh.open()
    assert sorted(os.listdir(tmp_path)) == sorted([MARKER, RECORD])


def test_fresh_clears_only_the_run_files_and_only_after_every_check(tmp_path, capsys):
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    (logdir / "notes.txt").write_text("mine")
    before = sorted(os.listdir(logdir))
    with socket.socket() as held:  # A check that fails after the --fresh check passed.
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        code, err = _main(capsys, *SMALL, f"--logdir={logdir}", "--fresh", f"--replay_port={port}")
    _one_line_error(code, err, f"--replay_port: port {port} is in use")
    assert sorted(os.listdir(logdir)) == before  # Nothing was cleared.
    spec = run.parse(SMALL + [f"--logdir={logdir}", "--fresh"])
    fresh = RunDir.inspect(spec)
    fresh.open()
    assert sorted(os.listdir(logdir)) == sorted([MARKER, RECORD, "notes.txt"])
    assert fresh.initial_counts is None and len(fresh.lives) == 1
    assert run_files.walk(str(logdir))[:2] == ([MARKER, RECORD], ["notes.txt"])
    fresh.close()


@pytest.mark.parametrize("flags,named", [
    (["--discount=0.5"], "--discount 0.99 -> 0.5"),
    (["--hidden_sizes=64"], "--hidden_sizes [32] -> [64]"),
    (["--env=gym:CartPole-v0"], "--env 'gym:CartPole-v1' -> 'gym:CartPole-v0'"),
    (["--agent=impala"], "--agent 'dqn' -> 'impala'"),
    (["--seed=3", "--num_actors=4"], "--num_actors 1 -> 4, --seed 0 -> 3"),
])
def test_a_resume_with_other_settings_is_refused_naming_them(tmp_path, capsys, flags, named):
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    record = (logdir / RECORD).read_text()
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}", *flags)
    _one_line_error(code, err, named, "--fresh")
    assert (logdir / RECORD).read_text() == record


@pytest.mark.parametrize("section,name,other", [
    ("program", "max_env_failures", 3),
    ("config", "double_q", False),
])
def test_a_run_recorded_before_a_field_existed_resumes_at_its_default(tmp_path, capsys, section,
                                                                     name, other):
    """An older run.json lacks a field added since: that run played with its default, so a
    resume at the default is the same run, and one that sets it otherwise is refused."""
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    record = json.loads((logdir / RECORD).read_text())
    default = record[section].pop(name)  # As the toolkit wrote it before the field.
    (logdir / RECORD).write_text(json.dumps(record))
    resumed = RunDir.inspect(run.parse(SMALL + [f"--logdir={logdir}"]))
    resumed.close()
    assert resumed.changed == {}
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}", f"--{name}={str(other).lower()}")
    _one_line_error(code, err, f"--{name} {default!r} -> {other!r}", "--fresh")


def test_a_resume_may_change_the_budget_logging_and_launcher_and_records_it(tmp_path):
    logdir = tmp_path / "run"
    _recorded_run(logdir, actor_steps=500, wall_s=30.0)
    spec = run.parse(SMALL + [f"--logdir={logdir}", "--max_actor_steps=2000", "--print_every_s=1",
                              "--launch=ray", "--checkpoint_every_s=10"])
    resumed = RunDir.inspect(spec)
    assert resumed.changed == {"max_actor_steps": (1000, 2000), "print_every_s": (5.0, 1.0),
                               "launch": ("threads", "ray"), "checkpoint_every_s": (300.0, 10.0)}
    assert resumed.initial_counts == {"actor_steps": 500.0, "learner_steps": 40.0}
    assert 30.0 <= resumed.prior_wall_s < 31.0  # The next life's clock starts from here.
    resumed.open()
    resumed.end_life("completed", {"actor_steps": 2000, "learner_steps": 90}, 15.0)
    lives = json.loads((logdir / RECORD).read_text())["lives"]
    assert [life["life"] for life in lives] == [1, 2]
    assert lives[1]["changed"]["max_actor_steps"] == [1000, 2000]
    assert lives[1]["actor_steps_before"] == 500 and lives[1]["actor_steps"] == 2000
    assert lives[1]["wall_time_s_before"] == pytest.approx(30.0, abs=1.0)
    assert lives[1]["actor_steps_per_s"] == 100.0  # This life's own rate: 1500 steps in 15 s.


def test_a_killed_life_still_adds_the_wall_time_its_counter_saved(tmp_path):
    logdir = tmp_path / "run"
    _recorded_run(logdir, wall_s=30.0)
    spec = run.parse(SMALL + [f"--logdir={logdir}", "--max_actor_steps=5000"])
    second = RunDir.inspect(spec)
    second.open()  # Life 2 starts, then is killed: it never calls end_life.
    second.close()  # (Its lock goes with the killed process.)
    CounterNode(initial={"actor_steps": 900}, logdir=str(logdir),
                start_time=time.time() - 75.0).checkpoint()
    third = RunDir.inspect(spec)
    assert 75.0 <= third.prior_wall_s < 76.0
    assert third.initial_counts["actor_steps"] == 900
    assert [life.get("status") for life in third.lives] == ["completed", None]


def test_a_finished_run_rerun_as_it_was_changes_nothing(tmp_path, capsys):
    logdir = tmp_path / "run"
    _recorded_run(logdir, actor_steps=1000)
    summary = (logdir / "summary.json").read_text()
    assert run.main(SMALL + [f"--logdir={logdir}"]) == 0
    assert "already took its budget" in capsys.readouterr().out
    assert (logdir / "summary.json").read_text() == summary


@pytest.mark.parametrize("name,content", [
    ("counter.npz", b""), ("counter.npz", b"PK\x03\x04trunc"), ("learner.npz", b"junk"),
])
def test_a_damaged_checkpoint_fails_before_launch_naming_it(tmp_path, capsys, name, content):
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    np.savez(logdir / "checkpoints" / "learner.npz", w=np.zeros(3))
    (logdir / "checkpoints" / name).write_bytes(content)
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}", "--max_actor_steps=5000")
    _one_line_error(code, err, f"checkpoint {logdir}/checkpoints/{name} is damaged", "--fresh")


@pytest.mark.parametrize("value,problem", [
    (np.array([500.0, 600.0]), "a float64 array of shape (2,), not one real number"),
    (np.array("500"), "a <U3 array of shape (), not one real number"),
    (np.array(500 + 0j), "a complex128 array of shape (), not one real number"),
    (np.array(np.nan), "nan, not a count"),
    (np.array(-5.0), "-5.0, not a count"),
    (np.array(1e300), "1e+300, not a count"),
])
def test_a_hand_edited_counter_checkpoint_fails_before_launch_naming_the_entry(
        tmp_path, capsys, value, problem):
    """Each of these was a traceback, or a run whose counts went back or to nan, before."""
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    path = logdir / "checkpoints" / "counter.npz"
    np.savez(path, actor_steps=value, learner_steps=np.array(40.0))
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}", "--max_actor_steps=5000")
    _one_line_error(code, err, f"checkpoint {path} does not fit this run ('actor_steps' is "
                    + problem, "--fresh")


def test_a_counter_node_refuses_a_bad_count_it_is_restored_from(tmp_path):
    from agentkit.checkpointing import CheckpointError

    node = CounterNode(logdir=str(tmp_path))
    with pytest.raises(CheckpointError, match=r"'actor_steps' is inf, not a count"):
        node.restore({"actor_steps": np.array(np.inf)})
    node.restore({"actor_steps": np.array(7, np.int64), "__wall_time_s": np.array(3.5)})
    assert node.get_counts()["actor_steps"] == 7.0


def test_unusable_logdirs_fail_in_one_line(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    code, err = _main(capsys, *SMALL, f"--logdir={a_file}")
    _one_line_error(code, err, "--logdir", "is a file")
    code, err = _main(capsys, *SMALL, f"--logdir={tmp_path}/{'n' * 300}")
    _one_line_error(code, err, "--logdir", "File name too long")
    code, err = _main(capsys, *SMALL, "--logdir=/proc/agentkit-run")
    _one_line_error(code, err, "--logdir: cannot write to /proc/agentkit-run")


def test_a_damaged_evaluator_row_is_skipped_and_counted(tmp_path):
    (tmp_path / "evaluator.csv").write_text(
        "wall_time_s,actor_steps,episode_return\r\n1,100,10\r\n2,200,20\r\n3,300,x\r\n4,40")
    stats = evaluation_stats(str(tmp_path), threshold=15.0)
    assert stats["eval_episodes"] == 2 and stats["eval_return_mean_last10"] == 15.0
    assert stats["damaged_csv_rows"] == {"evaluator.csv": 2}
    assert stats["first_reached"]["actor_steps"] == 200


def test_node_restarts_add_up_over_the_lives_that_recorded_them():
    from launch_programs.run_dir import restarts_of_all_lives

    lives = [{"node_restarts": {"actor_1": 1, "learner": 1}}, {},  # Life 2 was killed.
             {"node_restarts": {"learner": 2, "counter": 1}}]
    assert restarts_of_all_lives(lives) == {"actor_1": 1, "learner": 3, "counter": 1}


def test_a_full_disk_mid_run_ends_it_in_one_line_naming_the_file(tmp_path, capsys, monkeypatch):
    from agentkit import checkpointing

    def full_disk(file, **arrays):
        file.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpointing.np, "savez", full_disk)
    logdir = tmp_path / "run"
    # No rate limit: an actor blocked on the replay of a learner that died stays blocked in
    # its (daemon) thread, which would outlive this in-process run (the subprocess test of
    # the command in test_run.py holds the rate-limited case).
    code = run.main(SMALL + [f"--logdir={logdir}", "--max_actor_steps=600", "--min_replay_size=100",
                             "--batch_size=16", "--eval_episodes=0", "--print_every_s=0",
                             "--samples_per_insert=0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1, err
    assert "Traceback" not in "\n".join(err)
    assert err[-1].startswith("error: ") and "cannot write checkpoint" in err[-1], err
    assert "No space left on device" in err[-1]
    assert not [p for p in (logdir / "checkpoints").iterdir() if ".tmp" in p.name]
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["status"] == "failed" and "No space left" in summary["error"]


def _copy_tree(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_fresh_deletes_exactly_the_files_a_run_wrote(tmp_path, capsys):
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    np.savez(logdir / "checkpoints" / "learner.npz", w=np.zeros(3))
    (logdir / "checkpoints" / "model_epoch_90.pt").write_text("weights")
    (logdir / "tb" / "learner").mkdir()
    (logdir / "tb" / "learner" / "events.out.tfevents.1.vm.1.0").write_text("e")
    (logdir / "tb" / "learner" / "notes.md").write_text("mine")
    (logdir / "actor.csv.bak").write_text("mine")
    fresh = RunDir.inspect(run.parse(SMALL + [f"--logdir={logdir}", "--fresh"]))
    fresh.open()
    fresh.close()
    assert fresh.kept == ["actor.csv.bak", "checkpoints/model_epoch_90.pt", "tb/learner/notes.md"]
    own, foreign, _ = run_files.walk(str(logdir))
    assert own == [MARKER, RECORD] and foreign == fresh.kept
    assert (logdir / "checkpoints" / "model_epoch_90.pt").read_text() == "weights"


@pytest.mark.parametrize("fresh", [False, True])
def test_a_directory_of_the_users_files_is_never_adopted(tmp_path, capsys, fresh):
    """`checkpoints/` alone does not make a run directory: what is in it decides."""
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "model_epoch_90.pt").write_text("w")
    before = _copy_tree(tmp_path)
    code, err = _main(capsys, *SMALL, f"--logdir={tmp_path}", *(["--fresh"] if fresh else []))
    _one_line_error(code, err, "not a run directory", "checkpoints/model_epoch_90.pt")
    assert _copy_tree(tmp_path) == before and not (tmp_path / MARKER).exists()


def test_a_second_run_in_a_live_logdir_is_refused(tmp_path, capsys):
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    live = RunDir.inspect(run.parse(SMALL + [f"--logdir={logdir}", "--max_actor_steps=5000"]))
    live.open()
    record = (logdir / RECORD).read_text()
    for extra in ([], ["--fresh"]):
        code, err = _main(capsys, *SMALL, f"--logdir={logdir}", "--max_actor_steps=5000", *extra)
        _one_line_error(code, err, f"--logdir: {logdir} is in use by another run")
    assert (logdir / RECORD).read_text() == record  # No life recorded by the refused runs.
    live.close()
    RunDir.inspect(run.parse(SMALL + [f"--logdir={logdir}", "--max_actor_steps=5000"])).close()


def test_a_run_killed_with_minus_9_leaves_no_stale_lock(tmp_path):
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from launch_programs import run; from launch_programs.run_dir import "
         "RunDir; RunDir.inspect(run.parse(sys.argv[1:])).open(); print('open', flush=True); "
         "time.sleep(600)", *SMALL, f"--logdir={logdir}", "--max_actor_steps=5000"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        spec = run.parse(SMALL + [f"--logdir={logdir}", "--max_actor_steps=5000"])
        with pytest.raises(RunDirError, match="in use by another run"):
            RunDir.inspect(spec)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        RunDir.inspect(spec).close()
    finally:
        holder.kill()


@pytest.mark.parametrize("link", [MARKER, RECORD, "actor.csv", ".learner.csv.lock", "summary.json",
                                  "checkpoints/learner.npz", "checkpoints", "tb"])
def test_a_run_never_writes_through_a_symlink_in_its_logdir(tmp_path, capsys, link):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    path = logdir / link
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    path.symlink_to(victim)
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}", "--max_actor_steps=5000")
    _one_line_error(code, err, f"{path} is a symbolic link (to {victim})")
    assert victim.read_text() == "precious"


def test_a_logdir_others_can_write_is_refused(tmp_path, capsys):
    logdir = tmp_path / "run"
    logdir.mkdir()
    logdir.chmod(0o777)
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}")
    _one_line_error(code, err, "writable by every user", "chmod o-w")
    assert os.listdir(logdir) == []


def test_files_are_never_written_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "summary.json.tmp").symlink_to(victim)
    with pytest.raises(OSError):
        write_json(str(tmp_path / "summary.json"), {"a": 1})
    assert victim.read_text() == "precious"


def test_a_missing_counter_checkpoint_with_recorded_lives_fails_before_launch(tmp_path, capsys):
    logdir = tmp_path / "run"
    _recorded_run(logdir, actor_steps=700)
    (logdir / "checkpoints" / "counter.npz").unlink()
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}", "--max_actor_steps=5000")
    _one_line_error(code, err, f"{logdir}/checkpoints/counter.npz is missing",
                    "actor_steps=700", "--fresh")


def test_a_damaged_replay_checkpoint_fails_before_launch(tmp_path, capsys):
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    folder = write_replay_checkpoint(logdir / "checkpoints" / "replay")
    items = os.path.join(folder, "items.tfrecord")
    os.truncate(items, os.path.getsize(items) // 2)
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}", "--max_actor_steps=5000")
    _one_line_error(code, err, f"replay checkpoint {items} is damaged", f"delete {folder}")


@pytest.mark.parametrize("record", ["[]", "null", '{"lives": "x"}', '{"lives": [1]}',
                                    '{"config": 3}', '{"lives": [{"wall_time_s": "long"}]}'])
def test_a_run_json_of_the_wrong_shape_fails_in_one_line(tmp_path, capsys, record):
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    (logdir / RECORD).write_text(record)
    code, err = _main(capsys, *SMALL, f"--logdir={logdir}", "--max_actor_steps=5000")
    _one_line_error(code, err, f"{logdir}/{RECORD} is damaged", "--fresh")


def test_a_logdir_of_tilde_means_the_home_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "thesis.txt").write_text("years of work")
    assert run.parse(SMALL + ["--logdir=~/runs/x"]).logdir == str(tmp_path / "runs" / "x")
    code, err = _main(capsys, *SMALL, "--logdir=~")  # The home folder is no run directory.
    _one_line_error(code, err, f"--logdir: {tmp_path} is not empty and not a run directory")
    assert not (tmp_path / "~").exists()


def test_only_the_runs_own_folders_are_looked_into(tmp_path, capsys):
    """A user's folder beside a run's files is one foreign entry, however big (a home folder
    given as --logdir is refused at once, not walked)."""
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    deep = logdir / "data" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "x.csv").write_text("1")
    (deep / "link").symlink_to(tmp_path)  # Not where a run writes: allowed.
    own, foreign, folders = run_files.walk(str(logdir))
    assert foreign == ["data/"] and "data" not in folders
    assert run_files.symlinks(str(logdir)) == []
    fresh = RunDir.inspect(run.parse(SMALL + [f"--logdir={logdir}", "--fresh"]))
    fresh.open()
    fresh.close()
    assert fresh.kept == ["data/"] and (deep / "x.csv").read_text() == "1"


def test_the_sticky_actions_protocol_is_recorded_and_a_resume_with_another_is_refused(
        tmp_path, capsys):
    atari = ["--env=atari:Pong", "--hidden_sizes=32", "--max_actor_steps=1000"]
    assert run.parse(atari).sticky_actions == 0.25  # Machado et al.'s default.
    assert run.parse(SMALL).sticky_actions is None  # Not an atari: game.
    logdir = tmp_path / "run"
    spec = run.parse(atari + ["--sticky_actions=0", f"--logdir={logdir}"])
    first = RunDir.inspect(spec)
    first.open()
    first.close()
    assert json.loads((logdir / RECORD).read_text())["sticky_actions"] == 0.0
    (logdir / "checkpoints").mkdir()
    CounterNode(initial={"actor_steps": 100.0}, logdir=str(logdir)).checkpoint()
    code, err = _main(capsys, *atari, f"--logdir={logdir}")  # The default, 0.25, this time.
    _one_line_error(code, err, "holds a run with other settings", "--sticky_actions 0.0 -> 0.25")


@pytest.mark.parametrize("flags,needle", [
    (["--sticky_actions=0.1"], "--sticky_actions: only for atari:<Game> environments"),
    (["--env=atari:Pong", "--sticky_actions=1"], "--sticky_actions: must be in [0, 1), got 1.0"),
    (["--env=atari:Pong", "--sticky_actions=nan"], "--sticky_actions: must be in [0, 1)"),
])
def test_a_sticky_actions_flag_that_does_not_apply_fails_in_one_line(tmp_path, capsys, flags,
                                                                     needle):
    code, err = _main(capsys, *SMALL, *flags, f"--logdir={tmp_path}/run")
    _one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("saved_steps, lost", [(25, 15), (40, 0), (None, None)])
def test_a_resume_records_the_updates_a_kill_lost_since_the_learner_checkpoint(
        tmp_path, saved_steps, lost):
    """The counter saves every 2 s and the learner every --checkpoint_every_s: after kill -9
    the counts (40 learner steps here) can be ahead of learner.npz. The resume redoes those
    updates and learner_steps counts them again; run.json says how many."""
    logdir = tmp_path / "run"
    _recorded_run(logdir)
    if saved_steps is not None:
        (logdir / "checkpoints").mkdir(exist_ok=True)
        np.savez(logdir / "checkpoints" / "learner.npz", num_steps=np.int64(saved_steps),
                 **{"policy/000/w:0": np.zeros(3, np.float32)})
    run_dir = RunDir.inspect(run.parse(SMALL + [f"--logdir={logdir}", "--max_actor_steps=5000"]))
    try:
        assert run_dir.learner_checkpoint_steps == saved_steps
        assert run_dir.learner_steps_lost == lost
        run_dir.open()
        life = json.loads((logdir / RECORD).read_text())["lives"][-1]
        assert life["learner_steps_before"] == 40
        if lost is None:
            assert "learner_steps_lost" not in life
        else:
            assert (life["learner_restored_at"], life["learner_steps_lost"]) == (saved_steps, lost)
    finally:
        run_dir.close()
