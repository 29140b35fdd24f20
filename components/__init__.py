"""components: reusable parts that agents compose (adders, replay, actors, networks...)."""
