"""`compute_dtype="auto"`: bfloat16 only on CPUs that compute it natively."""

from __future__ import annotations

import pytest

from components.networks import precision
from components.networks.atari import AtariTorso


def _cpuinfo(tmp_path, flags: str) -> str:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: fpu sse2 {flags}\n\n"
                    f"processor\t: 1\nflags\t\t: fpu sse2 {flags}\n")
    return str(path)


def test_cpu_flags_reads_the_first_flags_line(tmp_path):
    flags = precision.cpu_flags(_cpuinfo(tmp_path, "avx512f amx_bf16"))
    assert flags == {"fpu", "sse2", "avx512f", "amx_bf16"}
    assert precision.cpu_flags(str(tmp_path / "absent")) == frozenset()


@pytest.mark.parametrize("flags, native", [("avx2 fma", False), ("avx512f", False),
                                           ("avx512f avx512_bf16", True), ("amx_bf16", True)])
def test_auto_is_bfloat16_only_with_native_units(tmp_path, monkeypatch, flags, native):
    path = _cpuinfo(tmp_path, flags)
    read = precision.cpu_flags
    monkeypatch.setattr(precision, "cpu_flags", lambda: read(path))
    precision.native_bfloat16.cache_clear()
    try:
        assert precision.native_bfloat16() is native
        expected = "bfloat16" if native else "float32"
        assert precision.resolve_compute_dtype("auto") == expected
        assert AtariTorso("auto").compute_dtype == expected
        assert precision.resolve_compute_dtype("float32") == "float32"  # Explicit types stay.
        assert precision.resolve_compute_dtype("bfloat16") == "bfloat16"
    finally:
        precision.native_bfloat16.cache_clear()


def test_an_unknown_compute_dtype_fails():
    with pytest.raises(ValueError, match="compute_dtype must be one of .*'float16'"):
        precision.resolve_compute_dtype("float16")
