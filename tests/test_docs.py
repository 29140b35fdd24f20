"""The docs run as written: README.md and docs/**/*.md, every code block and command.

- ```python blocks are executed, each in a fresh namespace, from the
  repository root. A block right after `<!-- not run: reason -->` is skipped.
- ```bash, ```sh and unlabelled blocks hold commands, checked line by line:
  `python -m launch_programs.run ...` (plain or `.venv/bin/`, with env
  prefixes such as PYTHONPATH) goes through `launch_programs.run.parse`
  and its `--env` must name an environment that exists; `make X` needs a
  Makefile target; `pytest` and `python bench/...` need their files, and a
  bench script the flags given; `pip install` paths and extras must exist.
  Any other command fails, so that nothing unchecked slips in.
- Inline code that starts with one of those commands is checked the same way.
- ```json blocks parse; ```text blocks are output and are not checked.
- Relative links lead to files; the README links every page in docs/.
- The defaults tables on the agent and launcher pages match the config
  dataclasses, and the preset tables match each builder's `preset`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import shlex
import sys
from collections.abc import Iterator

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The tour, the reliability section, one row per agent and the pixel curves (one image per
# run the pixels issue names); details in docs/.
README_LIMIT_BYTES = 10_240
COMMAND_LANGUAGES = ("", "bash", "sh", "shell", "console")
UNCHECKED_LANGUAGES = ("text", "json")
# Commands that a doc may show but that this test cannot check beyond their name.
ALLOWED_COMMANDS = {("ray", "start"), ("ray", "stop"), ("ray", "status"), ("tensorboard",)}


def doc_files() -> list[str]:
    """README.md and every page under docs/, relative to the repository root."""
    files = ["README.md"]
    for directory, _, names in sorted(os.walk(os.path.join(ROOT, "docs"))):
        for name in sorted(names):
            if name.endswith(".md"):
                files.append(os.path.relpath(os.path.join(directory, name), ROOT))
    return files


@dataclasses.dataclass(frozen=True)
class Block:
    path: str  # Relative to the repository root.
    line: int  # Line of the opening fence (1-based).
    language: str
    text: str
    not_run: str | None = None  # The reason given in `<!-- not run: ... -->`, if any.

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


_FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")


def fenced_blocks(path: str, text: str) -> list[Block]:
    """The fenced code blocks of a markdown text, with their languages."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start, language = i, match.group(2).lower()
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path}:{start + 1}: a code block is never closed")
        previous = next((line for line in reversed(lines[:start]) if line.strip()), "")
        reason = _NOT_RUN.search(previous)
        blocks.append(Block(path, start + 1, language, "\n".join(body) + "\n",
                            reason.group(1) if reason else None))
        i += 1
    return blocks


def _read(path: str) -> str:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def all_blocks() -> list[Block]:
    return [block for path in doc_files() for block in fenced_blocks(path, _read(path))]


def _without_blocks(text: str) -> str:
    """The text outside fenced blocks (inline code and links live there)."""
    return re.sub(r"^\s*```.*?^\s*```\s*$", "", text, flags=re.S | re.M)


def command_lines(text: str) -> Iterator[str]:
    """A shell block's commands: continuations joined, comments and blank lines dropped."""
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            yield line.strip()


# -- checking one command -------------------------------------------------------------------


class DocCommandError(AssertionError):
    """A command in the docs would not run as written."""


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", _read("Makefile"), flags=re.M))


def _setup_extras() -> set[str]:
    setup = _read("setup.py")
    extras = re.search(r"extras_require\s*=\s*\{(.*?)\n\s*\}", setup, flags=re.S)
    return set(re.findall(r'"([\w-]+)"\s*:', extras.group(1))) if extras else set()


def _check_environment(name: str) -> None:
    """`--env` names an environment of a known kind that exists (without making it)."""
    from components.environments.registry import ENVIRONMENT_KINDS

    kind, _, rest = name.partition(":")
    if kind not in ENVIRONMENT_KINDS or not rest:
        raise DocCommandError(f"--env={name}: not one of {', '.join(ENVIRONMENT_KINDS.values())}")
    if kind in ("gym", "atari"):
        import gymnasium as gym

        env_id = rest
        if kind == "atari":
            import ale_py

            gym.register_envs(ale_py)
            env_id = f"ALE/{rest}-v5"
        if env_id not in gym.registry:
            raise DocCommandError(f"--env={name}: gymnasium has no environment {env_id}")
    elif kind == "memory":
        if not rest.isdigit() or int(rest) < 1:
            raise DocCommandError(f"--env={name}: memory:<N> needs N >= 1")
    elif kind == "control":
        domain, _, task = rest.partition(":")
        if not domain or not task:
            raise DocCommandError(f"--env={name}: control:<domain>:<task>")
        try:
            from dm_control import suite
        except ImportError:  # Not installed here (an extra): the form is all we can check.
            return
        if (domain, task) not in suite.ALL_TASKS:
            raise DocCommandError(f"--env={name}: the control suite has no such task")


@contextlib.contextmanager
def _python_path(entries: list[str]) -> Iterator[None]:
    """`PYTHONPATH=...` of a command, for the length of one check; its modules forgotten after."""
    paths = [os.path.join(ROOT, entry) for entry in entries if entry]
    before = set(sys.modules)
    sys.path[:0] = paths
    try:
        yield
    finally:
        del sys.path[:len(paths)]
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if any(origin.startswith(p + os.sep) for p in paths):
                del sys.modules[name]


def _check_run(args: list[str], env: dict[str, str]) -> None:
    from launch_programs import flags as run_flags
    from launch_programs import run
    from launch_programs.program_config import ProgramConfig
    from launch_programs.ray_launcher import RayConfig
    from launch_programs.registry import get_agent

    with _python_path(env.get("PYTHONPATH", "").split(os.pathsep)):
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # --help prints the flags.
                run.parse(args)
        except (run.UsageError, ValueError) as e:
            raise DocCommandError(f"launch_programs.run {' '.join(args)}: {e}") from None
        except SystemExit as e:  # argparse itself (should not happen: UsageError instead).
            raise DocCommandError(f"launch_programs.run {' '.join(args)}: exit {e.code}") from None
        known, _ = run_flags.base_parser().parse_known_args(args)
        config_class = get_agent(known.agent).config_class
    # argparse takes a unique prefix (`--max_actor_step`) too; a doc spells every flag out.
    flags = {option for action in run_flags.base_parser()._actions
             for option in action.option_strings}
    for cls in (ProgramConfig, RayConfig, config_class):
        flags |= {f"--{field.name}" for field in dataclasses.fields(cls) if field.init}
    for arg in args:
        if arg.startswith("-") and arg.split("=")[0] not in flags:
            raise DocCommandError(f"launch_programs.run: {arg.split('=')[0]} is not a flag's full "
                                  f"name")
    _check_environment(known.env)


_PYTEST_OPTIONS_WITH_VALUES = ("-m", "-k", "-p", "-c", "-n", "--timeout")


def _check_paths(words: list[str], what: str) -> None:
    for i, word in enumerate(words):
        if word.startswith("-") or (i and words[i - 1] in _PYTEST_OPTIONS_WITH_VALUES):
            continue
        path = word.split("::")[0]
        if not os.path.exists(os.path.join(ROOT, path)):
            raise DocCommandError(f"{what}: no file or folder {path}")


def _check_bench(script: str, args: list[str]) -> None:
    path = os.path.join(ROOT, script)
    if not script.startswith("bench/") or not os.path.isfile(path):
        raise DocCommandError(f"no benchmark script {script}")
    source = _read(script)
    for arg in args:
        if arg.startswith("--"):
            flag = arg.split("=")[0]
            if not re.search(r"add_argument\(\s*['\"]" + re.escape(flag) + r"['\"]", source):
                raise DocCommandError(f"{script} has no flag {flag}")


def _check_pip(args: list[str]) -> None:
    if not args or args[0] != "install":
        raise DocCommandError(f"pip {' '.join(args)}: only `pip install` is expected in the docs")
    for arg in args[1:]:
        if arg.startswith("-"):
            continue
        path, _, extras = arg.partition("[")
        if path.startswith(".") or "/" in path:
            where = os.path.join(ROOT, path)
            if not os.path.exists(where):
                raise DocCommandError(f"pip install {arg}: no folder {path}")
            if extras and os.path.samefile(where, ROOT):
                for extra in extras.rstrip("]").split(","):
                    if extra not in _setup_extras():
                        raise DocCommandError(f"pip install {arg}: setup.py has no extra {extra}")


def _is_python(word: str) -> bool:
    return os.path.basename(word) in ("python", "python3")


def _check_plot(args: list[str]) -> None:
    """The plot command's flags parse (its run directories may be placeholders)."""
    from launch_programs import plot

    flags = [a for a in args if a.startswith("--")]
    known = set(plot.make_parser()._option_string_actions)
    unknown = [f for f in flags if f.split("=")[0] not in known]
    if unknown:
        raise DocCommandError(f"launch_programs.plot: unknown flags {unknown}")
    for flag in flags:
        if flag.startswith("--x=") and flag.split("=", 1)[1] not in plot.X_AXES:
            raise DocCommandError(f"launch_programs.plot: {flag}: not one of {sorted(plot.X_AXES)}")


def _check_flags(module: str, args: list[str]) -> None:
    """A command's flags parse with its module's `make_parser()` (its paths may be
    placeholders)."""
    import importlib

    parser = importlib.import_module(module).make_parser()
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            parser.parse_args(args)
        except SystemExit:
            raise DocCommandError(f"{module}: {err.getvalue().strip()}") from None


def check_command(line: str) -> None:
    """Raises DocCommandError unless `line` would run as written from the repository root."""
    words = shlex.split(line, comments=True)
    env = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if not words:
        raise DocCommandError(f"{line!r}: no command")
    if any(w in ("|", "&&", "||", ";", ">", "<") for w in words):
        raise DocCommandError(f"{line!r}: one command per line, please (no pipes or chains)")
    command, args = words[0], words[1:]
    if _is_python(command) or os.path.basename(command) == "pytest":
        if os.path.basename(command) == "pytest":
            return _check_paths(args, "pytest")
        if args[:2] == ["-m", "launch_programs.run"]:
            return _check_run(args[2:], env)
        if args[:2] == ["-m", "launch_programs.plot"]:
            return _check_plot(args[2:])
        if args[:2] == ["-m", "launch_programs.evaluate"]:
            return _check_flags("launch_programs.evaluate", args[2:])
        if args[:2] == ["-m", "launch_programs.local_cluster"]:
            return _check_flags("launch_programs.local_cluster", args[2:])
        if args[:2] == ["-m", "pytest"]:
            return _check_paths(args[2:], "pytest")
        if args and args[0].endswith(".py"):
            return _check_bench(args[0], args[1:])
        raise DocCommandError(f"{line!r}: not a command these docs should show")
    if command == "make":
        targets = _makefile_targets()
        for target in (a for a in args if not a.startswith("-") and "=" not in a):
            if target not in targets:
                raise DocCommandError(f"make {target}: the Makefile has no such target")
        return None
    if command == "bash":
        return _check_bench(args[0], args[1:]) if args else None
    if os.path.basename(command) == "pip":
        return _check_pip(args)
    if tuple(words[:2]) in ALLOWED_COMMANDS or (command,) in ALLOWED_COMMANDS:
        return None
    raise DocCommandError(f"{line!r}: an unknown command; the docs test checks only "
                          f"launch_programs.run, make, pytest, bench scripts, pip, ray, tensorboard")


_COMMAND_START = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:\S*/)?(?:python3?|make|pytest|pip|bash)\s")


def inline_commands(text: str) -> list[str]:
    """Inline code spans outside fenced blocks that are commands (`make run`, `python ...`)."""
    spans = re.findall(r"`([^`\n]+)`", _without_blocks(text))
    return [span for span in spans if _COMMAND_START.match(span + " ")]


# -- the tests ---------------------------------------------------------------------------------

BLOCKS = all_blocks()
PYTHON_BLOCKS = [b for b in BLOCKS if b.language in ("python", "py")]
COMMAND_BLOCKS = [b for b in BLOCKS if b.language in COMMAND_LANGUAGES]


def test_every_block_has_a_known_language():
    known = ("python", "py") + COMMAND_LANGUAGES + UNCHECKED_LANGUAGES
    unknown = [f"{b.id} ```{b.language}" for b in BLOCKS if b.language not in known]
    assert not unknown, f"blocks this test cannot check: {unknown}"


def test_the_docs_have_runnable_blocks():
    assert {b.path for b in PYTHON_BLOCKS} >= {"README.md", "docs/architecture.md"}
    assert sum(len(list(command_lines(b.text))) for b in COMMAND_BLOCKS) >= 10


@pytest.mark.timeout(300)
@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.id)
def test_python_block_runs(block: Block, monkeypatch):
    if block.not_run:
        pytest.skip(f"not run: {block.not_run}")
    monkeypatch.chdir(ROOT)
    code = compile(block.text, block.id, "exec")
    exec(code, {"__name__": "__doc_block__"})


@pytest.mark.parametrize("block", COMMAND_BLOCKS, ids=lambda b: b.id)
def test_command_block_runs_as_written(block: Block):
    lines = list(command_lines(block.text))
    assert lines, f"{block.id}: an empty command block"
    for line in lines:
        check_command(line)


@pytest.mark.parametrize("path", doc_files())
def test_inline_commands_run_as_written(path: str):
    for command in inline_commands(_read(path)):
        check_command(command)


def test_json_blocks_parse():
    for block in (b for b in BLOCKS if b.language == "json"):
        try:
            json.loads(block.text)
        except json.JSONDecodeError as e:
            pytest.fail(f"{block.id}: {e}")


@pytest.mark.parametrize("path", doc_files())
def test_relative_links_lead_to_files(path: str):
    text = _without_blocks(_read(path))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file = target.split("#")[0]
        where = os.path.normpath(os.path.join(ROOT, os.path.dirname(path), file))
        assert os.path.exists(where), f"{path}: the link {target} leads nowhere"


def test_the_readme_links_every_docs_page():
    readme = _read("README.md")
    unlinked = [page for page in doc_files()[1:] if f"]({page})" not in readme]
    assert not unlinked, f"the README does not link {unlinked}"


def test_the_readme_is_short():
    size = len(_read("README.md").encode())
    assert size <= README_LIMIT_BYTES, (f"README.md is {size} bytes; keep it to the tour and "
                                        f"move details to docs/")


def test_the_readme_table_has_one_command_per_built_in_agent():
    from launch_programs.registry import AGENTS

    rows = [line for line in _read("README.md").splitlines() if line.startswith("| [")]
    for agent in AGENTS:
        commands = [c for row in rows for c in inline_commands(row) if f"--agent={agent} " in c + " "]
        assert len(commands) == 1, f"README: the agents table should give {agent} one command"


# -- defaults tables ---------------------------------------------------------------------------


def markdown_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header cells, body rows) of every table; cells stripped, `\\|` kept as `|`."""
    tables, rows = [], []
    for line in _without_blocks(text).splitlines() + [""]:
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
            rows.append([cell.strip().replace("\\|", "|") for cell in cells])
        elif rows:
            if len(rows) >= 2 and set("".join(rows[1])) <= set("-: "):
                tables.append((rows[0], rows[2:]))
            rows = []
    return tables


def _code(cell: str) -> str:
    match = re.fullmatch(r"`([^`]*)`", cell)
    assert match, f"expected `code` in the cell {cell!r}"
    return match.group(1)


def _same_value(written: str, value) -> bool:
    from launch_programs.flag_help import format_default

    expected = format_default(value)
    if written == expected:
        return True
    try:
        return float(written) == float(expected)
    except ValueError:
        return False


def _defaults(cls: type) -> dict:
    return {f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            for f in dataclasses.fields(cls) if f.init}


def _config_pages() -> dict[str, list[type]]:
    from launch_programs.program_config import ProgramConfig
    from launch_programs.ray_launcher import RayConfig
    from launch_programs.registry import AGENTS, get_agent

    pages = {os.path.join("docs", "agents", f"{name}.md"): [get_agent(name).config_class]
             for name in AGENTS}
    pages[os.path.join("docs", "launchers.md")] = [ProgramConfig, RayConfig]
    return pages


# A representative --env for each preset table's kind ("atari preset").
PRESET_ENVS = {"atari": "atari:Pong", "control": "control:cartpole:swingup",
               "minatar": "minatar:breakout", "classic_control": "gym:CartPole-v1"}


@pytest.mark.parametrize("path", sorted(_config_pages()))
def test_defaults_tables_match_the_configs(path: str):
    assert os.path.exists(os.path.join(ROOT, path)), f"{path} is missing: every agent has a page"
    classes = _config_pages()[path]
    defaults = {name: value for cls in classes for name, value in _defaults(cls).items()}
    seen = {}
    for header, rows in markdown_tables(_read(path)):
        if header != ["flag", "default", "meaning"]:
            continue
        for flag, default, meaning in rows:
            name = _code(flag).removeprefix("--")
            assert name in defaults, f"{path}: {flag} is no field of {[c.__name__ for c in classes]}"
            assert _same_value(_code(default), defaults[name]), (
                f"{path}: {flag} defaults to {defaults[name]!r} in the code, {default} here")
            assert meaning, f"{path}: {flag} has no meaning"
            seen[name] = default
    missing = sorted(set(defaults) - set(seen))
    assert not missing, f"{path}: no defaults row for {missing}"


@pytest.mark.parametrize("path", sorted(p for p in _config_pages() if "agents" in p))
def test_preset_tables_match_the_builders(path: str):
    from launch_programs.program_config import ProgramConfig
    from launch_programs.registry import get_agent

    entry = get_agent(os.path.splitext(os.path.basename(path))[0])
    # A preset table lists the config fields and the program flags the preset changes.
    defaults = {**_defaults(ProgramConfig), **_defaults(entry.config_class)}
    tables = [(h, rows) for h, rows in markdown_tables(_read(path))
              if h[:2] == ["flag", "default"] and h[2].endswith(" preset")]
    assert tables, f"{path}: no preset table"
    for header, rows in tables:
        env = PRESET_ENVS[header[2].removesuffix(" preset")]
        preset = {**entry.preset(env), **entry.program_preset(env)}
        changed = {k: v for k, v in preset.items() if defaults[k] != v}
        written = {}
        for flag, default, preset in rows:
            name = _code(flag).removeprefix("--")
            assert name in changed, f"{path}: the {env} preset does not change {flag}"
            assert _same_value(_code(default), defaults[name]), f"{path}: {flag}'s default"
            assert _same_value(_code(preset), changed[name]), (
                f"{path}: the {env} preset sets {flag} to {changed[name]!r}, not {preset}")
            written[name] = preset
        assert set(written) == set(changed), (
            f"{path}: the {env} preset also changes {sorted(set(changed) - set(written))}")
    # Every family whose preset changes something has its table.
    documented = {header[2].removesuffix(" preset") for header, _ in tables}
    for family, env in PRESET_ENVS.items():
        if entry.preset(env) or entry.program_preset(env):
            assert family in documented, f"{path}: no table for its {family} preset"


# -- the checker fails where it should ---------------------------------------------------------

RUN = ".venv/bin/python -m launch_programs.run"


@pytest.mark.parametrize("line", [
    f"{RUN} --agent=dqn --env=gym:CartPole-v1 --batch_sise=64",  # A typo'd flag.
    f"{RUN} --agent=dqn --max_actor_step=2000",  # A prefix, which argparse would take.
    f"{RUN} --agent=dqm --env=gym:CartPole-v1",  # An unknown agent.
    f"{RUN} --agent=dqn --env=gym:CartPol-v1",  # An unknown gymnasium id.
    f"{RUN} --agent=dqn --env=atari:Pongg",  # An unknown game.
    f"{RUN} --agent=dqn --env=cartpole",  # No kind.
    f"{RUN} --agent=dqn --batch_size=0",  # A value out of range.
    f"{RUN} --agent=dqn --launch=processes",  # An unknown launcher.
    f"{RUN} --agent=d4pg --epsilon_init=0.5",  # Another agent's flag.
    f"{RUN} --agent=my_agents.greedy_dqn:GreedyDQNBuilder",  # Without its PYTHONPATH.
    f"{RUN} --agent=dqn ...",  # A placeholder.
    "make runn",
    ".venv/bin/python -m pytest -q tests/test_nothing_here.py",
    "python bench/acting.py --kss=1,8",
    "python bench/no_such_bench.py",
    "pip install -e .[cuda]",
    "curl https://example.com",
    f"{RUN} --agent=dqn | tee log",
    "python -m launch_programs.plot runs/a --x=episodes",
    "python -m launch_programs.plot runs/a --output=a.png",
])
def test_the_checker_rejects(line: str):
    with pytest.raises(DocCommandError):
        check_command(line)


@pytest.mark.parametrize("line", [
    f"{RUN} --agent=dqn --env=gym:CartPole-v1 --batch_size=64 --prioritized=false",
    "python -m launch_programs.run --agent=r2d2 --env=atari:Pong --help",
    f"PYTHONPATH=examples/external_agent {RUN} --agent=my_agents.greedy_dqn:make_builder "
    f"--epsilon=0.1",
    "make run",
    "python -m launch_programs.plot RUN_DIR --x=wall_time_s --out=curves.png",
    "python bench/learner.py --network=mlp --batch_sizes=64",
    "bash bench/gpu_check.sh",
    "pip install -e .[control]",
    "ray start --head --port=6379",
])
def test_the_checker_accepts(line: str):
    check_command(line)


def test_the_block_reader_finds_languages_lines_and_not_run_marks():
    text = ("intro\n\n```python\nx = 1\n```\n\n<!-- not run: needs a GPU -->\n"
            "```bash\nmake run  # comment\nmake \\\n  test\n```\n")
    python, shell = fenced_blocks("x.md", text)
    assert (python.language, python.line, python.text, python.not_run) == ("python", 3, "x = 1\n", None)
    assert (shell.language, shell.line, shell.not_run) == ("bash", 8, "needs a GPU")
    assert list(command_lines(shell.text)) == ["make run  # comment", "make    test"]
