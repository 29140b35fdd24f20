"""nan or inf in a config's number fails at construction, naming the field (its flag), in
every config the command line builds: each built-in agent's, ProgramConfig and RayConfig."""

from __future__ import annotations

import dataclasses
import math
import re
import typing

import pytest

from agentkit.config import ConfigError, require_finite_floats
from launch_programs.program_config import ProgramConfig
from launch_programs.ray_launcher import RayConfig
from launch_programs.registry import AGENTS, get_agent

NAN, INF = float("nan"), float("inf")


def _config_classes() -> dict[str, type]:
    classes = {agent: get_agent(agent).config_class for agent in sorted(AGENTS)}
    classes.update(program=ProgramConfig, ray=RayConfig)
    return classes


CONFIG_CLASSES = _config_classes()


def _kinds(cls: type) -> dict[str, set[type]]:
    """Each init field's declared types, unpacked: `float | None` -> {float, NoneType};
    `tuple[float, ...]` -> {tuple, float}."""
    hints = typing.get_type_hints(cls)

    def leaves(hint) -> set[type]:
        args = typing.get_args(hint)
        if not args:
            return {hint}
        found = {typing.get_origin(hint)} if typing.get_origin(hint) is tuple else set()
        for arg in args:
            if arg is not Ellipsis:
                found |= leaves(arg)
        return found

    return {f.name: leaves(hints[f.name]) for f in dataclasses.fields(cls) if f.init}


def _message(name: str, value, allowed: str = "a finite number") -> str:
    return f"^--{name}: must be {re.escape(allowed)}, got {re.escape(repr(value))}$"


@pytest.mark.parametrize("owner", sorted(CONFIG_CLASSES))
def test_every_float_field_refuses_nan_and_infinities_naming_itself(owner):
    cls = CONFIG_CLASSES[owner]
    floats = [name for name, kinds in _kinds(cls).items() if float in kinds]
    assert floats, f"{cls.__name__} has no float field: the test would check nothing"
    for name in floats:
        field = {f.name: f for f in dataclasses.fields(cls)}[name]
        is_tuple = tuple in _kinds(cls)[name]
        bad = [NAN] + [v for v in (INF, -INF) if v != field.default]
        for value in bad:
            given = (value,) if is_tuple else value
            allowed = "a list of finite numbers" if is_tuple else "a finite number"
            if not is_tuple and isinstance(field.default, float) and math.isinf(field.default):
                allowed += f" or {field.default}"
            with pytest.raises(ConfigError, match=_message(name, given, allowed)):
                cls(**{name: given})


@pytest.mark.parametrize("owner", sorted(CONFIG_CLASSES))
def test_every_number_field_refuses_nan_given_in_python(owner):
    """An int field (or a tuple of ints) given a float nan in Python fails the same way,
    not with a TypeError or a ValueError of int(nan) from deep inside the checks."""
    cls = CONFIG_CLASSES[owner]
    for name, kinds in _kinds(cls).items():
        if not kinds & {int, float} or bool in kinds:
            continue
        given = (NAN,) if tuple in kinds else NAN
        with pytest.raises(ConfigError, match=f"^--{name}: must be "):
            cls(**{name: given})


def test_the_defaults_and_presets_stay_finite():
    for cls in CONFIG_CLASSES.values():
        cls()  # Each default passes its own check.
    for agent in sorted(AGENTS):
        builder = get_agent(agent)
        for name in ("classic_control", "minatar", "atari"):
            if hasattr(builder.config_class, name):
                getattr(builder.config_class, name)()


def test_appo_clip_rho_threshold_nan_built_in_python():
    from agents.appo.config import APPOConfig

    with pytest.raises(ConfigError) as raised:
        APPOConfig(clip_rho_threshold=float("nan"))
    assert str(raised.value) == "--clip_rho_threshold: must be a finite number, got nan"


@dataclasses.dataclass
class _Limits:
    rate: float = 0.5
    max_seconds: float = INF  # inf: no limit.
    floor: float = -INF
    scales: tuple[float, ...] = (1.0, 2.0)
    name: str = "x"
    port: int | None = None

    def __post_init__(self):
        require_finite_floats(self)


def test_an_infinite_default_keeps_accepting_its_infinity_but_never_nan():
    assert _Limits(max_seconds=INF, floor=-INF).max_seconds == INF
    with pytest.raises(ConfigError, match=_message("max_seconds", NAN, "a finite number or inf")):
        _Limits(max_seconds=NAN)
    with pytest.raises(ConfigError, match=_message("max_seconds", -INF, "a finite number or inf")):
        _Limits(max_seconds=-INF)
    with pytest.raises(ConfigError, match=_message("floor", INF, "a finite number or -inf")):
        _Limits(floor=INF)
    with pytest.raises(ConfigError, match=_message("rate", INF)):
        _Limits(rate=INF)


def test_tuple_elements_are_checked_and_other_values_pass():
    with pytest.raises(ConfigError, match=_message("scales", (1.0, NAN), "a list of finite numbers")):
        _Limits(scales=(1.0, NAN))
    with pytest.raises(ConfigError, match=_message("scales", [INF], "a list of finite numbers")):
        _Limits(scales=[INF])
    _Limits(scales=(), name="nan", port=None)  # A string "nan" is no number; None is no number.
    _Limits(port=8000, rate=1e308, scales=(0, -2.5))
