"""components: reusable parts that agents compose (adders, replay, actors, networks...)."""

from components.autograph_rules import skip_autograph_for

skip_autograph_for()
