#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (in build-fuzz/) and runs each for
# SECONDS (default 30), both at once, seeded with the IR files of tests/;
# prints how many inputs each ran. A finding fails the run and leaves the
# input in build-fuzz/.
#   tools/fuzz.sh [SECONDS | --build-only]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
build_only=false
[ "$seconds" = --build-only ] && build_only=true
build=${RETC_FUZZ_BUILD:-$(pwd)/build-fuzz}
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: installing clang and libFuzzer (Debian: clang, libclang-rt-14-dev)"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi
python=$("${RETC_PYTHON:-python3}" -c 'import sys; print(sys.executable)')
if [ ! -f "$build/CMakeCache.txt" ]; then
  CXX=clang++ cmake -S . -B "$build" -DRETC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$python" >/dev/null
fi
cmake --build "$build" -j"$(nproc)" 2>&1 | grep -E "error|warning: " || true
"$build_only" && exit 0
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/parser" "$corpus/writer"
# Seeds: the pass tests and the small goldens (the 250 KB conformer-12x512.ir
# would make each mutation of it slow and cut the runs tenfold).
cp tests/passes/*.ir "$corpus/parser/"
find tests/golden -name '*.ir' -size -16k -exec cp {} "$corpus/parser/" \;
# Both at once (one core each): a finding in either fails the run.
fuzzers=(parser_fuzz py_writer_fuzz)
pids=()
for f in "${fuzzers[@]}"; do
  dir=$corpus/writer
  [ "$f" = parser_fuzz ] && dir=$corpus/parser
  (cd "$build" && exec "./$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "$dir" >"$build/$f.log" 2>&1) &
  pids+=($!)
done
failed=0
for i in "${!fuzzers[@]}"; do
  f=${fuzzers[$i]}
  if ! wait "${pids[$i]}"; then
    tail -n 40 "$build/$f.log"
    echo "fuzz: $f found a failure (input saved in $build)" >&2
    failed=1
    continue
  fi
  runs=$(grep -oE '^Done [0-9]+ runs in [0-9]+ second' "$build/$f.log" | tail -1)
  echo "fuzz: $f: ${runs:-?}s without a finding"
done
exit "$failed"
