#!/usr/bin/env bash
# Installs everything retc needs and builds it. Safe to run again: it only
# installs what is missing and rebuilds what changed.
#
#   tools/setup.sh            # Debian packages, Python venv, build in ./build
#   tools/setup.sh --no-build # Debian packages and the venv only (.ci/run)
#   tools/setup.sh --gpu      # the GPU venv instead (requirements-gpu.txt: TensorFlow
#                             # with CUDA, nvcc for RETURNN's torch native ops), in a
#                             # venv of its own; then run retc with RETC_VENV set to it
#
# Environment:
#   RETC_VENV     the Python venv (default: $XDG_CACHE_HOME/retc/venv or ~/.cache/retc/venv;
#                 with --gpu .../retc/venv-gpu)
#   RETC_PYTHON   the Python 3 interpreter to embed and to make the venv from
#                 (default: python3; it must have a shared libpython and headers)
#   RETC_BUILD    the build directory (default: ./build)
#   RETC_CORPUS_DIR  where corpora live (default: $XDG_CACHE_HOME/retc/corpora or
#                 ~/.cache/retc/corpora); the digits corpus is made there once
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

say() { printf 'setup: %s\n' "$*"; }

build_too=1
requirements=requirements.txt
venv_name=venv
for arg in "$@"; do
  case "$arg" in
    --no-build) build_too=0 ;;
    --gpu) requirements=requirements-gpu.txt venv_name=venv-gpu ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "setup: error: unknown argument '$arg' (see tools/setup.sh --help)" >&2; exit 2 ;;
  esac
done

# --- Debian packages ----------------------------------------------------------
# ccache: CMakeLists.txt compiles through it (its cache beside the venv), so a
# build of a tree that was built before, in any folder, takes 50 s, not 185.
pkgs=(g++ cmake make ccache nlohmann-json3-dev libabsl-dev catch2 pybind11-dev graphviz espeak-ng)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
python=${RETC_PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  missing+=(python3 python3-dev python3-venv)
  python=/usr/bin/python3
fi
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The interpreter to embed: needs Python.h and a shared libpython.
python=$("$python" -c 'import sys; print(sys.executable)')
if ! "$python" - <<'PY'
import os, sys, sysconfig
inc = sysconfig.get_paths()["include"]
ok = os.path.exists(os.path.join(inc, "Python.h")) and sysconfig.get_config_var("Py_ENABLE_SHARED")
sys.exit(0 if ok else 1)
PY
then
  if [ "$python" = /usr/bin/python3 ]; then
    say "installing python3-dev python3-venv"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-dev python3-venv >/dev/null
  else
    echo "setup: error: $python has no headers or no shared libpython; set RETC_PYTHON" >&2
    exit 1
  fi
fi

# --- Python venv with RETURNN and TensorFlow ---------------------------------
venv=${RETC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/retc/$venv_name}
stamp="$venv/.retc-requirements"
if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  say "removing broken venv $venv"
  rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  say "creating venv $venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
fi
files=(requirements.txt)  # the GPU file's constraints (-c) are the CPU file's pins
[ "$requirements" = requirements.txt ] || files+=("$requirements")
want=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing Python packages ($requirements) into $venv; the first time several GB (torch's CUDA libraries), minutes"
  # pip's own lines, one per package it fetches or installs, as it goes.
  "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off -r "$requirements" 2>&1 |
    { grep --line-buffered -E '^(Collecting|Installing|Successfully|ERROR|error)' || true; } |
    sed -u 's/^/setup: pip: /'
  echo "$want" > "$stamp"
fi
# RETURNN's TF native ops (the fused LSTM) build CUDA kernels whenever nvcc is on
# PATH, also for tensorflow-cpu, and then fail to compile. runtime/retc_venv_hook.py
# makes them CPU-only where TensorFlow has no CUDA, and changes nothing else (no
# DISABLE_CUDA: the torch engine's native ops must find CUDA on a GPU machine). The
# .pth line imports it at every start of the venv's Python: retc's embedded runtime,
# `python -m returnn` on an emitted config, torchrun's workers.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -f "$site/retc_disable_cuda.pth"  # what earlier set-ups wrote: DISABLE_CUDA for everything
cp runtime/retc_venv_hook.py "$site/retc_venv_hook.py"
echo 'import retc_venv_hook' > "$site/retc_venv_hook.pth"
# The hook loads it before torch: MKL's kernels by the CPU's features, not its vendor
# (runtime/torch/mkl_cpu.c). Built beside the hook, into place by a rename.
cc -O2 -shared -fPIC -o "$site/retc_mkl_cpu.so.tmp" runtime/torch/mkl_cpu.c
mv "$site/retc_mkl_cpu.so.tmp" "$site/retc_mkl_cpu.so"
# The TF configs' weight norm loads it from beside the hook: two CPU ops for its
# passes over a weight (runtime/tf/weight_norm_ops.cc). Built against the venv's
# TensorFlow when its source or that TensorFlow (its library's size and time) changed.
ops="$site/retc_tf_ops.so"
ops_want="$(sha256sum < runtime/tf/weight_norm_ops.cc) $(stat -c '%s %Y' "$site/tensorflow/libtensorflow_framework.so.2")"
if [ ! -f "$ops" ] || [ "$(cat "$ops.stamp" 2>/dev/null)" != "$ops_want" ]; then
  say "building retc's TensorFlow ops (runtime/tf/weight_norm_ops.cc, about 10 s)"
  # Its flags are the last line; TensorFlow's start-up log shows only if it fails.
  flags=$("$venv/bin/python" -c 'import tensorflow as tf
print(" ".join(tf.sysconfig.get_compile_flags() + tf.sysconfig.get_link_flags()))' 2>&1) ||
    { echo "$flags" >&2; echo "setup: error: the venv's TensorFlow did not import (above)" >&2; exit 1; }
  read -r -a tf_flags <<< "${flags##*$'\n'}"
  # TensorFlow's headers as system headers: their warnings are not this file's.
  g++ -O3 -fopenmp-simd -shared -fPIC -Wall -Wextra "${tf_flags[@]/#-I/-isystem}" \
    -o "$ops.tmp" runtime/tf/weight_norm_ops.cc
  mv "$ops.tmp" "$ops"
  echo "$ops_want" > "$ops.stamp"
fi

if [ "$venv_name" = venv-gpu ] && [ -z "${RETC_VENV:-}" ]; then
  say "the GPU venv is $venv: run retc with RETC_VENV=$venv"
fi
[ "$build_too" = 1 ] || { say "packages and venv ready (--no-build)"; exit 0; }

# --- build ---------------------------------------------------------------------
build=${RETC_BUILD:-$root/build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DPython3_EXECUTABLE="$python" >/dev/null
fi
say "building in $build (about 4 minutes on 2 cores the first time)"
# Each target as it completes, and any error or warning.
cmake --build "$build" -j"$(nproc)" 2>&1 |
  grep --line-buffered -E "error|warning|Error|Built target" | sed -u 's/^/setup: build: /' || true
test -x "$build/retc" || { echo "setup: error: build failed" >&2; cmake --build "$build" -j1; exit 1; }
# --- the digits corpus (digits-ctc's speech data) --------------------------------
corpus=${RETC_CORPUS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/retc/corpora}/digits
if [ ! -f "$corpus/dev.zip" ] || [ ! -f "$corpus/train.zip" ] || [ ! -f "$corpus/digits.vocab" ]; then
  say "making the spoken-digits corpus in $corpus (espeak-ng; about a minute)"
  "$venv/bin/python" tools/make_digits.py "$corpus"
fi
say "ready: $build/retc"
