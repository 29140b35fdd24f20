"""Installs the four packages of the toolkit with the pinned, verified stack."""

from setuptools import find_packages, setup

# TensorFlow 2.15 is what dm-reverb 0.14's native code is built against: a
# mismatch fails at import time with "undefined symbol". Keep them together.
CORE = [
    "tensorflow-cpu==2.15.1",
    "dm-reverb==0.14.0",
    "dm-sonnet==2.0.2",
    "tensorflow-probability==0.23.0",
    "dm-env>=1.6",
    "dm-tree>=0.1.8",
    "numpy>=1.23,<2",
    "protobuf>=3.20,<5",
    "gymnasium>=0.29,<1.3",
    "ale-py==0.12.*",
    "opencv-python>=4.8,<4.12",
    # Ray core only: ray[default] pulls extras that need protobuf>=5. Pinned: the launcher
    # reaches into two of Ray's private hooks (its SIGTERM handler and its auto-connect,
    # launch_programs/ray_session.py), and the tests' timings were measured on this release.
    "ray==2.60.0",
    # minatar:<game>; the package also pulls matplotlib, pandas, scipy and seaborn (its display).
    "minatar==1.0.15",
    # `launch_programs.evaluate --video`: mp4 through imageio's ffmpeg plugin (its own ffmpeg
    # binary), gif through pillow; pygame draws gymnasium's classic-control frames.
    "imageio==2.38.1",
    "imageio-ffmpeg==0.8.1",
    "pygame==2.6.1",
]

setup(
    name="agentkit",
    version="0.1.0",
    description="A component-based deep RL toolkit around a Reverb replay service.",
    python_requires=">=3.10,<3.12",
    packages=find_packages(include=["agentkit*", "components*", "agents*", "launch_programs*"]),
    install_requires=CORE,
    extras_require={
        "dev": ["pytest>=7.4", "pytest-timeout>=2.2", "ruff>=0.4"],
        # bench/profile_pong.py samples a run's threads.
        "bench": ["py-spy==0.4.1"],
        # control:<domain>:<task>; dm-control 1.0.50 needs mujoco 3.17 (4.0 lacks fields it reads).
        "control": ["dm-control==1.0.50", "mujoco==3.17.0"],
    },
)
