"""The replay node: a Reverb server holding an agent's tables, optionally checkpointed."""

from __future__ import annotations

import errno
import os
import socket
import sys
import threading
import time
from collections.abc import Sequence

import reverb

from agentkit.core import advertised_host


def pick_free_port() -> int:
    """A port that is free now, so that a restarted server can come back on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    """Whether something listens on `port` here, on IPv4 or IPv6.

    gRPC (Reverb's server) binds with SO_REUSEPORT, so a second Reverb or
    gRPC server on a taken port binds too and clients reach either one at
    random: the server cannot tell, so this is asked before it starts. The
    probe binds without SO_REUSEPORT (a listener of any program refuses it)
    and with SO_REUSEADDR (a port left in TIME_WAIT by an earlier run is free).
    """
    for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # No IPv6 here.
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    return True
                if e.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                    raise
    return False


class NoCheckpointer(reverb.checkpointers.CheckpointerBase):
    """No checkpoints: Reverb's default (a `tempfile.mkdtemp()` per server, never removed)
    left an empty folder under /tmp for every server a run or test started."""

    def internal_checkpointer(self) -> None:
        return None  # Reverb's server takes no checkpointer; a checkpoint call says so.


class ReplayServer:
    """Serves `tables` on `port` (0 or None picks a free one).

    Reverb 0.14 listens on all interfaces and has no bind option; it serves
    data, not code. `address()` names the host that other nodes should use (see
    `agentkit.core.advertised_host`).

    With `checkpoint_dir`, the tables (items, priorities, rate-limiter state)
    are restored from the latest checkpoint there when the server starts, and
    checkpointed every `checkpoint_every_s` and at `stop()`. Reverb keeps the
    latest checkpoint only and blocks the server while it writes one. A server
    restarted on the same port is found again by its clients: Reverb's
    writers and datasets reconnect by themselves.
    """

    def __init__(
        self,
        tables: Sequence[reverb.Table],
        port: int | None = None,
        host: str | None = None,
        checkpoint_dir: str | None = None,
        checkpoint_every_s: float = 300.0,
    ):
        checkpointer = NoCheckpointer()
        if checkpoint_dir:
            os.makedirs(checkpoint_dir, exist_ok=True)
            checkpointer = reverb.checkpointers.DefaultCheckpointer(checkpoint_dir)
        started = time.monotonic()
        self._server = reverb.Server(tables=list(tables), port=port or None,
                                     checkpointer=checkpointer)
        self._host = host or advertised_host()
        self._stopped = False
        self._final_info: dict | None = None
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_every_s = checkpoint_every_s
        self._lock = threading.Lock()  # One checkpoint at a time; none after stop().
        self._wake = threading.Event()
        self.restored_items = 0
        self.checkpoints_written = 0
        if checkpoint_dir:
            self.restored_items = sum(t["current_size"] for t in self.info().values())
            if self.restored_items:
                print(f"[replay] restored {self.restored_items} items from {checkpoint_dir} in "
                      f"{time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
            self._thread = threading.Thread(target=self._checkpoint_loop, name="replay-checkpoints",
                                            daemon=True)
            self._thread.start()

    @property
    def port(self) -> int:
        return self._server.port

    def address(self) -> str:
        return f"{self._host}:{self._server.port}"

    def info(self) -> dict:
        """Per-table size and insert/sample counts, from the server itself.

        After `stop()` it returns the figures taken just before stopping.
        """
        if self._final_info is not None:
            return self._final_info
        client = reverb.Client(self.address())
        result = {}
        for name, info in client.server_info().items():
            limiter = info.rate_limiter_info
            result[name] = {
                "current_size": int(info.current_size),
                "num_inserts": int(limiter.insert_stats.completed),
                "num_samples": int(limiter.sample_stats.completed),
                "max_size": int(info.max_size),
            }
        return result

    def checkpoint_stats(self) -> dict:
        """Items restored when this server started, and checkpoints written since."""
        return {"restored_items": self.restored_items,
                "checkpoints_written": self.checkpoints_written}

    def checkpoint(self) -> str | None:
        """Writes a checkpoint of every table now; returns its path (None when off)."""
        if not self._checkpoint_dir:
            return None
        with self._lock:
            if self._stopped:
                return None
            path = reverb.Client(self.address()).checkpoint()
            self.checkpoints_written += 1
            return path

    def _checkpoint_loop(self) -> None:
        while not self._wake.wait(self._checkpoint_every_s):
            self.checkpoint()

    def stop(self) -> None:
        """Checkpoints (where on), then stops the server; blocked samplers and writers get an error."""
        if self._stopped:
            return
        self._wake.set()
        self.checkpoint()
        with self._lock:
            self._stopped = True
            self._final_info = self.info()
            self._server.stop()
