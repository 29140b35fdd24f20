"""Keeps a local run unreachable from the network and leaves no process of it behind.

A local run starts a Reverb replay server that listens on every interface
without authentication (Reverb 0.14 has no bind-address option), and a local
Ray starts servers of its own (GCS, raylet, agents). `isolate_local_run()`,
called first thing in the command line's main(), moves the run into new
Linux namespaces (Python 3.11 has no os.unshare, hence ctypes):

- network: a private one whose only interface is loopback, so whatever the run
  listens on is reachable from the run alone;
- pid: the run goes on as PID 1 of a new pid namespace; when PID 1 ends, even by
  SIGKILL, the kernel kills every process left in it (Ray's agents would
  otherwise outlive a killed driver by a minute);
- user: lets an unprivileged user make the others; the uid stays the same, so
  files are owned as usual;
- mount (made by the run itself): a /proc that shows the new namespace's pids,
  which is what Ray's and psutil's pid lookups (psutil.Process(), is_proc_alive) expect.

The launched process stays outside as a small supervisor; see `_supervise`.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import select
import signal
import socket
import struct
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
PR_SET_PDEATHSIG = 1
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP, IFF_RUNNING = 0x8913, 0x8914, 0x1, 0x40
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ISOLATED = "private network namespace (loopback only)"

_reason = ("not isolated: the command line ran in-process; `python -m launch_programs.run` "
           "isolates a local run")  # For isolation_status().


def _libc_call(name: str, *args) -> None:
    if getattr(ctypes.CDLL(None, use_errno=True), name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")  # strerror: the one line for the user.


def _unshare() -> None:
    _libc_call("unshare", CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID)


def _map_ids_and_raise_loopback(uid: int, gid: int) -> None:
    """The uid/gid maps (same ids inside), which make the namespace's capabilities usable; `lo` up.

    A fresh network namespace has `lo` down: nothing, not even 127.0.0.1, would connect.
    """
    maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
    for name, text in maps:  # setgroups "deny" is required before an unprivileged gid_map.
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack_from("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16s24x", b"lo")))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | IFF_UP | IFF_RUNNING))


def _probe() -> str | None:
    """Tries the namespaces in a throwaway child; returns why they fail, or None.

    unshare cannot be undone: a failure after it (say, `lo` staying down where
    a security module strips the capabilities) would leave a run with no
    network at all. Trying first keeps the promise: isolated, or unchanged.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # The probe child.
        code = 0
        try:
            os.close(r)
            uid, gid = os.geteuid(), os.getegid()  # Before unshare: after it, they read as unmapped.
            _unshare()
            _map_ids_and_raise_loopback(uid, gid)
        except BaseException as e:  # Any failure is the answer.
            os.write(w, str(getattr(e, "strerror", None) or e).encode()[:500])
            code = 1
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        message = f.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    return None if status == 0 else message or f"probe exited with status {status}"


def isolate_local_run() -> str:
    """Moves this process (and all it starts) into private namespaces; returns one line for the user.

    Call it first in main(), before TensorFlow or Ray start threads: unshare
    refuses a user namespace to a multithreaded process. On success this
    returns in a new child process (PID 1 of the new pid namespace) and the
    launched process only supervises it, never returning. Otherwise nothing
    changes and the line says why.
    """
    global _reason
    if _reason == ISOLATED:
        return f"isolated already: {ISOLATED}"
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        _reason = f"network isolation not possible: the process already runs {threads} threads"
        return _reason
    problem = _probe()
    uid, gid = os.geteuid(), os.getegid()
    try:
        if problem is None:
            _unshare()  # All or nothing; it can still fail (a namespace limit the probe just met).
    except OSError as e:
        problem = e.strerror
    if problem is not None:
        _reason = f"not isolated: {problem}"
        return _reason
    _map_ids_and_raise_loopback(uid, gid)  # Worked in the probe; cannot be undone if it now fails.
    for stream in (sys.stdout, sys.stderr):  # Not printed twice by parent and child.
        stream.flush()
    r, w = os.pipe()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {*FORWARDED, signal.SIGCHLD})
    pid = os.fork()
    if pid != 0:
        os.close(r)
        _supervise(pid)  # Never returns.
    os.close(w)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    _libc_call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([r], [], [], 0)[0]:  # EOF: the parent died before prctl took effect.
        os._exit(128 + signal.SIGKILL)
    os.close(r)
    os.setpgid(0, 0)  # Own group: a group-wide kill reaches the parent only, which forwards it once.
    # From the terminal, PID 1 would ignore Ctrl-Z and Ctrl-\ while Ray's processes in its group
    # stop or quit under it: Ctrl-Z is ignored by all, Ctrl-\ ends the run as it would have.
    signal.signal(signal.SIGTSTP, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, lambda signum, frame: os._exit(128 + signum))
    proc = "/proc of the new pid namespace"
    try:  # Own mount namespace, so the supervisor's /proc still shows this process.
        _libc_call("unshare", CLONE_NEWNS)
        _libc_call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
        _libc_call("mount", b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    except OSError as e:  # E.g. a container that masks parts of /proc.
        proc = f"/proc not remounted ({e.strerror})"
    _reason = ISOLATED
    return f"isolated: {ISOLATED}; processes in a private pid namespace end with this run; {proc}"


def isolation_status() -> str:
    """ISOLATED where this process's network namespace has only `lo`, else why not (for summary.json)."""
    try:
        with open("/proc/self/net/dev") as f:
            names = [line.split(":")[0].strip() for line in f.readlines()[2:]]
    except OSError as e:
        return f"not isolated: {e}"
    return ISOLATED if names == ["lo"] else _reason


def _signal_set(pid: int, field: str) -> int:
    """The SigCgt or SigIgn bit set of process `pid` (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1], 16) for line in f if line.startswith(field + ":")), 0)
    except OSError:
        return 0


def _take_terminal(pgid: int) -> int | None:
    """Gives the foreground of this process's terminal to group `pgid` if ours has it; returns its fd.

    Ctrl-C then reaches the run directly, once, and only the run (not this
    supervisor, which would forward a second SIGINT); reading the terminal works.
    """
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if os.tcgetpgrp(fd) == os.getpgrp():
            os.tcsetpgrp(fd, pgid)
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _supervise(pid: int) -> None:
    """The launched process from now on: forwards signals to the run, waits, exits with its code.

    PID 1 of a pid namespace ignores every signal it has no handler for, even
    a SIGTERM before the program installs its own. So a forwarded signal the
    run does not catch (nor ignore) is carried out here as its default action
    would: the run is killed and this process exits with 128 + signal. (Ctrl-C
    is safe from the start: Python handles SIGINT from its first line.)
    If this process is killed (kill -9), the run gets SIGKILL (PR_SET_PDEATHSIG)
    and the kernel ends every process of the namespace with it.
    """
    code = 1
    try:
        try:
            os.setpgid(pid, pid)  # Also done by the child: whichever runs first.
        except OSError:
            pass
        tty = _take_terminal(pid)
        default_death = 0
        while True:
            signum = signal.sigwaitinfo({*FORWARDED, signal.SIGCHLD}).si_signo
            if signum != signal.SIGCHLD:
                bit = 1 << (signum - 1)
                if _signal_set(pid, "SigCgt") & bit:
                    os.kill(pid, signum)
                elif not _signal_set(pid, "SigIgn") & bit:
                    default_death = default_death or signum
                    os.kill(pid, signal.SIGKILL)
                continue
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
        code = os.waitstatus_to_exitcode(status)
        if code == -signal.SIGKILL and default_death:
            code = -default_death
        code = 128 - code if code < 0 else code
        if tty is not None:  # Back to this group, which the shell (or caller) knows.
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            try:
                if os.tcgetpgrp(tty) == pid:
                    os.tcsetpgrp(tty, os.getpgrp())
            except OSError:
                pass
    finally:
        os._exit(code)
