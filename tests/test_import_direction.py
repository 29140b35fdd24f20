"""Imports point one way: launch_programs -> agents -> components -> agentkit (DESIGN.md).

Every module of the four packages is read (not imported) and each of its imports, at the top
or inside a function, is checked against the layers: a package may import its own layer and
the ones below, never one above.
"""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("agentkit", "components", "agents", "launch_programs")  # Lowest first.


def wrong_imports(source: str, package: str) -> list[str]:
    """The imports in `source` (a module of `package`) that point up the layers."""
    level = LAYERS.index(package)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in LAYERS and LAYERS.index(top) > level:
                found.append(f"line {node.lineno}: {name}")
    return found


def _modules():
    for package in LAYERS:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    yield package, os.path.join(folder, name)


def test_the_checker_finds_an_import_that_points_up():
    assert wrong_imports("from launch_programs.run import main\n", "agents") == [
        "line 1: launch_programs.run"]
    assert wrong_imports("def f():\n    import agents.dqn\n", "components") == [
        "line 2: agents.dqn"]
    assert wrong_imports("from agentkit import core\nimport numpy\n", "components") == []
    assert wrong_imports("from . import sibling\n", "agentkit") == []


@pytest.mark.parametrize("package", LAYERS)
def test_no_module_imports_a_layer_above_its_own(package):
    problems = {}
    for owner, path in _modules():
        if owner == package:
            with open(path) as f:
                wrong = wrong_imports(f.read(), package)
            if wrong:
                problems[os.path.relpath(path, ROOT)] = wrong
    assert not problems, problems
