"""The replay node: a Reverb server holding an agent's tables."""

from __future__ import annotations

from collections.abc import Sequence

import reverb

from agentkit.core import advertised_host


class ReplayServer:
    """Serves `tables` on `port` (0 picks a free one).

    Reverb 0.14 listens on all interfaces and has no bind option; it serves
    data, not code. `address()` names the host that other nodes should use (see
    `agentkit.core.advertised_host`).
    """

    def __init__(self, tables: Sequence[reverb.Table], port: int | None = None, host: str | None = None):
        self._server = reverb.Server(tables=list(tables), port=port or None)
        self._host = host or advertised_host()
        self._stopped = False
        self._final_info: dict | None = None

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

    def stop(self) -> None:
        """Stops the server; blocked samplers and writers get an error."""
        if not self._stopped:
            self._stopped = True
            self._final_info = self.info()
            self._server.stop()
