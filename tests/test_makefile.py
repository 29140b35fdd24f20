"""`make run` / `make test` on a machine whose python3 is not 3.10 or 3.11 (dm-reverb 0.14, the
last release, has no wheel past 3.11): python3.11 where one is installed, else one line and
exit 2 before anything is made, instead of pip's resolver error minutes later."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.commands import ROOT

MAKE = shutil.which("make")
# A python3 that is 3.12: a real interpreter told so before it runs the code it is given.
PYTHON_312 = """#!/bin/sh
[ "$1" = -c ] || exit 1
exec {python} -c "import sys; sys.version_info = (3, 12, 1); sys.version = '3.12.1'; \
exec(sys.argv[1])" "$2"
"""

pytestmark = pytest.mark.skipif(MAKE is None, reason="needs make")


def _bin(tmp_path, python311: bool):
    """A PATH of its own: echo, python3 (3.12) and, if asked, python3.11."""
    directory = tmp_path / "bin"
    directory.mkdir()
    os.symlink(shutil.which("echo"), directory / "echo")
    real = os.path.realpath(sys.executable)
    (directory / "python3").write_text(PYTHON_312.format(python=real))
    (directory / "python3").chmod(0o755)
    if python311:
        os.symlink(real, directory / "python3.11")
    return directory


def _make(tmp_path, path_dir, *args):
    return subprocess.run([MAKE, "--no-print-directory", *args, f"VENV={tmp_path / 'venv'}"],
                          cwd=ROOT, env={"PATH": str(path_dir), "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("target", ["run", "test"])
def test_without_a_supported_python_make_stops_in_one_line(tmp_path, target):
    done = _make(tmp_path, _bin(tmp_path, python311=False), target)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "no Python 3.10 or 3.11 found (python3: 3.12.1)" in lines[0]
    assert "wheels up to 3.11 only" in lines[0] and "make run PYTHON=/path/to/python3.11" in lines[0]
    assert not (tmp_path / "venv").exists()


def test_python311_is_taken_where_python3_is_another(tmp_path):
    done = _make(tmp_path, _bin(tmp_path, python311=True), "which-python")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "python3.11"


def test_a_python_given_that_is_not_supported_is_named(tmp_path):
    path_dir = _bin(tmp_path, python311=True)
    done = _make(tmp_path, path_dir, "run", f"PYTHON={path_dir / 'python3'}")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"PYTHON={path_dir / 'python3'} is not Python 3.10 or 3.11 (it is 3.12.1)" in lines[0]
    assert not (tmp_path / "venv").exists()
