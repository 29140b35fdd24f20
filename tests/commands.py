"""Running a documented command as a user runs it: a subprocess of this checkout's Python, in
the checkout, with a clean environment (none of the test runner's variables, such as
TF_CPP_MIN_LOG_LEVEL or RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER, which could hide a failure)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEPT = ("PATH", "HOME", "LANG", "USER")
# The suite's mark on every process a test starts (tests/conftest.py sets it in the runner):
# what finds a process that outlived its test, orphans included. No code reads it.
SUITE_MARK_ENV = "AGENTKIT_TEST_SUITE"


def user_env(**extra: str) -> dict[str, str]:
    """A shell's environment: PATH, HOME, LANG and USER only, plus `extra` (and the suite's
    mark, where the test runner has one)."""
    env = {name: os.environ[name] for name in KEPT + (SUITE_MARK_ENV,) if name in os.environ}
    env.update(extra)
    return env


def shell_signals() -> None:
    """In the child before exec: the stop signals as a terminal's shell leaves them (default).
    A test runner started under `nohup` (or in a background job) would otherwise pass on
    SIGHUP (or SIGINT) ignored, and a command rightly keeps ignoring those."""
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def module_command(module: str, *args: str) -> list[str]:
    """`python -m <module> args...` with this checkout's Python."""
    return [sys.executable, "-m", module, *args]


def run_module(module: str, *args: str, timeout: float = 120, **env: str):
    """Runs `python -m module args` to its end; the CompletedProcess (text output)."""
    return subprocess.run(module_command(module, *args), cwd=ROOT, env=user_env(**env),
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=shell_signals)


def start_module(module: str, *args: str, **env: str) -> subprocess.Popen:
    """Starts `python -m module args` in a session of its own (as `setsid`), output piped."""
    return subprocess.Popen(module_command(module, *args), cwd=ROOT, env=user_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=shell_signals)
