"""The run's one progress line: read from the CSVs the nodes write, in place on a terminal."""

from __future__ import annotations

import io

from launch_programs.monitor import MonitorRow
from launch_programs.progress import CsvTail, ProgressReader, ProgressReporter, format_progress


def _write(path, text):
    with open(path, "a") as f:
        f.write(text)


def test_a_tail_gives_each_complete_row_once(tmp_path):
    path = tmp_path / "learner.csv"
    tail = CsvTail(str(path))
    assert tail.new_rows() == []  # No file yet.
    _write(path, "wall_time_s,actor_steps\n1.0,10\n2.0,2")  # The last line is unfinished.
    assert tail.new_rows() == [{"wall_time_s": "1.0", "actor_steps": "10"}]
    assert tail.new_rows() == []
    _write(path, "0\n3.0,30,extra\n4.0,40\n")  # Its end; a damaged row; another.
    assert tail.new_rows() == [{"wall_time_s": "2.0", "actor_steps": "20"},
                               {"wall_time_s": "4.0", "actor_steps": "40"}]


def test_a_csv_rewritten_with_a_wider_header_is_read_again(tmp_path):
    path = tmp_path / "evaluator.csv"
    tail = CsvTail(str(path))
    _write(path, "wall_time_s,actor_steps\n1.0,0\n")
    assert tail.new_rows() == [{"wall_time_s": "1.0", "actor_steps": "0"}]
    path.write_text("wall_time_s,actor_steps,extra\n1.0,0,\n2.0,100,7\n")  # As CSVLogger does.
    assert tail.new_rows() == [{"wall_time_s": "1.0", "actor_steps": "0", "extra": ""},
                               {"wall_time_s": "2.0", "actor_steps": "100", "extra": "7"}]
    assert tail.new_rows() == []


def test_the_line_says_steps_rates_wait_evaluation_and_time_left(tmp_path):
    reader = ProgressReader(str(tmp_path))
    _write(tmp_path / "actor.csv", "wall_time_s,actor_steps,episode_return\n10.0,50000,1\n")
    _write(tmp_path / "learner.csv", "wall_time_s,actor_steps,learner_steps,learner_steps_per_s,"
           "data_wait_fraction\n11.0,52000,3100,180.4,0.062\n")
    _write(tmp_path / "evaluator.csv", "wall_time_s,actor_steps,episode_return\n"
           "5.0,25000,3\n" + "".join(f"12.0,50031,{r}\n" for r in (7, 9)))
    first = reader.read()
    assert first.actor_steps == 52000 and first.eval_returns == [7.0, 9.0]
    assert first.learner_steps == 3100
    assert first.actor_steps_per_s is None  # One point: no rate yet.
    _write(tmp_path / "actor.csv", "111.0,152000,2\n")
    line = format_progress(reader.read(), 1_000_000)
    assert line == ("[progress] 152,000/1,000,000 steps (15.2%) | actors 1,000/s | learner "
                    "180/s, waits for data 6% | eval 8.00 (2 ep) at 50,031 | 14 min left")
    _write(tmp_path / "evaluator.csv", "113.0,150031,10\n")  # A new round starts.
    assert "eval 10.00 (1 ep) at 150,031" in format_progress(reader.read(), 1_000_000)
    assert format_progress(reader.read(), None).startswith("[progress] 152,000 steps | ")
    # The monitor's last sample adds the actors' wait on the rate limiter and the memory.
    sample = MonitorRow(wall_time_s=111.0, rss_mb=2150.4, insert_wait_fraction=0.615)
    line = format_progress(reader.read(), 1_000_000, sample)
    assert "| actors 1,000/s, held by replay 62% | learner 180/s" in line
    assert line.endswith("| RSS 2.1 GB | 14 min left")
    assert "held by" not in format_progress(reader.read(), 1_000_000, MonitorRow(1.0, 100.0))


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_line_is_rewritten_in_place_and_into_a_file_appended(tmp_path):
    _write(tmp_path / "actor.csv", "wall_time_s,actor_steps,episode_return\n1.0,1000,1\n")
    terminal, file = _Terminal(), io.StringIO()
    for stream in (terminal, file):
        reporter = ProgressReporter(str(tmp_path), 10_000, every_s=60, stream=stream)
        reporter.report()
        reporter.report()
        reporter.stop()
    assert terminal.getvalue().count("\r[progress] 1,000/10,000 steps (10.0%)") == 2
    assert terminal.getvalue().endswith("\n") and terminal.getvalue().count("\n") == 1
    assert file.getvalue().splitlines() == ["[progress] 1,000/10,000 steps (10.0%)"] * 2
