"""rl_games' own Pong settings, run on the CPU, one JSON line a finished game.

Run by bench/peers_pong.py inside `.venv-rlgames` (rl_games and EnvPool at pinned
versions); it is not imported by the toolkit. The settings are the installed package's
`configs/atari/ppo_pong_envpool.yaml`, unchanged but for what a CPU-only machine needs (the
device) and where its files go; the seed is the benchmark's. Each game's line is

    {"agent_steps": N, "game_return": R}

where N counts agent steps (EnvPool's 4-frame steps, all games) up to the step that ended
the game, and R is the game's full unclipped score as rl_games' own score keeping sums it
(EnvPool's raw reward; its reward shaper clips only what it learns from).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import rl_games
import yaml
from rl_games.common.algo_observer import DefaultAlgoObserver
from rl_games.torch_runner import Runner

CONFIG = os.path.join(os.path.dirname(rl_games.__file__), "configs", "atari",
                      "ppo_pong_envpool.yaml")


class GameReporter(DefaultAlgoObserver):
    """rl_games' default score keeping, and each finished game's score printed as it ends."""

    def after_init(self, algo) -> None:
        super().after_init(algo)
        self.agent_steps = 0

    def process_infos(self, infos, done_indices) -> None:
        super().process_infos(infos, done_indices)
        self.agent_steps += self.algo.num_actors  # Called once a step of all the games.
        if isinstance(infos, dict) and "scores" in infos:
            for index in done_indices.cpu().numpy().reshape(-1).tolist():
                print(json.dumps({"agent_steps": self.agent_steps,
                                  "game_return": float(infos["scores"][index])}), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train_dir", required=True, help="where rl_games writes its files")
    args = parser.parse_args(argv)
    with open(CONFIG) as f:
        config = yaml.safe_load(f)
    params = config["params"]
    params["seed"] = args.seed
    params["config"]["device"] = "cpu"
    params["config"]["train_dir"] = args.train_dir
    print(json.dumps({"settings": params["config"] | {"network": params["network"]},
                      "config_file": CONFIG}, default=str), flush=True)
    runner = Runner(algo_observer=GameReporter())
    runner.load(config)
    runner.run({"train": True, "play": False, "checkpoint": None, "sigma": None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
