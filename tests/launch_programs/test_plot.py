"""launch_programs.plot: the curves read from run directories, grouped, and drawn to a PNG.

The command's failures (a damaged file, a bad --out, a run directory it cannot write)
run as a user runs them: `python -m launch_programs.plot` in a fresh process with a
clean environment, ending in one line `error: ...` and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest

from launch_programs import plot
from launch_programs.references import Reference, load_reference
from tests.commands import user_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(path, agent="dqn", env="minatar:breakout", rounds=((0, [1, 3]), (100, [4, 6, 8])),
         training=((10, 1.0), (60, 2.0), (90, 4.0)), wall_per_step=0.5):
    os.makedirs(path)
    with open(os.path.join(path, "run.json"), "w") as f:
        json.dump({"agent": agent, "env": env}, f)
    with open(os.path.join(path, "evaluator.csv"), "w") as f:
        f.write("wall_time_s,actor_steps,learner_steps,episode_return,episode_length\n")
        for steps, returns in rounds:
            for i, r in enumerate(returns):
                f.write(f"{steps * wall_per_step + i},{steps},0,{r},10\n")
    with open(os.path.join(path, "actor.csv"), "w") as f:
        f.write("wall_time_s,actor_steps,learner_steps,actor_episodes,episode_return\n")
        for steps, r in training:
            f.write(f"{steps * wall_per_step},{steps},0,1,{r}\n")
    return str(path)


def test_an_atari_run_is_labelled_with_its_protocol(tmp_path):
    run = _run(tmp_path / "a", env="atari:Pong")
    with open(os.path.join(run, "run.json"), "w") as f:
        json.dump({"agent": "ppo", "env": "atari:Pong", "sticky_actions": 0.0}, f)
    assert plot.load_run(run).label == "ppo on atari:Pong (sticky 0)"
    assert plot.run_label("dqn", "atari:Pong", 0.25) == "dqn on atari:Pong (sticky 0.25)"
    assert plot.run_label("dqn", "minatar:breakout") == "dqn on minatar:breakout"


def test_a_run_gives_its_rounds_means_and_spread(tmp_path):
    curves = plot.load_run(_run(tmp_path / "a"))
    assert curves.label == "dqn on minatar:breakout"
    np.testing.assert_array_equal(curves.eval_steps, [0, 100])
    np.testing.assert_allclose(curves.eval_mean, [2.0, 6.0])
    np.testing.assert_allclose(curves.eval_std, [1.0, np.std([4, 6, 8])])
    np.testing.assert_array_equal(curves.eval_wall, [0.0, 50.0])  # The round's first episode.
    line = plot.evaluation_line([curves])
    np.testing.assert_allclose(line.low, [1.0, 6.0 - np.std([4, 6, 8])])
    wall = plot.evaluation_line([curves], x="wall_time_s")
    np.testing.assert_array_equal(wall.x, [0.0, 50.0])


def test_runs_of_one_agent_and_env_make_one_line_over_their_common_rounds(tmp_path):
    a = plot.load_run(_run(tmp_path / "a"))
    b = plot.load_run(_run(tmp_path / "b", rounds=((2, [0]), (104, [10]), (200, [12]))))
    c = plot.load_run(_run(tmp_path / "c", agent="impala"))
    groups = plot.group_runs([a, c, b])
    assert [[r.label for r in g] for g in groups] == [["dqn on minatar:breakout"] * 2,
                                                      ["impala on minatar:breakout"]]
    line = plot.evaluation_line(groups[0])
    assert line.label == "dqn on minatar:breakout (2 runs)"
    np.testing.assert_allclose(line.x, [1.0, 102.0])  # Two rounds: the shorter run's.
    np.testing.assert_allclose(line.centre, [1.0, 8.0])
    np.testing.assert_allclose(line.low, [0.0, 6.0])
    np.testing.assert_allclose(line.high, [2.0, 10.0])


def test_training_returns_are_averaged_in_bins_of_x(tmp_path):
    curves = plot.load_run(_run(tmp_path / "a", training=((0, 1.0), (1, 3.0), (99, 5.0),
                                                          (100, 7.0))))
    line = plot.training_line([curves], bins=2)
    np.testing.assert_allclose(line.x, [0.5, 99.5])
    np.testing.assert_allclose(line.centre, [2.0, 6.0])
    np.testing.assert_allclose(line.high - line.centre, [1.0, 1.0])


def test_the_command_writes_a_png_and_names_each_line(tmp_path, capsys):
    runs = [_run(tmp_path / "a"), _run(tmp_path / "b", agent="impala")]
    out = tmp_path / "figs" / "curves.png"
    assert plot.main([*runs, f"--out={out}", "--x=wall_time_s"]) == 0
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(out) < 200_000  # Small enough to commit.
    printed = capsys.readouterr().out
    assert "dqn on minatar:breakout: 2 evaluation rounds, last mean 6.00" in printed
    assert "impala on minatar:breakout" in printed


@pytest.mark.parametrize("case", ["missing", "not_a_run", "empty"])
def test_a_missing_or_empty_run_directory_fails_in_one_line_naming_it(tmp_path, capsys, case):
    path = tmp_path / "run"
    if case == "not_a_run":
        path.mkdir()
    if case == "empty":
        _run(path, rounds=(), training=())
    assert plot.main([str(path), f"--out={tmp_path / 'x.png'}"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: {path}: ") and "\n" not in error
    assert not (tmp_path / "x.png").exists()


# -- the command as a user runs it -------------------------------------------------------------

def _plot(*args, wrapper: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """`python -m launch_programs.plot ARGS` from the checkout, in a clean environment (run
    by the command `wrapper`, when given)."""
    return subprocess.run([*wrapper, sys.executable, "-m", "launch_programs.plot",
                           *map(str, args)], cwd=ROOT, env=user_env(),
                          capture_output=True, text=True, timeout=120)


def _error(done: subprocess.CompletedProcess, *names: str) -> str:
    """The one line `error: ...` that a failed command printed; it names each of `names`."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def _png(path) -> bool:
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", ["actor.csv", "evaluator.csv"])
def test_random_bytes_in_a_csv_fail_in_one_line_naming_the_file(tmp_path, name):
    run = _run(tmp_path / "run")
    with open(os.path.join(run, name), "wb") as f:
        f.write(b"\xff\xfe" + np.random.default_rng(0).bytes(2000))  # Not UTF-8 from byte 0.
    out = tmp_path / "x.png"
    _error(_plot(run, f"--out={out}"), os.path.join(run, name), "damaged")
    assert not out.exists()


def test_random_bytes_in_a_csv_it_does_not_read_change_nothing(tmp_path):
    run = _run(tmp_path / "run")
    with open(os.path.join(run, "learner.csv"), "wb") as f:
        f.write(np.random.default_rng(0).bytes(2000))
    done = _plot(run, f"--out={tmp_path / 'x.png'}")
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert _png(tmp_path / "x.png")


def test_a_damaged_row_is_skipped_and_counted_in_one_line(tmp_path):
    run = _run(tmp_path / "run")
    with open(os.path.join(run, "actor.csv"), "a") as f:
        f.write("12.5,abc,0,1,zz\n")  # Right shape, not numbers.
    done = _plot(run, f"--out={tmp_path / 'x.png'}")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"warning: skipped 1 row that could not be read ({os.path.join(run, 'actor.csv')}: 1)"]
    assert "dqn on minatar:breakout: 2 evaluation rounds" in done.stdout
    assert _png(tmp_path / "x.png")


def test_a_csv_with_no_usable_row_fails_in_one_line_naming_it(tmp_path):
    run = _run(tmp_path / "run", training=())
    with open(os.path.join(run, "actor.csv"), "a") as f:
        f.write("12.5,abc,0,1,zz\n")
    _error(_plot(run, f"--out={tmp_path / 'x.png'}"), os.path.join(run, "actor.csv"),
           "damaged (1 row, none with numbers for wall_time_s, actor_steps, episode_return)")


@pytest.mark.parametrize("text,problem", [
    ("[]", "a JSON list, not an object"),
    ("null", "a JSON null, not an object"),
    ('{"lives": "x"}', "no 'agent'"),
    ('{"agent": "dqn", "env": ', "not JSON"),
])
def test_a_run_json_of_the_wrong_shape_fails_in_one_line_naming_it(tmp_path, text, problem):
    run = _run(tmp_path / "run")
    with open(os.path.join(run, "run.json"), "w") as f:
        f.write(text)
    _error(_plot(run, f"--out={tmp_path / 'x.png'}"), os.path.join(run, "run.json"), problem)
    assert not (tmp_path / "x.png").exists()


def test_an_out_it_cannot_write_fails_in_one_line_naming_it(tmp_path):
    _error(_plot(_run(tmp_path / "run"), "--out=/proc/x.png"), "--out=/proc/x.png",
           "cannot write")


def test_an_out_with_an_unknown_extension_fails_saying_which_are_allowed(tmp_path):
    out = tmp_path / "x.xyz"
    _error(_plot(_run(tmp_path / "run"), f"--out={out}"), f"--out={out}", ".xyz",
           ".png, .pdf, .svg")
    assert not out.exists()


def test_a_read_only_run_directory_fails_in_one_line_naming_the_figure(tmp_path):
    """The default figure goes into the run directory, which cannot be written. Root writes
    through permissions, so as root the directory is a read-only mount, in a mount namespace
    of the command's own."""
    run = _run(tmp_path / "run")
    if os.geteuid() != 0:
        os.chmod(run, 0o555)
        try:
            done = _plot(run)
        finally:
            os.chmod(run, 0o755)
    else:
        read_only = ["unshare", "-rm", "sh", "-c", 'mount --bind "$1" "$1" && '
                     'mount -o remount,bind,ro "$1" && shift && exec "$@"', "sh", run]
        try:
            probe = subprocess.run([*read_only, "touch", os.path.join(run, "x")],
                                   capture_output=True, text=True, timeout=30)
        except OSError as e:  # No unshare here.
            pytest.skip(f"no read-only mount here: {e}")
        if probe.returncode == 0 or "Read-only file system" not in probe.stderr:
            pytest.skip(f"no read-only mount here: {probe.stderr.strip()}")
        done = _plot(run, wrapper=read_only)
    _error(done, f"cannot write {os.path.join(run, 'curves.png')}", "--out=")
    assert sorted(os.listdir(run)) == ["actor.csv", "evaluator.csv", "run.json"]


@pytest.mark.parametrize("kind", ["directory", "no_extension"])
def test_the_command_reports_the_file_it_wrote(tmp_path, kind):
    out = tmp_path / "figs"
    if kind == "directory":
        out.mkdir()
    written = out / "curves.png" if kind == "directory" else tmp_path / "figs.png"
    done = _plot(_run(tmp_path / "run"), f"--out={out}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"[plot] wrote {written}"
    assert _png(written)
    assert out.is_dir() == (kind == "directory")


DOPAMINE = [os.path.join(ROOT, "bench", "references", f"dopamine-pong-{agent}.json")
            for agent in ("dqn", "rainbow")]


def test_the_kept_references_name_their_source_and_read_as_published():
    dqn, rainbow = (load_reference(path) for path in DOPAMINE)
    assert "google/dopamine" in dqn.source and dqn.panel == rainbow.panel == "training"
    assert dqn.steps[:2] == (250_000.0, 500_000.0) and len(dqn.steps) == 199  # 1M frames each.
    first = next(s for s, r in zip(rainbow.steps, rainbow.returns) if r >= 18)
    assert first == 4_000_000  # Rainbow's mean of 5 seeds first >= 18 (sticky), as read.


def test_references_are_drawn_beside_the_runs(tmp_path):
    run = _run(tmp_path / "run", env="atari:Pong")
    done = _plot(run, f"--out={tmp_path}/with.png", *(f"--reference={p}" for p in DOPAMINE))
    assert done.returncode == 0, done.stderr
    assert "[plot] reference Dopamine DQN (sticky 0.25, mean of 5 seeds): 199 points" in done.stdout
    assert "[plot] reference Dopamine Rainbow" in done.stdout
    assert _png(tmp_path / "with.png")
    plain = _plot(run, f"--out={tmp_path}/without.png")
    assert plain.returncode == 0 and "[plot] reference" not in plain.stdout
    assert (tmp_path / "with.png").read_bytes() != (tmp_path / "without.png").read_bytes()


@pytest.mark.parametrize("content,needle", [
    ("[]", "a JSON list, not an object"),
    ('{"label": "x"}', "no source, protocol, how_read, x, panel, points"),
    (json.dumps({"label": "x", "source": "s", "protocol": "p", "how_read": "h",
                 "x": "agent_steps", "panel": "training", "points": [[1, "a"]]}),
     "is not [agent steps, return] as two finite numbers"),
    (json.dumps({"label": "x", "source": "s", "protocol": "p", "how_read": "h",
                 "x": "frames", "panel": "training", "points": [[1, 2]]}),
     "only agent_steps is drawn"),
    ("not json", "cannot read it"),
])
def test_a_reference_that_cannot_be_drawn_fails_in_one_line(tmp_path, content, needle):
    run = _run(tmp_path / "run")
    (tmp_path / "ref.json").write_text(content)
    _error(_plot(run, f"--reference={tmp_path}/ref.json"), f"--reference={tmp_path}/ref.json",
           needle)
    _error(_plot(run, "--x=wall_time_s", f"--reference={DOPAMINE[0]}"), "by agent steps")


def test_references_are_seen_over_the_runs_steps_on_one_return_scale(tmp_path, monkeypatch):
    """A 50M-step published curve beside a 1M-step run: drawn up to the run's end (equal
    agent steps), with both panels on one return scale (training returns unclipped here)."""
    import matplotlib.axes

    drawn, limits = [], []
    original_plot, original_ylim = matplotlib.axes.Axes.plot, matplotlib.axes.Axes.set_ylim

    def record_plot(self, x, y, *args, **kwargs):
        drawn.append((kwargs.get("label"), np.asarray(x, float)))
        return original_plot(self, x, y, *args, **kwargs)

    def record_ylim(self, *args, **kwargs):
        limits.append(args)
        return original_ylim(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", record_plot)
    monkeypatch.setattr(matplotlib.axes.Axes, "set_ylim", record_ylim)
    run = _run(tmp_path / "run", env="minatar:breakout",
               rounds=((0, [-21, -20]), (1_000_000, [3, 5])),
               training=((500_000, -19.0), (1_000_000, 2.0)))
    dqn = load_reference(DOPAMINE[0])
    plot.plot([run], str(tmp_path / "f.png"), references=[dqn])
    reference_x = next(x for label, x in drawn if label == dqn.label)
    assert reference_x.max() == 1_000_000 and len(reference_x) == 4  # 250k ... 1M, not 50M.
    top, bottom = limits[-2:]  # The last ones set: top and bottom on the same scale.
    assert top == bottom and top[0] <= -21 and top[1] >= 5


def test_an_atari_runs_clipped_training_returns_keep_their_own_scale(tmp_path, monkeypatch):
    """Atari trains on rewards clipped to [-1, 1]: a BattleZone game scores 30,000 where its
    training episode sums 30; one shared scale flattened the training panel to a line."""
    import matplotlib.axes
    import matplotlib.figure

    limits, labels = [], []
    original_save = matplotlib.figure.Figure.savefig
    original_label = matplotlib.axes.Axes.set_ylabel

    def record_limits(self, *args, **kwargs):  # Each panel's scale as saved.
        limits.extend(axis.get_ylim() for axis in self.axes)
        return original_save(self, *args, **kwargs)

    def record_label(self, label, *args, **kwargs):
        labels.append(label)
        return original_label(self, label, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", record_limits)
    monkeypatch.setattr(matplotlib.axes.Axes, "set_ylabel", record_label)
    run = _run(tmp_path / "run", env="atari:BattleZone",
               rounds=((0, [2_000, 3_000]), (1_000_000, [20_000, 30_000])),
               training=((500_000, 4.0), (1_000_000, 30.0)))
    assert plot.load_run(run).train_clipped is True
    assert plot.load_run(_run(tmp_path / "m")).train_clipped is False
    reference = Reference("a published score", "evaluation", (1_000_000.0,), (25_000.0,), "src")
    plot.plot([run], str(tmp_path / "f.png"), references=[reference])
    (top_low, top_high), (bottom_low, bottom_high) = limits
    assert top_high >= 30_000 and bottom_high < 100  # Training's own scale, not the games'.
    assert "training episode return\n(rewards clipped to [-1, 1])" in labels
    assert "evaluation return" in labels


def test_a_final_score_past_the_runs_steps_is_drawn_as_a_named_level(tmp_path, monkeypatch):
    """CleanRL's score at 10M agent steps beside a 1M-step run: cut away, it was only a
    legend entry; it is a dotted level whose label says where it was reached."""
    import matplotlib.axes

    from launch_programs.references import Reference

    levels = []
    original = matplotlib.axes.Axes.axhline

    def record(self, y=0, *args, **kwargs):
        levels.append((y, kwargs.get("label")))
        return original(self, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "axhline", record)
    run = _run(tmp_path / "run", env="atari:Pong", rounds=((0, [-21, -20]), (1_000_000, [3, 5])),
               training=((500_000, -19.0), (1_000_000, 2.0)))
    later = Reference("CleanRL: 20.5", "evaluation", (10_000_000.0,), (20.5,), "src")
    near = Reference("at 1M: 7", "evaluation", (1_000_000.0,), (7.0,), "src")
    plot.plot([run], str(tmp_path / "f.png"), references=[later, near])
    assert levels == [(20.5, "CleanRL: 20.5 (at 10,000,000 actor steps, past this axis)")]


def test_a_result_file_is_redrawn_when_its_run_directory_is_gone(tmp_path):
    """bench/pixels.py: a run's written rounds are its curve once its logdir is gone."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import pixels
    finally:
        sys.path.pop(0)
    result = {"run": "dqn-atari-pong", "agent": "dqn", "env": "atari:Pong",
              "eval_rounds": [[0, 1.0, -21.0, 0.0], [100, 9.0, -3.5, 2.0]]}
    curves = pixels.curves_of_result(result)
    assert curves.label == "dqn on atari:Pong (sticky 0.25)"  # Atari's default protocol.
    assert pixels.sticky_of("ppo-atari-pong-nosticky") == 0.0
    np.testing.assert_array_equal(curves.eval_steps, [0, 100])
    np.testing.assert_array_equal(curves.eval_mean, [-21.0, -3.5])
    np.testing.assert_array_equal(curves.eval_std, [0.0, 2.0])
    assert len(curves.train_steps) == 0
    out = tmp_path / "pixels"
    out.mkdir()
    (out / "dqn-atari-pong-s0.json").write_text(json.dumps(result))
    assert pixels.report("dqn-atari-pong", 0, str(tmp_path / "gone"), str(out)) == result
    assert _png(out / "dqn-atari-pong-s0.png")
    assert json.loads((out / "dqn-atari-pong-s0.json").read_text()) == result  # Kept as it was.
