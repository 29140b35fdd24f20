"""Both n-step adders on nests: nested observations, extras, nested rewards and discounts.

The exact cases of test_nstep (scalar observation o, reward r, discount d,
gamma = 0.5) are rerun with every field turned into a nest of known leaves:
an observation v becomes {"pixels": v as uint8[2, 2], "vec": ([v, v + 0.5,
-v], 10 v)}, the extras given with action a are {"logits": [a, -a], "step":
a}, a reward r becomes {"a": [r, -r], "b": 10 r} (R is linear in the
rewards, so the expected R is the case's R mapped the same way). Nested
discounts get cases of their own, computed by hand. Items are read back from
a real Reverb server whose table has `transition_signature`'s signature.
"""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
import reverb
import tensorflow as tf
import tree
from dm_env import specs

from agentkit.specs import EnvironmentSpec
from agentkit.types import Transition
from components.adders import BatchedNStepTransitionAdder, NStepTransitionAdder
from components.replay import transition_signature
from tests.components.adders.test_nstep import CASES, episode_stream

GAMMA = 0.5
F32, I32, U8 = np.float32, np.int32, np.uint8


def dict_obs(v):
    return {"pixels": np.full((2, 2), v, U8), "vec": (np.array([v, v + 0.5, -v], F32), I32(10 * v))}


def tuple_obs(v):
    return (F32(v), {"b": np.array([v, 2 * v], I32)})


OBSERVATIONS = {  # name: (observation of scalar v, its spec)
    "dict": (dict_obs, {"pixels": specs.Array((2, 2), U8),
                        "vec": (specs.Array((3,), F32), specs.Array((), I32))}),
    "tuple": (tuple_obs, (specs.Array((), F32), {"b": specs.Array((2,), I32)})),
    "scalar": (F32, specs.Array((), F32)),
}
EXTRAS_SPEC = {"logits": tf.TensorSpec((2,), tf.float32), "step": tf.TensorSpec((), tf.int32)}


def extras_of(a):
    return {"logits": np.array([a, -a], F32), "step": I32(a)}


def nested_reward(r):
    return {"a": np.array([r, -r], F32), "b": F32(10 * r)}


NESTED_REWARD_SPEC = {"a": specs.Array((2,), F32), "b": specs.Array((), F32)}
SCALAR = specs.Array((), F32)


def make_spec(observations=SCALAR, rewards=SCALAR, discounts=SCALAR) -> EnvironmentSpec:
    return EnvironmentSpec(observations, specs.Array((), I32), rewards, discounts)


def read_items(server, client, table: str = "queue") -> list[tuple[Transition, float]]:
    """Every item of `table` in insertion order, as (Transition of numpy leaves, priority)."""
    size = client.server_info()[table].current_size
    dataset = reverb.TrajectoryDataset.from_table_signature(
        f"localhost:{server.port}", table, max_in_flight_samples_per_worker=1,
        num_workers_per_iterator=1, rate_limiter_timeout_ms=0)
    return [(Transition(*tree.map_structure(lambda x: x.numpy(), sample.data)),
             float(sample.info.priority)) for sample in dataset.take(size)]


def assert_nests_equal(got, want, exact: bool = True):
    """Same structure, dtypes and values (to float32 rounding where not `exact`)."""
    tree.assert_same_structure(got, want)
    for (path, g), w in zip(tree.flatten_with_path(got), tree.flatten(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (path, g, w)
        if exact:
            np.testing.assert_array_equal(g, w, err_msg=str(path))
        else:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=str(path))


def feed(adder, stream, batched: bool) -> None:
    """Feeds (action, timestep, extras) triples (FIRST ones with action None); batched: as
    one slot."""
    for action, timestep, extras in stream:
        if batched:
            timestep = stack([timestep], like=timestep)
            action = None if action is None else np.asarray([action])
            extras = tree.map_structure(lambda x: np.asarray([x]), extras)
        if action is None:
            adder.add_first(timestep)
        else:
            adder.add(action, timestep, extras)


def stack(timesteps, like: dm_env.TimeStep) -> dm_env.TimeStep:
    """K timesteps as one with a leading K axis on every leaf; a FIRST's reward reads 0 and its
    discount 1 (with the structure of `like`'s, where it has one)."""
    def field(name, fill):
        template = getattr(like, name)
        values = [getattr(t, name) if getattr(t, name) is not None
                  else F32(fill) if template is None
                  else tree.map_structure(lambda x: np.full_like(x, fill), template)
                  for t in timesteps]
        return tree.map_structure(lambda *x: np.stack(x), *values)

    return dm_env.TimeStep(np.array([t.step_type for t in timesteps], np.int8),
                           field("reward", 0), field("discount", 1), field("observation", 0))


def case_stream(name: str, observe=F32, reward=float, extras=None) -> list[tuple]:
    """Case `name`'s episodes with observations, rewards and extras mapped to nests."""
    _, episodes, _ = CASES[name]
    stream = []
    for i, (length, end) in enumerate(episodes):
        for action, timestep in episode_stream(length, 100.0 * i, end):
            timestep = timestep._replace(observation=observe(float(timestep.observation)))
            if action is not None:
                timestep = timestep._replace(reward=reward(timestep.reward))
            stream.append((action, timestep, () if extras is None or action is None
                           else extras(int(action))))
    return stream


def make_adder(batched: bool, client, n: int, **kwargs):
    if batched:
        return BatchedNStepTransitionAdder(client, "queue", 1, n, GAMMA, **kwargs)
    return NStepTransitionAdder(client, "queue", n, GAMMA, **kwargs)


ADDERS = ["single", "batched"]


@pytest.mark.parametrize("kind", ADDERS)
@pytest.mark.parametrize("observations", ["dict", "tuple"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_nested_observations_are_exact(name, observations, kind, reverb_server_factory):
    n, _, expected = CASES[name]
    observe, observation_spec = OBSERVATIONS[observations]
    signature = transition_signature(make_spec(observation_spec))
    server, client = reverb_server_factory([reverb.Table.queue("queue", 100, signature=signature)])
    adder = make_adder(kind == "batched", client, n)
    feed(adder, case_stream(name, observe), kind == "batched")
    adder.close()
    items = [item for item, _ in read_items(server, client)]
    assert len(items) == adder.items_written == len(expected)
    for item, (o, a, r, d, o_next) in zip(items, expected):
        assert_nests_equal(item, Transition(observe(o), I32(a), F32(r), F32(d), observe(o_next)))


@pytest.mark.parametrize("kind", ADDERS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_extras_go_with_the_item_of_their_action(name, kind, reverb_server_factory):
    n, _, expected = CASES[name]
    signature = transition_signature(make_spec(OBSERVATIONS["dict"][1]), EXTRAS_SPEC)
    server, client = reverb_server_factory([reverb.Table.queue("queue", 100, signature=signature)])
    seen = []

    def priority_fn(batch: Transition) -> np.ndarray:  # Extras reach the priorities, aligned.
        seen.extend(batch.extras["step"].tolist())
        return batch.extras["step"] + 0.5 * batch.extras["logits"][:, 0] + 1000.0

    adder = make_adder(kind == "batched", client, n, extras_spec=EXTRAS_SPEC,
                       priority_fn=priority_fn)
    feed(adder, case_stream(name, dict_obs, extras=extras_of), kind == "batched")
    adder.close()
    items = read_items(server, client)
    assert len(items) == len(expected)
    for (item, priority), (o, a, r, d, o_next) in zip(items, expected):
        assert_nests_equal(item, Transition(dict_obs(o), I32(a), F32(r), F32(d), dict_obs(o_next),
                                            extras_of(a)))
        assert priority == 1.5 * a + 1000.0
    assert seen == [a for _, a, *_ in expected]


@pytest.mark.parametrize("kind", ADDERS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_nested_reward_with_a_scalar_discount_broadcast(name, kind, reverb_server_factory):
    n, _, expected = CASES[name]
    signature = transition_signature(make_spec(rewards=NESTED_REWARD_SPEC))
    assert signature.discount == {"a": tf.TensorSpec((), tf.float32),
                                  "b": tf.TensorSpec((), tf.float32)}
    server, client = reverb_server_factory([reverb.Table.queue("queue", 100, signature=signature)])
    adder = make_adder(kind == "batched", client, n)
    feed(adder, case_stream(name, reward=nested_reward), kind == "batched")
    adder.close()
    items = [item for item, _ in read_items(server, client)]
    assert len(items) == len(expected)
    for item, (o, a, r, d, o_next) in zip(items, expected):
        assert_nests_equal(item, Transition(F32(o), I32(a), nested_reward(r),
                                            {"a": F32(d), "b": F32(d)}, F32(o_next)))


# Reward {"a": [r, r], "b": r} with r_k = k, discount {"a": [d, d / 2], "b": d}: leaf a[1]
# is discounted by gamma / 2 per step. Items (t, R["a"], R["b"], D["a"], D["b"]), by hand.
NESTED_DISCOUNT_CASES = {
    "terminated_n2": (2, 3, "termination", [
        (0, [2.0, 1.5], 2.0, [0.25, 0.0625], 0.25),  # 1 + .5*2; 1 + .25*2; .25*[1, .25]
        (1, [3.5, 2.75], 3.5, [0.0, 0.0], 0.0),
        (2, [3.0, 3.0], 3.0, [0.0, 0.0], 0.0)]),
    "truncated_n3": (3, 2, "truncation", [
        (0, [2.0, 1.5], 2.0, [0.25, 0.0625], 0.25),
        (1, [2.0, 2.0], 2.0, [0.5, 0.25], 0.5)]),
}


def nested_discount_stream(length: int, end: str) -> list[tuple]:
    stream = [(None, dm_env.restart(F32(0)), ())]
    for k in range(1, length + 1):
        last = k == length
        d = 0.0 if last and end == "termination" else 1.0
        stream.append((I32(k - 1), dm_env.TimeStep(
            dm_env.StepType.LAST if last else dm_env.StepType.MID,
            {"a": np.array([k, k], F32), "b": F32(k)},
            {"a": np.array([d, d / 2], F32), "b": F32(d)}, F32(k)), ()))
    return stream


@pytest.mark.parametrize("kind", ADDERS)
@pytest.mark.parametrize("name", sorted(NESTED_DISCOUNT_CASES))
def test_nested_discounts_apply_leaf_by_leaf(name, kind, reverb_server_factory):
    n, length, end, expected = NESTED_DISCOUNT_CASES[name]
    spec = make_spec(rewards=NESTED_REWARD_SPEC, discounts=NESTED_REWARD_SPEC)
    signature = transition_signature(spec)
    assert signature.discount["a"] == tf.TensorSpec((2,), tf.float32)
    server, client = reverb_server_factory([reverb.Table.queue("queue", 100, signature=signature)])
    adder = make_adder(kind == "batched", client, n)
    feed(adder, nested_discount_stream(length, end), kind == "batched")
    adder.close()
    items = [item for item, _ in read_items(server, client)]
    assert len(items) == len(expected)
    for item, (t, r_a, r_b, d_a, d_b) in zip(items, expected):
        assert_nests_equal(item, Transition(
            F32(t), I32(t), {"a": np.array(r_a, F32), "b": F32(r_b)},
            {"a": np.array(d_a, F32), "b": F32(d_b)}, F32(min(t + n, length))))


def _bad_vec(observation):
    return {**observation, "vec": (np.zeros(4, F32), observation["vec"][1])}


MISMATCHES = {  # name: (how step 2 differs, the error it must raise)
    "leaf_shape": (lambda s: s._replace(observation=_bad_vec(s.observation)),
                   r"observation\['vec'\]\[0\]: expected shape \((1, )?3,?\) float32 "
                   r"\(as at the first step\), got shape \((1, )?4,?\)"),
    "leaf_dtype": (lambda s: s._replace(observation={
        **s.observation, "pixels": s.observation["pixels"].astype(F32)}),
        r"observation\['pixels'\]: expected shape \((1, )?2, 2\) uint8 \(as at the first step\), "
        r"got shape \((1, )?2, 2\) float32"),
    "missing_key": (lambda s: s._replace(observation={"pixels": s.observation["pixels"]}),
                    r"observation: structure differs from the first step: "),
    "reward_structure": (lambda s: s._replace(reward=s.reward["b"]),
                         r"reward: structure differs from the first step: "),
    "reward_leaf_shape": (lambda s: s._replace(reward={**s.reward, "a": s.reward["b"]}),
                          r"reward\['a'\]: expected shape \((1, )?2,?\) \(as at the first step\), "
                          r"got shape \((1,)?\)$"),
}


@pytest.mark.parametrize("kind", ADDERS)
@pytest.mark.parametrize("name", sorted(MISMATCHES))
def test_a_step_unlike_the_first_raises_naming_the_field(name, kind, reverb_server_factory):
    change, message = MISMATCHES[name]
    signature = transition_signature(make_spec(OBSERVATIONS["dict"][1], NESTED_REWARD_SPEC))
    server, client = reverb_server_factory([reverb.Table.queue("queue", 100, signature=signature)])
    adder = make_adder(kind == "batched", client, 1)
    stream = case_stream("one_step", dict_obs, reward=nested_reward)
    feed(adder, stream[:2], kind == "batched")
    action, timestep, extras = stream[2]
    with pytest.raises(ValueError, match=message):
        feed(adder, [(action, change(timestep), extras)], kind == "batched")
    assert adder.items_written == 1  # The first step's item; nothing of the bad one.


def vector_obs(v):
    return np.full(4, v, F32)


PLAIN_MISMATCHES = {  # One array per field (the fast path): how step 2 differs, the error.
    "observation_shape": (lambda a, s: (a, s._replace(observation=np.zeros(3, F32))),
                          r"observation: expected shape \((1, )?4,?\) float32 \(as at the first "
                          r"step\), got shape \((1, )?3,?\) float32$"),
    "observation_dtype": (lambda a, s: (a, s._replace(observation=s.observation.astype(np.float64))),
                          r"observation: expected shape \((1, )?4,?\) float32 \(as at the first "
                          r"step\), got shape \((1, )?4,?\) float64$"),
    "observation_nested": (lambda a, s: (a, s._replace(observation={"x": s.observation})),
                           r"observation: structure differs from the first step: "),
    "reward_array": (lambda a, s: (a, s._replace(reward=np.zeros(2, F32))),
                     r"reward: expected shape \((1,)?\) \(as at the first step\), "
                     r"got shape \((1, )?2,?\)$"),
    "action_dtype": (lambda a, s: (np.int64(a), s),
                     r"action: expected shape \((1,)?\) int32 \(as at the first step\), "
                     r"got shape \((1,)?\) int64$"),
}


@pytest.mark.parametrize("kind", ADDERS)
@pytest.mark.parametrize("name", sorted(PLAIN_MISMATCHES))
def test_a_plain_step_unlike_the_first_raises_naming_the_field(name, kind, reverb_server_factory):
    change, message = PLAIN_MISMATCHES[name]
    signature = transition_signature(make_spec(specs.Array((4,), F32)))
    _, client = reverb_server_factory([reverb.Table.queue("queue", 100, signature=signature)])
    adder = make_adder(kind == "batched", client, 1)
    stream = case_stream("one_step", vector_obs)
    feed(adder, stream[:2], kind == "batched")
    action, timestep, extras = stream[2]
    with pytest.raises(ValueError, match=message):
        feed(adder, [(*change(action, timestep), extras)], kind == "batched")
    assert adder.items_written == 1


@pytest.mark.parametrize("kind", ADDERS)
def test_extras_must_match_the_spec_and_need_one(kind, reverb_server_factory):
    signature = transition_signature(make_spec(), EXTRAS_SPEC)
    _, client = reverb_server_factory([reverb.Table.queue("queue", 100, signature=signature)])
    batched = kind == "batched"
    stream = case_stream("one_step", extras=extras_of)
    adder = make_adder(batched, client, 1, extras_spec=EXTRAS_SPEC)
    feed(adder, stream[:2], batched)
    bad = {"logits": np.zeros(3, F32), "step": I32(0)}
    with pytest.raises(ValueError, match=r"extras\['logits'\]: expected shape \((1, )?2,?\) float32 "
                                         r"\(as in extras_spec\), got shape \((1, )?3,?\)"):
        feed(adder, [(stream[2][0], stream[2][1], bad)], batched)
    with pytest.raises(ValueError, match="extras: structure differs from extras_spec"):
        feed(adder, [(stream[2][0], stream[2][1], ())], batched)
    without = make_adder(batched, client, 1)  # No extras_spec: extras are refused, not dropped.
    feed(without, stream[:1], batched)
    with pytest.raises(ValueError, match="this adder stores none: construct it with an extras_spec"):
        feed(without, stream[1:2], batched)


def _random_nested_streams(rng, num_envs: int, steps: int) -> list[list[tuple]]:
    """Per slot, `steps + 1` (action, timestep, extras) triples in lock-step: random episodes
    (terminated, truncated, or cut short by a reset) of nested observations, rewards,
    discounts and extras; observations and actions name their slot (1000 * slot + ...)."""
    streams = []
    for slot in range(num_envs):
        stream, episode = [], 0
        while len(stream) < steps + 1:
            length, end = int(rng.integers(1, 9)), ["termination", "truncation", "none"][
                int(rng.integers(3))]
            offset = 1000.0 * slot + 20.0 * episode
            stream.append((None, dm_env.restart({"x": np.full(3, offset, F32), "k": I32(offset)}),
                           ()))
            for k in range(1, length + 1):
                last = k == length and end != "none"
                d = 0.0 if last and end == "termination" else float(rng.uniform(0.5, 1.0))
                stream.append((np.array([offset + k - 1, -k], I32), dm_env.TimeStep(
                    dm_env.StepType.LAST if last else dm_env.StepType.MID,
                    {"a": rng.normal(size=2).astype(F32), "b": F32(rng.normal())},
                    {"a": np.array([d, d * rng.uniform()], F32), "b": F32(d)},
                    {"x": np.full(3, offset + k, F32) + rng.normal(size=3).astype(F32),
                     "k": I32(offset + k)}),
                    {"logits": rng.normal(size=2).astype(F32), "step": I32(offset + k - 1)}))
            episode += 1
        streams.append(stream[:steps + 1])
    return streams


@pytest.mark.parametrize("n_step", [1, 3])
def test_batched_matches_per_environment_adders_on_nests(n_step, reverb_server_factory):
    rng = np.random.default_rng(10 + n_step)
    num_envs, steps = 4, 40
    streams = _random_nested_streams(rng, num_envs, steps)
    obs_spec = {"x": specs.Array((3,), F32), "k": specs.Array((), I32)}
    spec = EnvironmentSpec(obs_spec, specs.Array((2,), I32), NESTED_REWARD_SPEC,
                           NESTED_REWARD_SPEC)
    signature = transition_signature(spec, EXTRAS_SPEC)
    server, client = reverb_server_factory([
        reverb.Table.queue("batched", 10_000, signature=signature),
        reverb.Table.queue("single", 10_000, signature=signature)])
    batched = BatchedNStepTransitionAdder(client, "batched", num_envs, n_step, 0.9,
                                          extras_spec=EXTRAS_SPEC)
    singles = [NStepTransitionAdder(client, "single", n_step, 0.9, extras_spec=EXTRAS_SPEC)
               for _ in range(num_envs)]
    like = next(ts for _, ts, _ in streams[0] if not ts.first())
    no_extras = {"logits": np.zeros(2, F32), "step": I32(0)}  # A FIRST slot's: never stored.
    batched.add_first(stack([s[0][1] for s in streams], like))
    for adder, stream in zip(singles, streams):
        adder.add_first(stream[0][1])
    for t in range(1, steps + 1):
        triples = [s[t] for s in streams]
        actions = np.stack([np.zeros(2, I32) if a is None else a for a, _, _ in triples])
        extras = tree.map_structure(lambda *x: np.stack(x),
                                    *[e if e else no_extras for _, _, e in triples])
        batched.add(actions, stack([ts for _, ts, _ in triples], like), extras)
        for adder, (action, timestep, step_extras) in zip(singles, triples):
            if timestep.first():
                adder.add_first(timestep)
            else:
                adder.add(action, timestep, step_extras)
    batched.close()
    for adder in singles:
        adder.close()
    got = [item for item, _ in read_items(server, client, "batched")]
    want = [item for item, _ in read_items(server, client, "single")]
    assert len(got) == len(want) == batched.items_written > steps  # About one per step and slot.

    def by_slot(items):  # Slots write in parallel; within a slot the order is fixed.
        return [[x for x in items if x.observation["k"] // 1000 == slot] for slot in range(num_envs)]

    for slot, (got_slot, want_slot) in enumerate(zip(by_slot(got), by_slot(want))):
        assert len(got_slot) == len(want_slot) > 0, slot
        for g, w in zip(got_slot, want_slot):
            assert_nests_equal(g._replace(reward=0, discount=0), w._replace(reward=0, discount=0))
            assert_nests_equal((g.reward, g.discount), (w.reward, w.discount), exact=False)
            # Extras are those of the item's own first action.
            assert g.extras["step"] == g.action[0] == g.observation["k"]
