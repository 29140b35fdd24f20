"""The first episode's frames of each family that draws, written as mp4 and gif, read back;
paths and families that cannot give a video refused before anything is played."""

from __future__ import annotations

import os

import imageio.v2 as imageio
import numpy as np
import pytest
from PIL import Image

from components.environments import make_environment
from components.environments.video import (
    FirstEpisodeRecorder,
    VideoError,
    check_video_path,
    frame_of,
    frames_per_second,
    write_video,
)


def _play(recorder, steps, seed=0):
    """Random actions for `steps` steps (through episode ends); each step's timestep."""
    rng = np.random.default_rng(seed)
    spec = recorder.action_spec()
    timesteps = [recorder.reset()]
    for _ in range(steps):
        timesteps.append(recorder.step(rng.integers(spec.num_values)))
    return timesteps


def test_an_atari_game_records_its_own_screen_one_frame_an_agent_step():
    recorder = FirstEpisodeRecorder(make_environment("atari:Breakout", seed=0, evaluation=True))
    _play(recorder, 30)
    recorder.close()
    assert len(recorder.frames) == 31  # The reset's and one a step: no episode ended.
    assert all(f.shape == (210, 160, 3) and f.dtype == np.uint8 for f in recorder.frames)
    assert len({f.tobytes() for f in recorder.frames}) > 1  # The game moved.
    assert frames_per_second(recorder) == 15.0  # 60 frames/s, 4 an agent step.


def test_recording_stops_at_the_first_episodes_end():
    recorder = FirstEpisodeRecorder(make_environment("gym:CartPole-v1", seed=0, render=True))
    timesteps = _play(recorder, 200)  # Random play ends CartPole in about 20 steps.
    first_end = next(i for i, t in enumerate(timesteps) if t.last())
    assert first_end < 150
    assert len(recorder.frames) == first_end + 1
    assert recorder.frames[0].shape == (400, 600, 3)
    assert frames_per_second(recorder) == 50.0  # CartPole's render_fps.
    recorder.close()


def test_a_gym_environment_made_without_render_says_so():
    environment = make_environment("gym:CartPole-v1", seed=0)
    environment.reset()
    with pytest.raises(ValueError, match="render_mode"):
        frame_of(environment)
    environment.close()


def test_mp4_and_gif_hold_every_frame(tmp_path):
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (210, 160, 3), dtype=np.uint8) for _ in range(12)]
    write_video(str(tmp_path / "v.mp4"), frames, fps=15)
    reader = imageio.get_reader(str(tmp_path / "v.mp4"))
    assert reader.count_frames() == 12 and reader.get_meta_data()["size"] == (160, 210)
    assert reader.get_meta_data()["fps"] == 15
    reader.close()
    # pillow merges repeated frames into one shown longer: count the time, not the frames.
    frames[5] = frames[4]
    write_video(str(tmp_path / "v.gif"), frames, fps=10)
    gif, shown = Image.open(tmp_path / "v.gif"), 0
    for i in range(gif.n_frames):
        gif.seek(i)
        shown += gif.info["duration"]
    assert shown == 12 * 100 and gif.size == (160, 210)
    with pytest.raises(VideoError, match="no frames"):
        write_video(str(tmp_path / "none.mp4"), [], fps=15)


@pytest.mark.parametrize("path,env,words", [
    ("v.avi", "atari:Pong", "a file ending in .mp4 or .gif"),
    ("v.mp4", "minatar:breakout", "minatar: environments draw no frames"),
    ("v.gif", "memory:5", "memory: environments draw no frames"),
    ("missing/v.mp4", "gym:CartPole-v1", "is not a directory"),
    ("adir.mp4", "gym:CartPole-v1", "is a directory"),
    ("/proc/v.mp4", "gym:CartPole-v1", "is not writable")])
def test_a_video_that_cannot_be_made_is_refused_before_anything_is_written(
        tmp_path, path, env, words):
    os.mkdir(tmp_path / "adir.mp4")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(VideoError, match=words):
        check_video_path(path if path.startswith("/") else str(tmp_path / path), env)
    assert sorted(os.listdir(tmp_path)) == before


def test_a_writable_path_is_left_as_it_was(tmp_path):
    assert check_video_path(str(tmp_path / "v.mp4"), "atari:Pong") == str(tmp_path / "v.mp4")
    assert not (tmp_path / "v.mp4").exists()
    (tmp_path / "old.gif").write_bytes(b"kept")
    check_video_path(str(tmp_path / "old.gif"), "gym:CartPole-v1")
    assert (tmp_path / "old.gif").read_bytes() == b"kept"
