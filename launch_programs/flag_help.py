"""`--help` text for config flags, read from the comments in each config dataclass's source.

Configs document each field with a comment (STYLE.md): a trailing one
(`batch_size: int = 128  # Transitions per learner step.`) or, for a longer
note, a block of comment lines right above the field. Reading them from the
source keeps one copy of each explanation: the one a reader of the code sees.
A trailing comment wins over the block above; a block separated from the
field by a blank line is a section heading, not the field's. A class whose
source cannot be read (built at run time) simply has no help text.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import textwrap
import tokenize
from typing import Any


def _own_comments(cls: type) -> dict[str, str]:
    """Comments of the fields written in `cls`'s own class body (not its bases')."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError, IndentationError):
        return {}
    lines = source.splitlines()
    trailing: dict[int, str] = {}  # line -> text of a comment after code on that line.
    standalone: dict[int, str] = {}  # line -> text of a comment alone on its line.
    for token in tokens:
        if token.type == tokenize.COMMENT:
            row, col = token.start
            text = token.string.lstrip("#").strip()
            (standalone if not lines[row - 1][:col].strip() else trailing)[row] = text
    body = next((node for node in tree.body if isinstance(node, ast.ClassDef)), None)
    if body is None or body.name != cls.__name__:
        return {}  # Not this class's source (inspect found another): no text beats wrong text.
    comments = {}
    for node in body.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        end = node.end_lineno or node.lineno
        after = [trailing[row] for row in range(node.lineno, end + 1) if row in trailing]
        above = []
        row = node.lineno - 1
        while row in standalone:
            above.insert(0, standalone[row])
            row -= 1
        text = " ".join(after or above)
        if text:
            comments[node.target.id] = text
    return comments


def field_comments(cls: type) -> dict[str, str]:
    """Field name -> its comment, for a dataclass and the dataclasses it extends."""
    comments: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # A subclass's comment on a redefined field wins.
        if dataclasses.is_dataclass(klass):
            comments.update(_own_comments(klass))
    return comments


def format_default(value: Any) -> str:
    """A default as the user would type it as a flag: `256,256`, `true`, `""`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value) or '""'
    if isinstance(value, str):
        return value or '""'
    return str(value)


def flag_help(comment: str, default: Any) -> str:
    """argparse help for one flag: its comment and default (escaped: argparse %-formats it)."""
    shown = "(required)" if default is dataclasses.MISSING else f"(default: {format_default(default)})"
    return f"{comment} {shown}".strip().replace("%", "%%")
