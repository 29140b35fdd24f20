"""Opening a file for writing without following a symbolic link at its path.

A run writes in its logdir only files it makes itself: a link planted where
one of them goes (`summary.json -> ~/.bashrc`) makes the open fail (ELOOP)
instead of overwriting the link's target.
"""

from __future__ import annotations

import os
from typing import IO

_FLAGS = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}


def open_for_writing(path: str, mode: str = "w", newline: str | None = None) -> IO:
    """`open(path, mode)` for mode w, a, wb or ab, refusing a symbolic link at `path`."""
    fd = os.open(path, _FLAGS[mode[0]] | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, mode, newline=newline) if "b" not in mode else os.fdopen(fd, mode)
