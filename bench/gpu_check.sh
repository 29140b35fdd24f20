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
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-gpu}
OUT=${OUT:-bench/results/gpu}
PYTHON=${PYTHON:-python3}
start=$(date +%s)

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    || { echo "gpu_check: nvidia-smi failed: no NVIDIA GPU here" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
fi
# The project with its pinned stack, then TensorFlow's GPU build in place of
# tensorflow-cpu (same version: dm-reverb 0.14's native code needs 2.15.x).
"$VENV/bin/pip" install -q -e .
"$VENV/bin/pip" uninstall -q -y tensorflow-cpu || true
"$VENV/bin/pip" install -q "tensorflow[and-cuda]==2.15.1"
echo "gpu_check: installed in $(( $(date +%s) - start )) s"

"$VENV/bin/python" - <<'PY'
import reverb, tensorflow as tf  # reverb first: a TensorFlow mismatch fails here
gpus = tf.config.list_physical_devices("GPU")
print("gpu_check: tensorflow", tf.__version__, "reverb", reverb.__version__, "GPUs:", gpus)
if not gpus:
    raise SystemExit("gpu_check: TensorFlow sees no GPU (CUDA libraries or driver missing)")
PY

mkdir -p "$OUT"
timeout 240 "$VENV/bin/python" bench/learner.py --batch_sizes=32,256 --window_s=15 \
    --out="$OUT/learner.json"
timeout 240 "$VENV/bin/python" bench/acting.py --ks=8,16,32 --window_s=4 \
    --out="$OUT/acting.json"
echo "gpu_check: done in $(( $(date +%s) - start )) s; results in $OUT/"
