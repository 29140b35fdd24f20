"""Sonnet, Reverb and dm-tree are left alone by autograph; project code is still converted.

The rules are a process-wide setting: importing the toolkit must not
install them, the launcher's set-up (`configure_tensorflow`) must.
"""

from __future__ import annotations

import subprocess
import sys

import sonnet as snt
import tensorflow as tf
from tensorflow.python.autograph.core import config
from tensorflow.python.autograph.impl import conversion

from components.autograph_rules import PACKAGES, skip_autograph_for


def _project_function(x):
    return x


def test_importing_the_toolkit_changes_no_rule_and_the_launcher_set_up_does():
    script = (
        "import sonnet as snt\n"
        "from tensorflow.python.autograph.impl import conversion\n"
        "import components, components.learners, components.actors, agents.dqn, "
        "launch_programs.agent_program\n"
        "print(conversion.is_allowlisted(snt.Linear.__call__))\n"
        "from launch_programs.devices import configure_tensorflow\n"
        "configure_tensorflow()\n"
        "print(conversion.is_allowlisted(snt.Linear.__call__))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": ""},
                          cwd=__file__.rsplit("/tests/", 1)[0])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_library_code_is_exempt_and_project_code_is_not():
    skip_autograph_for()
    assert conversion.is_allowlisted(snt.Linear.__call__)
    assert conversion.is_allowlisted(snt.optimizers.Adam.apply)
    assert not conversion.is_allowlisted(_project_function)


def test_installing_twice_adds_no_rules():
    skip_autograph_for()
    before = len(config.CONVERSION_RULES)
    skip_autograph_for()
    skip_autograph_for(PACKAGES)
    assert len(config.CONVERSION_RULES) == before


def test_a_sonnet_network_still_traces_and_branches_on_tensors_in_project_code():
    skip_autograph_for()
    mlp = snt.nets.MLP([8, 2])

    @tf.function
    def f(x):
        y = mlp(x)
        if tf.reduce_sum(y) > 1e9:  # A tensor condition: needs autograph here.
            y = -y
        return y

    x = tf.ones((3, 4))
    tf.debugging.assert_equal(f(x), mlp(x))
