"""Frames of an environment's first episode, written as a video (mp4 or gif).

What a frame is depends on the family: an Atari game's own screen (210x160 RGB, the last of
an agent step's 4 frames, before the agent's grey 84x84 preprocessing), a gymnasium
environment's `render()` (made with render_mode="rgb_array"), a control-suite task's camera 0.
Families that draw nothing (minatar:, memory:) are refused by `check_renders`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import dm_env
import numpy as np

from components.environments.atari import ACTION_REPEAT
from components.environments.wrappers import EnvironmentWrapper

VIDEO_SUFFIXES = (".mp4", ".gif")
RENDERED_KINDS = ("atari", "gym", "control")
ATARI_FPS = 60 / ACTION_REPEAT  # One frame an agent step.
CONTROL_SIZE = (240, 320)  # Height, width of a control task's camera frames.


class VideoError(ValueError):
    """A video that cannot be made: one line naming the flag."""


def check_video_path(path: str, env_name: str) -> str:
    """`path` if a video of `env_name` can be written there (a known suffix, a writable
    place, a family that draws frames); VideoError otherwise. Leaves no file behind."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in VIDEO_SUFFIXES:
        raise VideoError(f"--video: a file ending in {' or '.join(VIDEO_SUFFIXES)}, got {path}")
    kind = env_name.partition(":")[0]
    if kind not in RENDERED_KINDS:
        raise VideoError(f"--video: {kind}: environments draw no frames (only "
                         f"{', '.join(k + ':' for k in RENDERED_KINDS)})")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise VideoError(f"--video: {directory} is not a directory")
    if os.path.isdir(path):
        raise VideoError(f"--video: {path} is a directory")
    existed = os.path.exists(path)
    try:  # What the writer will do (os.access says yes to root, even on a read-only disk).
        with open(path, "ab"):
            pass
    except OSError as e:
        raise VideoError(f"--video: {path} is not writable ({e.strerror})") from None
    if not existed:
        os.remove(path)
    return path


def frame_of(environment: Any) -> np.ndarray:
    """The environment's picture now, [H, W, 3] uint8."""
    render = getattr(environment, "render", None)
    if callable(render):
        return np.asarray(render(), np.uint8)
    physics = getattr(environment, "physics", None)  # A control-suite task.
    if physics is not None:
        return np.asarray(physics.render(*CONTROL_SIZE, camera_id=0), np.uint8)
    raise VideoError(f"--video: {type(environment).__name__} draws no frames")


def frames_per_second(environment: Any) -> float:
    """The video's rate: the game's, for one frame an agent step."""
    gym_env = getattr(environment, "gym_env", None)
    if gym_env is not None:
        if getattr(gym_env.unwrapped, "ale", None) is not None:
            return ATARI_FPS
        return float(gym_env.metadata.get("render_fps") or 30)
    control_timestep = getattr(environment, "control_timestep", None)
    if callable(control_timestep):
        return 1.0 / control_timestep()
    return 30.0


class FirstEpisodeRecorder(EnvironmentWrapper):
    """Keeps a frame at the first reset and after every step, up to the first episode's end."""

    def __init__(self, environment: dm_env.Environment):
        super().__init__(environment)
        self.frames: list[np.ndarray] = []
        self._recording = True

    def _record(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        if self._recording:
            self.frames.append(frame_of(self._environment))
            self._recording = not timestep.last()
        return timestep

    def reset(self) -> dm_env.TimeStep:
        return self._record(self._environment.reset())

    def step(self, action) -> dm_env.TimeStep:
        return self._record(self._environment.step(action))


def write_video(path: str, frames: Sequence[np.ndarray], fps: float) -> None:
    """Writes `frames` to `path` (.mp4: H.264 through imageio's ffmpeg; .gif: pillow)."""
    import imageio.v2 as imageio

    if not frames:
        raise VideoError("--video: the episode gave no frames")
    if path.lower().endswith(".gif"):
        imageio.mimsave(path, list(frames), duration=1000.0 / fps, loop=0)
        return
    # macro_block_size 1: keep the game's own size (210x160 is not a multiple of 16).
    with imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=1,
                            ffmpeg_log_level="error") as writer:
        for frame in frames:
            writer.append_data(frame)
