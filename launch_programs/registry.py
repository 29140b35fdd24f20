"""Which builder `--agent` names: a built-in name, an installed entry point, or `module:Factory`.

An agent is its builder class (`agentkit.builders.ActorLearnerBuilder`): it
names its config class and its presets, so adding a built-in is one line in
`AGENTS`, and the agent itself never imports anything from launch_programs.
Agents outside the repository need no edit here at all:

- `--agent=package.module:Factory`, where `Factory` is a builder class or a
  zero-argument callable returning one (`def make_builder(): return MyBuilder`);
- `--agent=<name>` for a name that an installed package registers in the
  entry-point group `agentkit.agents` (in its setup.py:
  `entry_points={"agentkit.agents": ["greedy = my_agents.greedy_dqn:GreedyDQNBuilder"]}`).

Built-in names win over entry points of the same name, so that an installed
package cannot silently replace `--agent=dqn`. Every way of naming an agent
is checked here, with one error line naming `--agent`, before any node starts.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
from typing import Any

from agentkit.builders import ActorLearnerBuilder

AGENTS: dict[str, str] = {
    "dqn": "agents.dqn:DQNBuilder",
    "rainbow": "agents.rainbow:RainbowBuilder",
    "impala": "agents.impala:IMPALABuilder",
    "appo": "agents.appo:APPOBuilder",
    "ppo": "agents.ppo:PPOBuilder",
    "a2c": "agents.ppo:A2CBuilder",
    "r2d2": "agents.r2d2:R2D2Builder",
    "d4pg": "agents.d4pg:D4PGBuilder",
    "sac": "agents.sac:SACBuilder",
}
ENTRY_POINT_GROUP = "agentkit.agents"


class AgentError(ValueError):
    """`--agent` names nothing that can run (the message is one line naming the flag)."""


def entry_point_agents() -> dict[str, str]:
    """Installed agents by name -> "module:attribute" (group `agentkit.agents`)."""
    return {ep.name: f"{ep.module}:{ep.attr or ''}"
            for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _load(target: str) -> Any:
    """The object `target` ("module:attr" or "module:Outer.attr") names, or AgentError."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise AgentError(f"--agent: '{target}' is not of the form package.module:Factory")
    try:
        obj = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise AgentError(f"--agent: cannot import module '{module_name}': {e}") from None
    except SystemExit as e:  # sys.exit() in the module: not the command's exit.
        raise AgentError(f"--agent: importing module '{module_name}' called sys.exit({e.code!r})"
                         ) from None
    except Exception as e:  # Whatever the module raises as it runs: name it, in one line.
        message = " ".join(str(e).split())
        raise AgentError(f"--agent: cannot import module '{module_name}': "
                         f"{type(e).__name__}: {message}") from None
    for i, part in enumerate(attribute.split(".")):
        if not hasattr(obj, part):
            owner = (f"module '{module_name}'" if i == 0
                     else f"'{module_name}:{'.'.join(attribute.split('.')[:i])}'")
            raise AgentError(f"--agent: {owner} has no attribute '{part}'")
        obj = getattr(obj, part)
    return obj


def _describe(obj: Any) -> str:
    """What `obj` is, for an error line: "the class dict", "an int (3)", "the module os"."""
    if inspect.isclass(obj):
        return f"the class {obj.__qualname__}"
    if inspect.ismodule(obj):
        return f"the module {obj.__name__}"
    if isinstance(obj, ActorLearnerBuilder):
        return f"an instance of {type(obj).__qualname__} (return the class, not an instance)"
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return f"the function {obj.__qualname__}"
    text = repr(obj)
    text = text if len(text) <= 40 else text[:37] + "..."
    name = type(obj).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name} ({text})"


def _as_builder_class(obj: Any, target: str) -> type[ActorLearnerBuilder]:
    """`obj` itself when it is a builder class; else what the zero-argument factory returns."""
    if inspect.isclass(obj) and issubclass(obj, ActorLearnerBuilder):
        return obj
    if callable(obj) and not inspect.isclass(obj):
        try:
            inspect.signature(obj).bind()
        except TypeError:
            raise AgentError(f"--agent: '{target}' is {_describe(obj)}, which needs arguments; "
                             f"a factory takes none and returns an ActorLearnerBuilder "
                             f"subclass") from None
        except ValueError:  # No signature (a builtin): calling it decides.
            pass
        try:
            made = obj()
        except SystemExit as e:
            raise AgentError(f"--agent: '{target}()' called sys.exit({e.code!r})") from None
        except Exception as e:
            message = " ".join(str(e).split())
            raise AgentError(f"--agent: '{target}()' raised {type(e).__name__}: {message}") from None
        if inspect.isclass(made) and issubclass(made, ActorLearnerBuilder):
            return made
        raise AgentError(f"--agent: '{target}()' returned {_describe(made)}, not an "
                         f"ActorLearnerBuilder subclass")
    raise AgentError(f"--agent: '{target}' is {_describe(obj)}, not an ActorLearnerBuilder "
                     f"subclass or a zero-argument factory returning one")


def _check(builder_class: type[ActorLearnerBuilder], target: str) -> type[ActorLearnerBuilder]:
    """A builder that `prepare()` can construct and whose config can become flags."""
    name = builder_class.__qualname__
    config_class = getattr(builder_class, "config_class", None)
    if config_class is None:
        raise AgentError(f"--agent: builder class {name} ('{target}') sets no config_class")
    if not (inspect.isclass(config_class) and dataclasses.is_dataclass(config_class)):
        raise AgentError(f"--agent: {name}.config_class ('{target}') is {_describe(config_class)}, "
                         f"not a dataclass")
    if inspect.isabstract(builder_class):
        missing = ", ".join(sorted(builder_class.__abstractmethods__))
        raise AgentError(f"--agent: builder class {name} ('{target}') is abstract: it does not "
                         f"define {missing}")
    return builder_class


def resolve(name: str) -> str:
    """The "module:Factory" target that `--agent=name` means, or AgentError."""
    if ":" in name:
        return name
    if name in AGENTS:  # Built-ins first: an installed package cannot shadow them.
        return AGENTS[name]
    installed = entry_point_agents()
    if name in installed:
        return installed[name]
    allowed = sorted(AGENTS) + sorted(set(installed) - set(AGENTS))
    raise AgentError(f"--agent: unknown agent '{name}'; allowed: {', '.join(allowed)}, "
                     f"or package.module:Factory for an agent outside this repository")


def get_agent(name: str) -> type[ActorLearnerBuilder]:
    """The builder class `--agent=name` names, checked: every failure is one AgentError line.

    The class is the whole agent: its `config_class` (the flags), its `preset(env)`
    and, once constructed with a config, every part of it.
    """
    target = resolve(name)
    try:
        return _check(_as_builder_class(_load(target), target), target)
    except AgentError as e:
        if target == name:
            raise
        # Say where a target the user never typed came from.
        origin = "built-in" if name in AGENTS else f"entry point in group {ENTRY_POINT_GROUP}"
        raise AgentError(f"{e} (--agent={name}: {origin})") from None
