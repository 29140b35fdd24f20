"""Checks a Reverb checkpoint before a server is asked to load it.

Reverb 0.14 writes a checkpoint as a folder named by its time holding
`tables`, `chunks` and `items` TFRecord files (ZLIB-compressed) and, last,
an empty `DONE`; a server loads the newest folder with `DONE`. A damaged
file is found only as the server starts ("corrupted record"), after every
other node was built: `check_replay_checkpoint` reads the same files first,
so a run can refuse before launch with the path and what to do.
"""

from __future__ import annotations

import os
import struct
import zlib

FILES = ("tables", "chunks", "items")
_READ_BYTES = 1 << 20


class ReplayCheckpointError(ValueError):
    """A replay checkpoint that Reverb could not load; the message names the file."""


def latest_checkpoint(directory: str) -> str | None:
    """The folder Reverb loads from `directory`: the newest one with its DONE file."""
    if not os.path.isdir(directory):
        return None
    done = [name for name in os.listdir(directory)
            if os.path.isfile(os.path.join(directory, name, "DONE"))]
    return os.path.join(directory, max(done)) if done else None


def check_replay_checkpoint(directory: str) -> int:
    """Reads every record of the checkpoint Reverb would load from `directory`; returns how
    many records it holds (0 without one). ReplayCheckpointError if a file is damaged."""
    folder = latest_checkpoint(directory)
    if folder is None:
        return 0
    total = 0
    for name in FILES:
        path = os.path.join(folder, f"{name}.tfrecord")
        try:
            total += _count_records(path)
        except (OSError, ValueError, zlib.error) as e:
            raise ReplayCheckpointError(
                f"replay checkpoint {path} is damaged ({getattr(e, 'strerror', None) or e}); "
                f"delete {folder} to start the replay empty (the learner and counts are kept), "
                f"or rerun with --fresh") from None
    return total


def _count_records(path: str) -> int:
    """The records of a ZLIB-compressed TFRecord file, checking its framing to the last byte:
    each record is an 8-byte length, a 4-byte CRC, the data and a 4-byte CRC."""
    inflate = zlib.decompressobj()
    pending = b""
    records = 0
    with open(path, "rb") as f:
        while chunk := f.read(_READ_BYTES):
            pending += inflate.decompress(chunk)
            while len(pending) >= 12:
                (length,) = struct.unpack_from("<Q", pending)
                end = 12 + length + 4
                if len(pending) < end:
                    break
                pending = pending[end:]
                records += 1
            if inflate.eof:
                break
    if not inflate.eof:
        raise ValueError("the file ends before its compressed stream does (truncated)")
    if pending or inflate.unused_data:
        raise ValueError(f"{len(pending) + len(inflate.unused_data)} bytes after the last record")
    return records
