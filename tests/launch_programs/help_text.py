"""Reading one flag's entry out of the command line's --help text (for the tests)."""

from __future__ import annotations


def help_entry(text: str, flag: str) -> str:
    """The help of `flag` (its line and continuation lines), whitespace collapsed."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(flag + " "))
    entry = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith(" " * 6) or line.strip().startswith("-"):
            break
        entry.append(line)
    return " ".join(" ".join(entry).split())
