"""Plays a trained run's agent: its evaluation policy, restored from the run's learner
checkpoint, on the run's environment and protocol.

    python -m launch_programs.evaluate RUN_DIR [--episodes=10] [--seed=0] [--checkpoint=latest]
        [--video=FILE.mp4|FILE.gif] [--export=DIR]

The agent, environment, sticky actions and the whole resolved config come from the run's
run.json; the weights from <RUN_DIR>/checkpoints/learner.npz (`latest`: the one a run keeps)
or the learner checkpoint file --checkpoint names (a copy kept from an earlier point). It
prints the mean, standard deviation and each episode's return, and writes them to
<RUN_DIR>/evaluation.json (the run's other files are left as they are). `--video` records
the first episode's frames (components/environments/video.py says which); `--export` saves
the evaluation policy, as restored and seeded, as a TensorFlow SavedModel that plain
`tf.saved_model.load` serves (components/actors/serving.py: its signature). A run directory
without run.json or a checkpoint, a damaged or foreign checkpoint, an unwritable video path,
an export directory that is not empty, or bad flags: one line, exit code 2, nothing written.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

CHECKPOINT = os.path.join("checkpoints", "learner.npz")
RESULT = "evaluation.json"


class EvaluateError(ValueError):
    """What stops an evaluation before it plays: one line, exit code 2."""


def _config(cls: type, recorded: dict[str, Any], what: str) -> Any:
    """`cls` from a run.json section (lists back to tuples; a field the record lacks, from an
    older run, at its default)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(recorded) - set(fields))
    if unknown:
        raise EvaluateError(f"run.json's {what} has fields this version does not know "
                            f"({', '.join(unknown[:3])}): the run is of another version")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in recorded.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as e:
        raise EvaluateError(f"run.json's {what} is not a valid {cls.__name__}: {e}") from None


def run_spec_of(run_dir: str):
    """The RunSpec a run was made with, from its run.json."""
    from launch_programs.flags import RunSpec
    from launch_programs.program_config import ProgramConfig
    from launch_programs.registry import AgentError, get_agent
    from launch_programs.run_dir import RunDirError, read_record
    from launch_programs.run_files import RECORD

    try:
        record = read_record(os.path.join(run_dir, RECORD))
    except RunDirError as e:
        raise EvaluateError(str(e).removeprefix("--logdir: ")) from None
    if record is None:
        raise EvaluateError(f"{run_dir} has no {RECORD}: not a run directory of this toolkit")
    missing = [k for k in ("agent", "env", "config", "program") if k not in record]
    if missing:
        raise EvaluateError(f"{os.path.join(run_dir, RECORD)} lacks {', '.join(missing)}")
    try:
        builder_class = get_agent(record["agent"])
    except AgentError as e:
        raise EvaluateError(str(e)) from None
    agent_config = _config(builder_class.config_class, record["config"], "config")
    program_config = _config(ProgramConfig, record["program"], "program")
    return RunSpec(record["agent"], record["env"], "threads", os.path.abspath(run_dir), False,
                   agent_config, program_config, builder_class,
                   observation_indices=tuple(record.get("observation_indices", ())),
                   progress=False, sticky_actions=record.get("sticky_actions"))


def restored_learner(run, builder, spec, path: str):
    """The run's learner with the checkpoint's state (the variable source of the policy), and
    the learner steps the checkpoint records (-1 if it records none)."""
    from agentkit.checkpointing import CheckpointError, read_checkpoint

    if not os.path.exists(path):
        raise EvaluateError(f"{path} is missing: the run wrote no learner checkpoint yet (one "
                            f"is written every --checkpoint_every_s and at its end)")
    try:
        state = read_checkpoint(path)
    except CheckpointError as e:
        raise EvaluateError(str(e)) from None
    learner = builder.make_learner(networks=builder.make_networks(spec=spec), spec=spec,
                                   iterator=iter(()), replay_address=None)
    try:
        learner.restore(state)
    except Exception as e:  # noqa: BLE001  (any learner's refusal of a state not its own)
        raise EvaluateError(f"{path} is not a checkpoint of this run's {run.agent} learner "
                            f"({type(e).__name__}: {e})") from None
    return learner, int(state.get("num_steps", -1))


def check_export_directory(directory: str) -> str:
    """`directory` if a SavedModel can be written there: absent or empty, its parent writable."""
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise EvaluateError(f"--export: {directory} exists and is not an empty directory")
    parent = os.path.dirname(os.path.abspath(directory))
    target = directory if os.path.isdir(directory) else parent
    if not os.path.isdir(parent) or not os.access(target, os.W_OK):
        raise EvaluateError(f"--export: {directory} cannot be written")
    return directory


def evaluate(run_dir: str, episodes: int, seed: int, checkpoint: str = "latest",
             video: str | None = None, export: str | None = None) -> dict[str, Any]:
    """Plays `episodes` games of the run's evaluation policy at once; their returns. With
    `video`, the first game's frames are written there; with `export`, the policy is saved
    there (before it plays: as seeded)."""
    import numpy as np

    from agentkit.environment_loop import EnvironmentLoop
    from components.actors.serving import ExportError, export_policy
    from components.environments import video as videos
    from components.environments.batched import BatchedEnvironment
    from launch_programs.devices import configure_tensorflow
    from launch_programs.flags import UsageError
    from launch_programs.preflight import prepare

    run = run_spec_of(run_dir)
    if video is not None:
        try:
            videos.check_video_path(video, run.env)
        except videos.VideoError as e:
            raise EvaluateError(str(e)) from None
        os.environ.setdefault("MUJOCO_GL", "egl")  # A control task's camera, headless.
    if export is not None:
        check_export_directory(export)
    configure_tensorflow()
    try:
        builder, factory, spec = prepare(run)
    except UsageError as e:
        raise EvaluateError(f"run.json no longer makes a run here: {e}") from None
    path = os.path.join(run_dir, CHECKPOINT) if checkpoint == "latest" else checkpoint
    learner, learner_steps = restored_learner(run, builder, spec, path)
    networks = builder.make_networks(spec=spec)
    policy = builder.make_policy(networks=networks, spec=spec, evaluation=True, seed=seed)
    actor = builder.make_actor(policy=policy, networks=networks, adder=None,
                               variable_source=learner)
    actor.update(wait=True)  # The checkpoint's weights.
    result: dict[str, Any] = {}
    if export is not None:
        try:
            result["export"] = {"directory": os.path.abspath(export),
                                **export_policy(policy, export)}
        except ExportError as e:
            raise EvaluateError(f"--export: {e}") from None
    recorder = None

    def make(i: int):
        nonlocal recorder
        if i or video is None:
            return factory(seed=seed + i, evaluation=True)
        recorder = videos.FirstEpisodeRecorder(factory(seed=seed, evaluation=True, render=True))
        return recorder

    environment = BatchedEnvironment.from_factory(make, episodes)
    start = time.monotonic()
    try:
        returns = EnvironmentLoop(environment, actor, update_actor=False).run_episode_each()
        if recorder is not None:
            fps = videos.frames_per_second(recorder)
            videos.write_video(video, recorder.frames, fps)
            result["video"] = {"path": os.path.abspath(video), "frames": len(recorder.frames),
                               "fps": fps}
    except videos.VideoError as e:
        raise EvaluateError(str(e)) from None
    finally:
        environment.close()
    returns = [float(r) for r in returns]
    return {"agent": run.agent, "env": run.env, "sticky_actions": run.sticky_actions,
            "checkpoint": CHECKPOINT if checkpoint == "latest" else os.path.abspath(path),
            "learner_steps": learner_steps, "episodes": episodes,
            "seed": seed, "policy": "evaluation", "return_mean": float(np.mean(returns)),
            "return_std": float(np.std(returns)), "returns": returns,
            "wall_time_s": round(time.monotonic() - start, 2), **result}


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m launch_programs.evaluate",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a run's --logdir")
    parser.add_argument("--episodes", type=int, default=10, help="games played, at once")
    parser.add_argument("--seed", type=int, default=0, help="seeds the games and the policy")
    parser.add_argument("--checkpoint", default="latest",
                        help="latest (the run's checkpoints/learner.npz) or a learner "
                             "checkpoint file of this run")
    parser.add_argument("--video", default=None,
                        help="FILE.mp4 or FILE.gif: the first episode's frames")
    parser.add_argument("--export", default=None,
                        help="DIR (absent or empty): the evaluation policy as a SavedModel")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    # TensorFlow's INFO lines would stand before an error's one line (as the run command).
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    from launch_programs.summary import write_json

    try:
        if args.episodes < 1:
            raise EvaluateError(f"--episodes: must be >= 1, got {args.episodes}")
        if not os.path.isdir(args.run_dir):
            raise EvaluateError(f"{args.run_dir} is not a directory")
        result = evaluate(args.run_dir, args.episodes, args.seed, args.checkpoint,
                          video=args.video, export=args.export)
    except EvaluateError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"[evaluate] {result['agent']} on {result['env']}, learner step "
          f"{result['learner_steps']}: mean {result['return_mean']:.2f} std "
          f"{result['return_std']:.2f} over {args.episodes} episodes: "
          f"{', '.join(f'{r:g}' for r in result['returns'])}", flush=True)
    if "video" in result:
        print(f"[evaluate] video: {result['video']['path']} ({result['video']['frames']} "
              f"frames at {result['video']['fps']:g}/s)", flush=True)
    if "export" in result:
        print(f"[evaluate] exported: {result['export']['directory']} (signature "
              f"{result['export']['signature']}: {', '.join(result['export']['inputs'])} -> "
              f"{', '.join(result['export']['outputs'])})", flush=True)
    write_json(os.path.join(args.run_dir, RESULT), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
