"""Dense FLOPs of a network's forward pass, read from its graph: to set a learner's measured
speed against what the machine's matmul rate allows.

Only convolutions and matrix products count (2 FLOPs per multiply-add); the
elementwise ops around them (bias, ReLU, casts) are a few percent of a CNN's
work and are left out, as FLOP counts in papers leave them out.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import tensorflow as tf

DENSE_OPS = ("Conv2D", "MatMul", "BatchMatMulV2")


@dataclasses.dataclass(frozen=True)
class ForwardFlops:
    """A forward pass's dense FLOPs, in total and in its first dense op."""

    total: int
    first: int  # The op that reads the input, whose input gradient a learner never computes.

    def sgd_step(self, extra_forwards: int) -> int:
        """FLOPs of one SGD step that trains this pass and makes `extra_forwards` more forward
        passes of the same size without gradients (DQN: online and target values of o_t):
        the forward, its weight gradients (as many FLOPs), its input gradients (as many, less
        the first op's, whose input is data) and the extra passes."""
        return 3 * self.total - self.first + extra_forwards * self.total


def _op_flops(op: tf.Operation) -> int:
    if op.type == "Conv2D":
        kh, kw, cin, _ = op.inputs[1].shape.as_list()
        return 2 * math.prod(op.outputs[0].shape.as_list()) * kh * kw * cin
    a, b = op.inputs[0].shape.as_list(), op.inputs[1].shape.as_list()
    if op.type == "MatMul":
        m, k = reversed(a) if op.get_attr("transpose_a") else a
        n = b[0] if op.get_attr("transpose_b") else b[1]
        return 2 * m * k * n
    out = op.outputs[0].shape.as_list()  # BatchMatMulV2: [..., m, n] from [..., m, k].
    k = a[-2] if op.get_attr("adj_x") else a[-1]
    return 2 * math.prod(out) * k


def forward_flops(fn: Callable[[tf.Tensor], object], input_spec: tf.TensorSpec) -> ForwardFlops:
    """The dense FLOPs of `fn(x)` for x of `input_spec` (fully defined shape, batch included)."""
    if not input_spec.shape.is_fully_defined():
        raise ValueError(f"input_spec needs a fully defined shape, got {input_spec.shape}")
    graph = tf.function(fn).get_concrete_function(input_spec).graph
    counts = [_op_flops(op) for op in graph.get_operations() if op.type in DENSE_OPS]
    if not counts:
        raise ValueError("the function has no convolution or matrix product to count")
    return ForwardFlops(total=sum(counts), first=counts[0])


def matmul_rate(size: int = 2048, seconds: float = 3.0) -> float:
    """This machine's float32 matmul rate in FLOP/s, as TensorFlow reaches it on two square
    `size` x `size` matrices (one warm-up product, then products for about `seconds`)."""
    a = tf.random.normal((size, size))
    b = tf.random.normal((size, size))
    product = tf.function(lambda x, y: tf.reduce_sum(tf.linalg.matmul(x, y)))
    product(a, b).numpy()
    count, start = 0, time.perf_counter()
    while count == 0 or time.perf_counter() - start < seconds:
        product(a, b).numpy()
        count += 1
    return 2 * size ** 3 * count / (time.perf_counter() - start)
