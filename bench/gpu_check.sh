#!/usr/bin/env bash
# The learner and acting benchmarks on an NVIDIA GPU, in about 8 minutes.
#
# Run from the repository root on a machine with an NVIDIA driver:
#     bash bench/gpu_check.sh
# It makes .venv-gpu with TensorFlow 2.15.1 and its CUDA libraries
# (tensorflow[and-cuda], pip wheels: no system CUDA needed), checks that
# TensorFlow sees the GPU and that dm-reverb's native code loads, then runs
#   bench/learner.py  (DQN learner on the Atari network, batch 32 and 256,
#                      fed from Reverb vs from memory)
#   bench/acting.py   (Pong, K = 8, 16, 32, python and vector backends)
# and writes their JSON under bench/results/gpu/. Exits non-zero when no GPU is seen.
#
# Needs Python 3.9-3.11 (TensorFlow 2.15 and dm-reverb 0.14 have wheels for
# those alone; PYTHON=python3.11 picks one) and either PyPI or, on a machine
# without network, WHEELHOUSE=dir holding every wheel (made elsewhere with
# `pip download -d dir -e . "tensorflow[and-cuda]==2.15.1"`, about 2.5 GB).
# It stops within seconds, saying why, when it has neither.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-gpu}
OUT=${OUT:-bench/results/gpu}
WHEELHOUSE=${WHEELHOUSE:-}
start=$(date +%s)

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    || { echo "gpu_check: nvidia-smi failed: no NVIDIA GPU here" >&2; exit 1; }

if [ -z "${PYTHON:-}" ]; then  # The first Python that TensorFlow 2.15 has wheels for.
    for candidate in python3.11 python3.10 python3.9 python3; do
        if command -v "$candidate" >/dev/null \
            && "$candidate" -c 'import sys; sys.exit(not (3, 9) <= sys.version_info[:2] <= (3, 11))'; then
            PYTHON=$candidate; break
        fi
    done
fi
if [ -z "${PYTHON:-}" ]; then
    echo "gpu_check: no Python 3.9-3.11 here (python3 is $(python3 --version 2>&1));" \
         "TensorFlow 2.15 and dm-reverb 0.14 have no wheels for it; set PYTHON=" >&2
    exit 2
fi
PIP_SOURCE=()
if [ -n "$WHEELHOUSE" ]; then
    PIP_SOURCE=(--no-index --find-links "$WHEELHOUSE")
elif ! "$PYTHON" -c 'import urllib.request; urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=10)' 2>/dev/null; then
    echo "gpu_check: PyPI is not reachable from here and no WHEELHOUSE was given" >&2
    exit 3
fi

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q "${PIP_SOURCE[@]}" --upgrade pip setuptools wheel
fi
# The project with its pinned stack, then TensorFlow's GPU build in place of
# tensorflow-cpu (same version: dm-reverb 0.14's native code needs 2.15.x).
"$VENV/bin/pip" install -q "${PIP_SOURCE[@]}" -e .
# Both wheels fill the same tensorflow/ folder: removing tensorflow-cpu (which
# `-e .` brings back on every run) deletes files of tensorflow too, so
# tensorflow is then reinstalled whole, not just found "already satisfied".
"$VENV/bin/pip" uninstall -q -y tensorflow-cpu || true
"$VENV/bin/pip" install -q "${PIP_SOURCE[@]}" --force-reinstall --no-deps "tensorflow==2.15.1"
"$VENV/bin/pip" install -q "${PIP_SOURCE[@]}" "tensorflow[and-cuda]==2.15.1"
echo "gpu_check: installed in $(( $(date +%s) - start )) s"

"$VENV/bin/python" - <<'PY'
import importlib.metadata
import reverb, tensorflow as tf  # reverb first: a TensorFlow mismatch fails here
gpus = tf.config.list_physical_devices("GPU")
print("gpu_check: tensorflow", tf.__version__, "dm-reverb", importlib.metadata.version("dm-reverb"),
      "GPUs:", gpus)
if not gpus:
    raise SystemExit("gpu_check: TensorFlow sees no GPU (CUDA libraries or driver missing)")
PY

mkdir -p "$OUT"
timeout 240 "$VENV/bin/python" bench/learner.py --batch_sizes=32,256 --window_s=15 \
    --out="$OUT/learner.json"
timeout 240 "$VENV/bin/python" bench/acting.py --ks=8,16,32 --window_s=4 \
    --out="$OUT/acting.json"
echo "gpu_check: done in $(( $(date +%s) - start )) s; results in $OUT/"
