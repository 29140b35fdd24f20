"""PriorityWriter: at once, or kept until flush and then written in order."""

from __future__ import annotations

import numpy as np
import reverb
import tensorflow as tf

from components.learners.priority_writer import PriorityWriter


def _table_with_items(reverb_server_factory, count):
    table = reverb.Table("t", reverb.selectors.Prioritized(1.0), reverb.selectors.Fifo(),
                         max_size=100, rate_limiter=reverb.rate_limiters.MinSize(1),
                         signature={"x": tf.TensorSpec([], tf.float32)})
    server, client = reverb_server_factory([table])
    with client.trajectory_writer(num_keep_alive_refs=1) as writer:
        for i in range(count):
            writer.append({"x": np.float32(i)})
            writer.create_item("t", 1.0, {"x": writer.history["x"][-1]})
    return client, sorted(_priorities(client))


def _priorities(client):
    """Every item's priority (300 uniform-enough samples of a handful of items)."""
    dataset = reverb.TrajectoryDataset.from_table_signature(
        client.server_address, "t", max_in_flight_samples_per_worker=1)
    return {int(s.info.key): float(s.info.priority) for s in dataset.take(300)}


def test_unbatched_writes_go_at_once(reverb_server_factory):
    client, keys = _table_with_items(reverb_server_factory, 4)
    assert len(keys) == 4
    writer = PriorityWriter(reverb.TFClient(client.server_address), "t")
    tf.function(writer.write)(tf.constant(keys[:2], tf.uint64), tf.constant([5.0, 7.0]))
    seen = _priorities(client)
    assert seen[keys[0]] == 5.0 and seen[keys[1]] == 7.0 and seen[keys[2]] == 1.0


def test_batched_writes_wait_for_flush_and_the_later_write_of_a_key_wins(reverb_server_factory):
    client, keys = _table_with_items(reverb_server_factory, 4)
    writer = PriorityWriter(reverb.TFClient(client.server_address), "t", batched=True)

    @tf.function
    def call(k, p):
        writer.write(k, p)
        writer.write(tf.constant([keys[0]], tf.uint64), tf.constant([9.0], tf.float32))

    call(tf.constant(keys[:3], tf.uint64), tf.constant([2.0, 3.0, 4.0]))
    assert set(_priorities(client).values()) == {1.0}  # Nothing written yet.
    tf.function(writer.flush)()
    seen = _priorities(client)
    assert [seen[k] for k in keys] == [9.0, 3.0, 4.0, 1.0]
    assert int(tf.size(writer._keys)) == 0  # Emptied: a second flush writes nothing.
    tf.function(writer.flush)()
    assert _priorities(client) == seen
