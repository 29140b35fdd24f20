"""Published learning curves kept as data (`bench/references/*.json`), drawn beside a run.

A reference file is JSON: `label`, `source` (where the numbers come from),
`protocol` (sticky actions or not, training or evaluation episodes),
`how_read` (how each number was read off the source), `x` ("agent_steps"),
`panel` ("evaluation" or "training": which kind of episode its returns are)
and `points`, a list of [agent steps, return]. A figure set beside a
reference must follow the reference's protocol; the label says it.
"""

from __future__ import annotations

import dataclasses
import json
import math

PANELS = ("evaluation", "training")
REQUIRED = ("label", "source", "protocol", "how_read", "x", "panel", "points")


class ReferenceError(ValueError):
    """A reference file that cannot be drawn; the message names it and what is wrong."""


@dataclasses.dataclass(frozen=True)
class Reference:
    label: str
    panel: str  # "evaluation" or "training"
    steps: tuple[float, ...]
    returns: tuple[float, ...]
    source: str


def load_reference(path: str) -> Reference:
    """The reference curve in `path`, checked; ReferenceError (one line) when unusable."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ReferenceError(f"--reference={path}: cannot read it ({getattr(e, 'strerror', None) or e})"
                             ) from None
    problem = _problem(data)
    if problem:
        raise ReferenceError(f"--reference={path}: {problem}")
    steps, returns = zip(*((float(x), float(y)) for x, y in data["points"]))
    return Reference(data["label"], data["panel"], steps, returns, data["source"])


def _problem(data) -> str | None:
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        return f"no {', '.join(missing)} (a reference names its source, protocol and reading)"
    if not isinstance(data["label"], str) or not data["label"]:
        return "'label' is not a non-empty string"
    if data["x"] != "agent_steps":
        return f"'x' is {data['x']!r}; only agent_steps is drawn"
    if data["panel"] not in PANELS:
        return f"'panel' is {data['panel']!r}; allowed: {', '.join(PANELS)}"
    points = data["points"]
    if not isinstance(points, list) or not points:
        return "'points' is not a non-empty list of [agent steps, return]"
    for point in points:
        if (not isinstance(point, list) or len(point) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                           and math.isfinite(v) for v in point)):
            return f"a point {point!r} is not [agent steps, return] as two finite numbers"
    if any(b[0] < a[0] for a, b in zip(points, points[1:])):
        return "'points' are not in order of agent steps"
    return None
