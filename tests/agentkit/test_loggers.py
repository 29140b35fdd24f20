"""Loggers: CSV keeps late columns, terminal prints at a bounded rate, rows get timestamps."""

from __future__ import annotations

import io
import os

from agentkit.loggers import CSVLogger, TerminalLogger, make_logger, read_csv


def test_csv_widens_its_header_without_losing_rows(tmp_path):
    logger = CSVLogger(str(tmp_path), "actor")
    logger.write({"a": 1, "b": 2.5})
    logger.write({"a": 2, "c": "x"})
    logger.close()
    rows = read_csv(os.path.join(tmp_path, "actor.csv"))
    assert rows == [{"a": "1", "b": "2.5", "c": ""}, {"a": "2", "b": "", "c": "x"}]
    resumed = CSVLogger(str(tmp_path), "actor")  # Appends under the same header.
    resumed.write({"a": 3, "b": 1, "c": "y"})
    resumed.close()
    assert len(read_csv(os.path.join(tmp_path, "actor.csv"))) == 3


def test_terminal_prints_at_most_once_per_period():
    stream = io.StringIO()
    logger = TerminalLogger("learner", print_every_s=60.0, keys=["steps"], stream=stream)
    for i in range(5):
        logger.write({"steps": i, "ignored": 1})
    assert stream.getvalue() == "[learner] steps=0\n"


def test_factory_adds_wall_time_and_writes_tensorboard(tmp_path):
    logger = make_logger("evaluator", str(tmp_path), start_time=None, print_every_s=0,
                         step_key="actor_steps")
    logger.write({"actor_steps": 10, "episode_return": 3.0})
    logger.close()
    rows = read_csv(os.path.join(tmp_path, "evaluator.csv"))
    assert list(rows[0]) == ["wall_time_s", "actor_steps", "episode_return"]
    assert 0 <= float(rows[0]["wall_time_s"]) < 60
    assert os.listdir(os.path.join(tmp_path, "tb", "evaluator"))


def test_tensorboard_gets_every_numeric_value_at_its_step(tmp_path):
    import glob

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from agentkit.loggers.tensorboard import TensorBoardLogger

    logger = TensorBoardLogger(str(tmp_path), "actor", step_key="actor_steps")
    for i in range(3):
        logger.write({"actor_steps": 10 * i, "episode_return": 0.5 + i, "note": "text"})
    logger.close()
    (events,) = glob.glob(os.path.join(tmp_path, "tb", "actor", "events.out.tfevents.*"))
    accumulator = EventAccumulator(events)
    accumulator.Reload()
    assert sorted(accumulator.Tags()["scalars"]) == ["actor_steps", "episode_return"]
    returns = accumulator.Scalars("episode_return")
    assert [(s.step, s.value) for s in returns] == [(0, 0.5), (10, 1.5), (20, 2.5)]


def test_nodes_of_one_kind_share_one_csv_under_threads(tmp_path):
    import threading

    loggers = [make_logger("actor", str(tmp_path), print_every_s=0, tensorboard=False)
               for _ in range(4)]
    barrier = threading.Barrier(4)

    def work(i, logger):
        barrier.wait()
        for j in range(50):
            logger.write({"actor": i, "j": j} if j else {"actor": i, "j": j, f"late_{i}": 1})

    threads = [threading.Thread(target=work, args=(i, lg)) for i, lg in enumerate(loggers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = read_csv(os.path.join(tmp_path, "actor.csv"))
    assert len(rows) == 200
    assert sorted((r["actor"], r["j"]) for r in rows) == sorted(
        (str(i), str(j)) for i in range(4) for j in range(50))
    assert {f"late_{i}" for i in range(4)} <= set(rows[0])


def test_a_row_cut_off_by_a_killed_writer_is_skipped_and_the_next_life_starts_a_new_line(tmp_path):
    logger = CSVLogger(str(tmp_path), "evaluator")
    for i in range(3):
        logger.write({"actor_steps": i, "episode_return": 100.0 + i, "episode_length": 50})
    logger.close()
    path = tmp_path / "evaluator.csv"
    with open(path, "a") as f:
        f.write("3,10")  # Killed mid-row: two of three fields, no newline.
    damaged: list[int] = []
    rows = read_csv(str(path), damaged)
    assert [r["episode_return"] for r in rows] == ["100", "101", "102"]
    assert damaged == [5]
    resumed = CSVLogger(str(tmp_path), "evaluator")  # The run's next life appends.
    resumed.write({"actor_steps": 4, "episode_return": 104.0, "episode_length": 60})
    resumed.close()
    damaged.clear()
    rows = read_csv(str(path), damaged)
    assert [r["episode_return"] for r in rows] == ["100", "101", "102", "104"]
    assert damaged == [5]  # The cut row stays on its own line, skipped.


def test_a_cut_last_line_with_every_field_is_still_skipped(tmp_path):
    path = tmp_path / "evaluator.csv"
    path.write_text("actor_steps,episode_return\r\n1,100\r\n2,47")  # 475 cut to 47.
    damaged: list[int] = []
    assert read_csv(str(path), damaged) == [{"actor_steps": "1", "episode_return": "100"}]
    assert damaged == [3]


def test_counts_are_written_exactly_and_fractions_to_six_digits(tmp_path):
    """Step counts reach the logger as floats; at 1e6 and beyond six significant digits lost
    the last ones (1,000,131 was written 1.00013e+06)."""
    import numpy as np

    logger = CSVLogger(str(tmp_path), "actor")
    logger.write({"actor_steps": 1000131.0, "learner_steps": np.float32(4880.0),
                  "episode_return": -22.0, "wall_time_s": 3214.3849})
    logger.close()
    row = read_csv(str(tmp_path / "actor.csv"))[0]
    assert (row["actor_steps"], row["learner_steps"]) == ("1000131", "4880")
    assert (row["episode_return"], row["wall_time_s"]) == ("-22", "3214.38")
    assert "e+" not in (tmp_path / "actor.csv").read_text()
