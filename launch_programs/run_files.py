"""The files a run of this toolkit writes in its logdir, known by path: what `--fresh` may delete.

A file is a run's when its path relative to the logdir matches one of
`PATTERNS` (the marker, run.json, the nodes' CSVs and their lock and
temporary files, summary.json, the npz checkpoints, Reverb's checkpoint
folders, TensorBoard's event files). Anything else (a user's own
`checkpoints/model_epoch_90.pt`) is foreign: `--fresh` keeps it, and a
directory that holds foreign files and no run marker is no run directory.
"""

from __future__ import annotations

import os
import re

MARKER = ".agentkit-run"
RECORD = "run.json"
NODE_LOGS = ("actor", "learner", "evaluator", "monitor")  # monitor.csv: the driver's.
CHECKPOINTS = ("learner", "counter")  # <logdir>/checkpoints/<name>.npz
_LOGS = "|".join(NODE_LOGS)
_REVERB_DIR = r"\d{4}-\d\d-\d\dT[0-9:.]+[+-]\d\d:\d\d"  # Reverb names a checkpoint by its time.
PATTERNS = tuple(re.compile(p) for p in (
    rf"{re.escape(MARKER)}",
    r"(run|summary)\.json(\.tmp)?",
    rf"({_LOGS})\.csv(\.tmp)?",
    rf"\.({_LOGS})\.csv\.lock",
    rf"checkpoints/({'|'.join(CHECKPOINTS)})\.npz(\.tmp\.npz)?",
    rf"checkpoints/replay/{_REVERB_DIR}/(tables|chunks|items)\.tfrecord",
    rf"checkpoints/replay/{_REVERB_DIR}/DONE",
    rf"tb/({_LOGS})/events\.out\.tfevents\.[\w.-]+",
))
# The folders a run makes; --fresh removes one only when it is left empty.
_FOLDERS = re.compile(
    rf"(checkpoints|checkpoints/replay|checkpoints/replay/{_REVERB_DIR}|tb|tb/({_LOGS}))")


def is_run_file(relative: str) -> bool:
    """Whether `relative` (a path under the logdir, with `/`) is one a run writes."""
    return any(p.fullmatch(relative) for p in PATTERNS)


def is_run_folder(relative: str) -> bool:
    """Whether `relative` is a folder a run makes (checkpoints, tb and theirs)."""
    return bool(_FOLDERS.fullmatch(relative))


def walk(logdir: str) -> tuple[list[str], list[str], list[str]]:
    """(run files, foreign files, folders) under `logdir`, relative, sorted; a symlink is never
    followed (it is listed as a file: foreign, or a run file's name that a check refuses)."""
    own, foreign, folders = [], [], []
    for root, dirs, files in os.walk(logdir, followlinks=False):
        rel_root = os.path.relpath(root, logdir)
        for name in list(dirs):
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            if os.path.islink(os.path.join(root, name)):
                dirs.remove(name)
                files.append(name)
            else:
                folders.append(rel)
        for name in files:
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            (own if is_run_file(rel) else foreign).append(rel)
    return sorted(own), sorted(foreign), sorted(folders)


def symlinks(logdir: str) -> list[str]:
    """The symbolic links under `logdir` (relative): a run refuses to write through any."""
    found = []
    for root, dirs, files in os.walk(logdir, followlinks=False):
        for name in dirs + files:
            if os.path.islink(os.path.join(root, name)):
                found.append(os.path.relpath(os.path.join(root, name), logdir))
    return sorted(found)


def clear(logdir: str) -> list[str]:
    """Deletes the run's files under `logdir` and the run's folders left empty; returns the
    foreign files it kept."""
    own, foreign, folders = walk(logdir)
    for rel in own:
        os.remove(os.path.join(logdir, rel))
    for rel in sorted(folders, key=lambda f: f.count("/"), reverse=True):  # Deepest first.
        path = os.path.join(logdir, rel)
        if is_run_folder(rel) and not os.listdir(path):
            os.rmdir(path)
    return foreign
