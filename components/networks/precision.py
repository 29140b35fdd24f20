"""The float type of the Nature CNN's convolutions: bfloat16 where the CPU computes it natively.

oneDNN runs bfloat16 convolutions on AVX-512 BF16 and AMX units at about twice its
float32 rate (a DQN learner step at batch 32: 46 against 38 steps/s, bench/learner.py);
without those units it emulates them, slower than float32. `"auto"` picks bfloat16 only
where they exist and no GPU is visible (bfloat16 on GPUs is unmeasured here).
"""

from __future__ import annotations

import functools

import tensorflow as tf

COMPUTE_DTYPES = ("float32", "bfloat16", "auto")
NATIVE_BFLOAT16_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo's names.


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's feature flags (empty where /proc/cpuinfo cannot be read)."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.cache
def native_bfloat16() -> bool:
    """True where the CPU has AVX-512 BF16 or AMX and TensorFlow sees no GPU."""
    if tf.config.list_physical_devices("GPU"):
        return False
    return bool(cpu_flags() & set(NATIVE_BFLOAT16_FLAGS))


def resolve_compute_dtype(compute_dtype: str) -> str:
    """`compute_dtype` itself, or for `"auto"` bfloat16 where native and float32 elsewhere."""
    if compute_dtype not in COMPUTE_DTYPES:
        raise ValueError(f"compute_dtype must be one of {COMPUTE_DTYPES}, got {compute_dtype!r}")
    if compute_dtype == "auto":
        return "bfloat16" if native_bfloat16() else "float32"
    return compute_dtype
