#!/usr/bin/env bash
# retc on a GPU machine, in one short run (under 10 minutes on one GPU): trains
# 12ax and conformer-ctc for one epoch on each target on the GPU, conformer-ctc
# with mixed precision on torch (bfloat16, float16), 12ax in 2 processes when
# there are two GPUs, `retc search` on the trained conformer-ctc, and the
# benchmark's 12-block Conformer training step on the GPU, retc against rf's
# ConformerEncoder on both targets (tools/bench.py --gpu). Prints one markdown
# table (for benchmarks/RESULTS.md); each run's output is kept under
# $RETC_GPU_CHECK_DIR (default: a new temp directory, named at the end).
#
#   tools/gpu_check.sh    # build/retc and a venv must exist (tools/setup.sh [--gpu]);
#                         # the GPU venv is taken where there is one
#
# On a machine without an NVIDIA GPU it stops at once: "gpu_check: no GPU ...",
# exit 1. The tf rows need a venv with a CUDA build of TensorFlow (tools/setup.sh
# --gpu); with tensorflow-cpu they say so. Exit 0 when every run that ran passed.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n 2,16p "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
# The GPU venv (tools/setup.sh --gpu) where there is one, else the CPU venv.
cache=${XDG_CACHE_HOME:-$HOME/.cache}/retc
venv=${RETC_VENV:-$cache/venv}
[ -n "${RETC_VENV:-}" ] || [ ! -x "$cache/venv-gpu/bin/python" ] || venv=$cache/venv-gpu
export RETC_VENV=$venv
py="$venv/bin/python"
retc=${RETC:-build/retc}

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
if [ "$gpus" -eq 0 ]; then
  echo "gpu_check: no GPU on this machine (nvidia-smi lists none): nothing to check" >&2
  exit 1
fi
[ -x "$retc" ] || { echo "gpu_check: error: no $retc (run tools/setup.sh first)" >&2; exit 1; }
[ -x "$py" ] || { echo "gpu_check: error: no venv at $venv (run tools/setup.sh first)" >&2; exit 1; }
torch_gpus=$("$py" -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)' 2>/dev/null || echo 0)
tf_cuda=$("$py" -c 'import tensorflow as tf; print(int(tf.test.is_built_with_cuda() and bool(tf.config.list_physical_devices("GPU"))))' 2>/dev/null | tail -n 1)
out=${RETC_GPU_CHECK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/retc-gpu-check.XXXXXX")}
mkdir -p "$out"
start_all=$SECONDS
failed=0
rows=()

# run NAME FIGURE_PATTERN COMMAND...: runs it with its output in $out/NAME.log and
# adds a table row: ok or FAILED, seconds, and the last line matching the pattern.
run() {
  local name=$1 pattern=$2 t0=$SECONDS rc=0 figure
  shift 2
  echo "gpu_check: $name: $*" >&2
  "$@" >"$out/$name.log" 2>&1 || rc=$?
  figure=$(grep -E "$pattern" "$out/$name.log" | tail -n 1)
  if [ "$rc" -eq 0 ]; then
    rows+=("| $name | ok | $((SECONDS - t0)) s | ${figure:-} |")
  else
    failed=1
    rows+=("| $name | FAILED (exit $rc; $out/$name.log) | $((SECONDS - t0)) s | $(tail -n 1 "$out/$name.log") |")
  fi
}
skip() { rows+=("| $1 | not run: $2 | | |"); }

final='^final dev (frame|label) error'
run "torch: 12ax, 1 epoch" "$final" "$retc" train 12ax --backend torch --device gpu --epochs 1 --workdir "$out/12ax.torch"
run "torch: conformer-ctc, 1 epoch" "$final" "$retc" train conformer-ctc --backend torch --device gpu --epochs 1 --workdir "$out/cc.torch"
run "torch: conformer-ctc, 1 epoch, --amp bfloat16" "$final" "$retc" train conformer-ctc --backend torch --device gpu --amp bfloat16 --epochs 1 --workdir "$out/cc.bf16"
run "torch: conformer-ctc, 1 epoch, --amp float16" "$final" "$retc" train conformer-ctc --backend torch --device gpu --amp float16 --epochs 1 --workdir "$out/cc.fp16"
run "torch: retc search conformer-ctc (epoch 1)" '^dev label error' "$retc" search conformer-ctc --backend torch --device gpu --workdir "$out/cc.torch" -o "$out/cc.hyps.py"
if [ "$torch_gpus" -ge 2 ]; then
  run "torch: 12ax, 1 epoch, --nproc 2 (nccl)" "$final" "$retc" train 12ax --backend torch --device gpu --nproc 2 --epochs 1 --workdir "$out/12ax.nproc2"
else
  skip "torch: 12ax, --nproc 2" "$torch_gpus GPU(s) visible to torch"
fi
if [ "$tf_cuda" = 1 ]; then
  run "tf: 12ax, 1 epoch" "$final" "$retc" train 12ax --device gpu --epochs 1 --workdir "$out/12ax.tf"
  run "tf: conformer-ctc, 1 epoch" "$final" "$retc" train conformer-ctc --device gpu --epochs 1 --workdir "$out/cc.tf"
else
  skip "tf: 12ax and conformer-ctc" "the venv's TensorFlow is not a CUDA build (tools/setup.sh --gpu)"
fi
if [ -x build/retc_bench_compile ] || cmake --build build --target retc_bench_compile -j"$(nproc)" >"$out/bench-build.log" 2>&1; then
  t0=$SECONDS
  if "$py" tools/bench.py --build "$(pwd)/build" --gpu --steps 20 --warmup 3 --large-steps 10 >"$out/bench.rows" 2>"$out/bench.log"; then
    while IFS= read -r line; do rows+=("$line"); done <"$out/bench.rows"
  else
    failed=1
    rows+=("| 12-block Conformer step, both targets | FAILED ($out/bench.log) | $((SECONDS - t0)) s | $(tail -n 1 "$out/bench.log") |")
  fi
else
  failed=1
  rows+=("| 12-block Conformer step | FAILED: cannot build retc_bench_compile ($out/bench-build.log) | | |")
fi

gpu_names=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd ';' -)
echo
echo "## GPU check ($(date -u '+%Y-%m-%d %H:%M UTC'), $((SECONDS - start_all)) s in all)"
echo
echo "- GPUs: $gpus ($gpu_names); torch sees $torch_gpus, $("$py" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null)"
echo "- TensorFlow: $("$py" -c 'import tensorflow as tf; print(tf.__version__, "CUDA build" if tf.test.is_built_with_cuda() else "CPU only")' 2>/dev/null | tail -n 1)"
echo "- outputs: $out"
echo
echo "| check | result | time | figure |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$failed"
