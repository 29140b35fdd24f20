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


def _entries(logdir: str, rel_dir: str = ""):
    """(relative path, os.DirEntry) of every entry at the top of `logdir` and, recursively,
    inside the run's own folders (checkpoints, tb); a symbolic link is never followed."""
    with os.scandir(os.path.join(logdir, rel_dir)) as entries:
        for entry in list(entries):
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            yield rel, entry
            if entry.is_dir(follow_symlinks=False) and is_run_folder(rel):
                yield from _entries(logdir, rel)


def walk(logdir: str) -> tuple[list[str], list[str], list[str]]:
    """(run files, foreign entries, run folders) under `logdir`, relative, sorted. Only the
    run's folders are descended into: any other folder is one foreign entry (`data/`),
    however much it holds."""
    own: list[str] = []
    foreign: list[str] = []
    folders: list[str] = []
    for rel, entry in _entries(logdir):
        if not entry.is_dir(follow_symlinks=False):
            (own if is_run_file(rel) else foreign).append(rel)
        elif is_run_folder(rel):
            folders.append(rel)
        else:
            foreign.append(rel + "/")
    return sorted(own), sorted(foreign), sorted(folders)


def symlinks(logdir: str) -> list[str]:
    """The symbolic links where a run writes (its files' and folders' paths), relative."""
    return sorted(rel for rel, entry in _entries(logdir)
                  if entry.is_symlink() and (is_run_file(rel) or is_run_folder(rel)))


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
