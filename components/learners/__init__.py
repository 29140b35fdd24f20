"""The learner loop every agent shares, and its parts.

`SGDLearner` is the loop (compiled steps of N batches, the non-finite
guard, logging with the wait for data, priority write-back, checkpoints);
an agent's learner subclasses it and gives its loss. The parts it is made
of are usable on their own: schedules, target updates, importance weights,
the fused Adam optimizer, the compiled step loop and the priority writer.
"""

from components.learners.finite import NonFiniteLossError, all_finite, check_finite
from components.learners.importance import importance_weights
from components.learners.learner_io import LearnerIO, make_learner_io
from components.learners.optimizers import FusedAdam
from components.learners.priority_writer import PriorityWriter
from components.learners.saveable import VariablesSaveable
from components.learners.schedules import KLAdaptive, LinearDecay
from components.learners.sgd_learner import OptimizerGroup, SGDLearner, actor_critic_groups
from components.learners.step_logger import StepLogger
from components.learners.step_loop import LoopResult, StepLoop
from components.learners.targets import TargetUpdate, target_copies

__all__ = ["FusedAdam", "KLAdaptive", "LearnerIO", "LinearDecay", "LoopResult",
           "NonFiniteLossError", "OptimizerGroup",
           "PriorityWriter", "SGDLearner", "StepLogger", "StepLoop", "TargetUpdate",
           "VariablesSaveable", "actor_critic_groups", "all_finite", "check_finite",
           "importance_weights",
           "make_learner_io", "target_copies"]
