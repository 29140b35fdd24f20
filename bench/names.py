"""The benchmark scripts' lists of names on the command line (`--runs=a,b`)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable


def names_from(parser: argparse.ArgumentParser, flag: str, given: str,
               known: Iterable[str]) -> list[str]:
    """The comma-separated names of `given`, each one of `known`; otherwise the parser's
    one-line error (exit code 2) naming the unknown ones and the allowed."""
    known = list(known)
    names = given.split(",")
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"{flag}: unknown {unknown}; allowed: {', '.join(known)}")
    return names
