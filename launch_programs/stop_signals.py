"""How the command line answers SIGINT (Ctrl-C), SIGTERM and SIGHUP: one clean stop.

SIGHUP is what a closed terminal or a dropped SSH session sends; it stops a
run as cleanly as Ctrl-C (checkpoints saved, summary written), and output to
the terminal that is gone goes to /dev/null from then on, so that the stop
cannot fail on a write. A run started under `nohup` (SIGHUP ignored) keeps
ignoring it: that user asked for the run to outlive the terminal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading


class StopSignals:
    """Turns the first stop signal into a KeyboardInterrupt in the main thread; later ones only
    say so.

    Armed from `install()`: before launch nothing has started, so a signal
    stops the command at once (even inside a slow import). `held()` only
    records a signal while a step must not be cut (clearing the logdir); the
    next `arm()` raises it. After `disarm()` (while the summary is written)
    signals are recorded, never raised.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    current: StopSignals | None = None  # The installed instance (a real signal, or code?).

    def __init__(self):
        self.received: int | None = None
        self.reason: str | None = None  # Why `stop_for` stopped the run (no signal came).
        self._own_pending = False  # The SIGINT `stop_for` sent has not been handled yet.
        self._armed = True
        self._launched = False  # Whether there is a program to stop (else: nothing started).
        self._previous = {}

    def install(self) -> StopSignals:
        for signum in self.SIGNALS:
            if signum == signal.SIGHUP and signal.getsignal(signum) == signal.SIG_IGN:
                continue  # Started under `nohup`: the user wants the run to outlive the terminal.
            self._previous[signum] = signal.signal(signum, self._handle)
        StopSignals.current = self
        return self

    def uninstall(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        if StopSignals.current is self:
            StopSignals.current = None

    def stop_for(self, reason: str, headline: str) -> None:
        """Stops the run from any thread as a stop signal does (a clean stop), for `reason`;
        prints `headline` now (the run says `reason` in summary.json and its exit line).
        Nothing happens when a stop is already under way."""
        if self.received is not None or self.reason is not None:
            return
        self.reason = reason
        print(f"[run] {headline}: stopping (flushing adders, saving the learner, writing the "
              f"summary)", file=sys.stderr, flush=True)
        self._own_pending = True
        # A real signal to the main thread: it also wakes a wait blocked in C.
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def _handle(self, signum, frame) -> None:
        if signum == signal.SIGINT and self._own_pending:  # Sent by stop_for, not by a user.
            self._own_pending = False
            if self._armed and self.received is None:
                self._armed = False
                raise KeyboardInterrupt
            return
        if signum == signal.SIGHUP:
            _detach_from_terminal()
        name = signal.Signals(signum).name
        if self.received is not None:
            print(f"[run] {name}: already stopping", file=sys.stderr, flush=True)
            return
        self.received = signum
        what = (" (flushing adders, saving the learner, writing the summary)" if self._launched
                else "")
        print(f"[run] {name}: stopping{what}", file=sys.stderr, flush=True)
        if self._armed:
            self._armed = False
            raise KeyboardInterrupt

    def arm(self, launching: bool = False) -> None:
        """From now on a signal raises; one that came while held raises now. `launching`:
        the program starts now (a stop then flushes and saves)."""
        self._launched = self._launched or launching
        if self.received is not None:
            raise KeyboardInterrupt
        self._armed = True

    def disarm(self) -> None:
        self._armed = False

    @contextlib.contextmanager
    def held(self, until_armed: bool = False):
        """Signals are recorded, not raised, inside; `arm()` after it raises one that came.
        One that came before raises here: its KeyboardInterrupt may have been swallowed
        (Python ignores one raised in a weakref callback, as the import machinery's are).
        `until_armed`: they stay held after the block, until the next `arm()` (so that one
        arriving between the block and the code that handles it waits for that code)."""
        if self.received is not None:
            raise KeyboardInterrupt
        was_armed, self._armed = self._armed, False
        try:
            yield
        finally:
            self._armed = was_armed and self.received is None and not until_armed

    @property
    def exit_code(self) -> int:
        return 128 + (self.received or signal.SIGINT)


def signal_received() -> bool:
    """Whether the installed StopSignals saw a signal (a KeyboardInterrupt without one was
    raised by code, such as an agent's module)."""
    return StopSignals.current is not None and StopSignals.current.received is not None


def _detach_from_terminal() -> None:
    """After SIGHUP: standard output and error that are a terminal go to /dev/null."""
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
            if os.isatty(fd):
                with contextlib.suppress(OSError):
                    stream.flush()
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, fd)
                os.close(null)
        except (OSError, ValueError, AttributeError):  # Closed or not a real file.
            pass
