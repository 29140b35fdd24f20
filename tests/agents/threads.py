"""An agent learning a fake task through the threads launcher, as each agent's test does."""

from __future__ import annotations

import tensorflow as tf

from agentkit.specs import make_environment_spec
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.threads import launch_threads

# Two actors of two environments, 6,000 steps, a 10-episode evaluation every 1,000.
PROGRAM = dict(num_actors=2, num_envs_per_actor=2, max_actor_steps=6000, eval_every=1000,
               eval_episodes=10, print_every_s=0)


def learn_through_threads(builder_class: type, config, environment_factory, logdir, **program):
    """Runs the agent's program (PROGRAM's settings, `program` overriding them) to its end;
    the launch result, once it completed."""
    program_config = ProgramConfig(**{**PROGRAM, **program})
    spec = make_environment_spec(environment_factory())
    tf.random.set_seed(0)
    result = launch_threads(make_agent_program(builder_class(config, program_config.layout),
                                               environment_factory, spec, program_config,
                                               str(logdir)))
    assert result.status == "completed", result.error and result.error.formatted
    return result
