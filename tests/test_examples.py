"""The agents in examples/ use only the toolkit's public names: what an agent outside the
repository may rely on (issue 45). A private name of the toolkit (`x._name`, `from m import
_name`) in an example fails, naming the file and line; the example's own private members
(assigned or defined in its file) are its business."""

from __future__ import annotations

import ast
import os

import pytest

from tests.commands import ROOT

EXAMPLES = os.path.join(ROOT, "examples")


def _python_files() -> list[str]:
    return sorted(os.path.join(root, name) for root, _, names in os.walk(EXAMPLES)
                  for name in names if name.endswith(".py"))


def private_names_used(source: str) -> list[tuple[int, str]]:
    """(line, name) of each private name of someone else's that `source` reaches for."""
    tree = ast.parse(source)
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
    used = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            used += [(node.lineno, a.name) for a in node.names
                     if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            name = node.attr
            if name.startswith("_") and not name.startswith("__") and name not in own:
                used.append((node.lineno, name))
    return used


def test_the_checker_finds_a_private_name_and_leaves_the_examples_own():
    source = ("from components.replay import _hidden\n"
              "class A:\n"
              "    def __init__(self, learner):\n"
              "        self._mine = 1\n"
              "        self._mine += learner._network_groups()\n")
    assert private_names_used(source) == [(1, "_hidden"), (5, "_network_groups")]


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: os.path.relpath(p, EXAMPLES))
def test_an_example_uses_no_private_name_of_the_toolkit(path):
    used = private_names_used(open(path).read())
    assert not used, f"{os.path.relpath(path, ROOT)} reaches for private names: {used}"
