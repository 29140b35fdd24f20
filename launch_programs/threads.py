"""The threads launcher: every node of a program in this process.

Each node with a `run()` gets its own thread, so a rate limiter blocking the
inserting side never blocks the sampling side. The program ends when every
`ends_program` node has returned, when a node raises (its error is raised
here, once), or on Ctrl-C. Shutdown follows `Program.shutdown_stages` (the
ending nodes first, so their adders flush while the learner still samples;
the replay server last); this launcher only says how one stage is stopped.
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any

from launch_programs.program import (
    FAILED_JOIN_TIMEOUT_S,
    LaunchResult,
    NodeError,
    Program,
    Stage,
    announce_failure,
    shutdown_despite_interrupts,
)


class ThreadsLauncher:
    """Builds a program's nodes in order and runs them in threads."""

    def __init__(self, program: Program, join_timeout_s: float = 30.0):
        self._program = program
        self._join_timeout_s = join_timeout_s
        self.objects: dict[str, Any] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._errors: list[NodeError] = []
        self._lock = threading.Lock()
        self.timings: dict[str, float] = {}  # Phase -> time.time() it ended (start-up figures).

    def _build(self) -> None:
        for node in self._program.nodes.values():
            args, kwargs = self._program.resolve(node, lambda h: self.objects[h.name])
            try:
                self.objects[node.name] = node.constructor(*args, **kwargs)
            except Exception as e:  # Named like a failure in run(), as under ray.
                raise NodeError(node.name, e, traceback.format_exc()) from None

    def _target(self, name: str, obj: Any) -> None:
        try:
            obj.run()
        except BaseException as e:  # Reported once, by the main thread.
            with self._lock:
                self._errors.append(NodeError(name, e, traceback.format_exc()))

    def _stop_stage(self, stage: Stage) -> None:
        """Calls each node's stop() in turn, then joins their threads under one deadline."""
        for name in stage.names:
            stop = getattr(self.objects[name], "stop", None)
            if stop is not None:
                stop()
        if not stage.wait_for_run:
            return
        deadline = time.time() + self._join_timeout_s
        for name in stage.names:
            thread = self._threads.get(name)
            if thread is not None:
                thread.join(max(0.0, deadline - time.time()))

    def launch(self) -> LaunchResult:
        status = "completed"
        try:
            self._build()
            self.timings["nodes_up"] = time.time()
            for name, obj in self.objects.items():
                if callable(getattr(obj, "run", None)):
                    thread = threading.Thread(
                        target=self._target, args=(name, obj), name=name, daemon=True
                    )
                    self._threads[name] = thread
            for thread in self._threads.values():
                thread.start()
            enders = [n for n, node in self._program.nodes.items() if node.ends_program]
            while True:
                if self._errors:
                    status = "failed"
                    announce_failure(self._errors[0])
                    self._join_timeout_s = min(self._join_timeout_s, FAILED_JOIN_TIMEOUT_S)
                    break
                if enders and all(not self._threads[n].is_alive() for n in enders):
                    break
                time.sleep(0.05)
        except NodeError as e:
            self._errors.append(e)
        except KeyboardInterrupt:
            status = "interrupted"
        finally:
            if shutdown_despite_interrupts(self.shutdown):
                status = "interrupted"
        error = self._errors[0] if self._errors else None
        if error is not None:
            status = "failed"
        return LaunchResult(status, self.objects, error)

    def close(self) -> None:
        """Nothing to release: the nodes lived in this process."""

    def shutdown(self) -> None:
        """Stops every built node, stage by stage (a node with a thread has a run())."""
        built = [name for name in self._program.nodes if name in self.objects]
        for stage in self._program.shutdown_stages(built, self._threads):
            self._stop_stage(stage)


def launch_threads(program: Program, join_timeout_s: float = 30.0) -> LaunchResult:
    """Runs `program` in this process's threads until it ends."""
    return ThreadsLauncher(program, join_timeout_s).launch()
