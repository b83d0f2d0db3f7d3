#!/usr/bin/env bash
# kill -9 at random moments (argument: the backend, tf or torch) during
# `retc train`, `retc convert-checkpoint` and `retc forward` on 12ax: after
# each kill, what the command writes is the complete old state or the
# complete new one (every epoch's checkpoint there loads: TF's .index, .meta
# and .data, torch's .pt; RETURNN's learning_rates file parses; the
# converted checkpoint and the forward HDF are absent or equal to an
# uninterrupted run's), and no process of the killed one is left; running
# the command again finishes: training with every epoch trained once and
# saved, the final dev error within the uninterrupted run's bound, nothing
# hidden left beside the checkpoints; conversion and forward with the same
# numbers as the uninterrupted run (the runs after the kills go through the
# suite's warm server, RETC_SERVER, where it has one). (Resuming 12ax is not bitwise the same as
# training straight through, even without a kill: its data generator's and
# the model's random state restart with the process.)
# KILLS (default 2) kills of training, KILLS_OTHER (default 1) each of
# conversion and forward; KILL_SEED the moments' seed. The measurement in
# the README: KILLS=20 KILLS_OTHER=5.
# ctest-variants: tf torch
# ctest-cost: 50
source "$(dirname "$0")/lib.sh"
server=${RETC_SERVER:-}  # the runs after the kills finish through it (tests/CMakeLists.txt sets it)
unset RETC_SERVER  # retc's own process: its PID, process group and children are what is checked
# finish COMMAND...: a run to the end after a kill, through the warm server where the
# suite has one (what it writes is checked; its process is not).
finish() { RETC_SERVER=$server "$@"; }
export TF_CPP_MIN_LOG_LEVEL=3  # the checks import TensorFlow: no start-up chatter
set -m  # each run in its own process group: kill -9 hits retc alone, as an OOM killer's would
backend=${1:-tf}
other=$([ "$backend" = tf ] && echo torch || echo tf)
kills=${KILLS:-2}
kills_other=${KILLS_OTHER:-1}
RANDOM=${KILL_SEED:-25}
epochs=2
# The commands, each WORDS... OUT: `"${train[@]}" WORKDIR` (arrays, not functions: the
# background job's PID is retc's own, which kill -9 hits).
train=("$RETC" train 12ax --backend "$backend" --epochs "$epochs" --progress 0 --workdir)

# check_state WORKDIR: every checkpoint in WORKDIR/model loads (torch: with
# its optimizer state, which RETURNN keeps for the last two epochs) and
# learning_rates parses.
check_state() {
  "$VENV/bin/python" - "$backend" "$@" <<'PY' 2>"$TMP/py.err" || { cat "$TMP/py.err"; fail "the state after a kill"; }
import os, re, sys
backend, work = sys.argv[1], sys.argv[2]
model = os.path.join(work, "model")
names = os.listdir(model) if os.path.isdir(model) else []
epochs = sorted({int(m.group(1)) for m in (re.match(r"network\.(\d+)\.(index|pt)$", f) for f in names) if m})
for e in epochs:
    base = os.path.join(model, "network.%03d" % e)
    if backend == "tf":
        for suffix in (".meta", ".data-00000-of-00001"):
            assert os.path.exists(base + suffix), "epoch %d: %s missing" % (e, base + suffix)
        import tensorflow as tf
        reader = tf.train.load_checkpoint(base)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    else:
        import torch
        torch.load(base + ".pt", map_location="cpu")
        if e >= epochs[-1] - 1:
            torch.load(base + ".opt.pt", map_location="cpu")
if "learning_rates" in names:
    import numpy
    eval(open(os.path.join(model, "learning_rates")).read(),
         {"EpochData": lambda learningRate, error: error, "np": numpy, "numpy": numpy})
print("epochs saved:", epochs)
PY
}

# --- training ------------------------------------------------------------------
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# wait_for PATTERN FILE PID: until FILE has a line matching PATTERN or PID ended.
wait_for() {
  while ! grep -q "$1" "$2" 2>/dev/null && kill -0 "$3" 2>/dev/null; do sleep 0.05; done
}
# Training's kills land after RETURNN's start ("Train data:", 3-4 s into a
# run: TF's or torch's import), uniformly over what the uninterrupted run took
# from there: network construction, the epochs, the checkpoints' saving.
MARK="^Train data:"
"${train[@]}" "$TMP/ref" >"$TMP/ref.log" 2>&1 &
pid=$!
wait_for "$MARK" "$TMP/ref.log" "$pid"
t0=$(now_ms)
wait "$pid" || { tail -n 20 "$TMP/ref.log"; fail "the uninterrupted training"; }
KILL_WINDOW_MS=$(($(now_ms) - t0))
expect_final_error "$TMP/ref.log" 0.5 "12ax on $backend, $epochs epochs, uninterrupted"
bound=$FINAL_ERROR

# One kill at a random moment of a run: kill_at COMMAND...: after MARK (if
# set) is in its log, within KILL_WINDOW_MS; sets KILLED (1 if it was still
# running) and KILL_MS.
kill_at() {
  "$@" >"$TMP/run.log" 2>&1 &
  local pid=$! children
  [ -z "${MARK:-}" ] || wait_for "$MARK" "$TMP/run.log" "$pid"
  local ms=$((RANDOM * RANDOM % KILL_WINDOW_MS))
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  children=$(pgrep -g "$pid" | grep -vx "$pid" || true)
  if kill -KILL "$pid" 2>/dev/null; then
    KILLED=1
    wait "$pid" 2>/dev/null || true
    local c alive="" i
    for i in $(seq 50); do
      alive=$(for c in $children; do kill -0 "$c" 2>/dev/null && echo "$c"; done || true)
      [ -z "$alive" ] && break
      sleep 0.2
    done
    [ -z "$alive" ] || fail "processes of the killed run outlived it: $(ps -o pid=,args= -p "${alive//$'\n'/,}")"
    KILL_MS=$ms
  else
    KILLED=0 KILL_MS=""
    wait "$pid" || { tail -n 20 "$TMP/run.log"; fail "$* failed"; }
  fi
}

n=0 cycles=0 moments=()
while [ "$n" -lt "$kills" ]; do
  work="$TMP/work$cycles"
  while [ "$n" -lt "$kills" ]; do
    kill_at "${train[@]}" "$work"
    [ "$KILLED" = 1 ] || break
    n=$((n + 1))
    moments+=("+${KILL_MS}ms")
    check_state "$work" >/dev/null
  done
  # The last run of the cycle: to the end (a run that ended before its kill is one).
  [ "$KILLED" = 0 ] || finish "${train[@]}" "$work" >"$TMP/run.log" 2>&1 || { tail -n 20 "$TMP/run.log"; fail "the run after the kills"; }
  expect_final_error "$TMP/run.log" 0.5 "12ax on $backend after kills" >/dev/null
  "$VENV/bin/python" - "$work/model" "$epochs" "$backend" <<'PY' || fail "after the kills"
import os, re, sys, numpy
model, epochs, backend = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = eval(open(os.path.join(model, "learning_rates")).read(),
            {"EpochData": lambda learningRate, error: error, "np": numpy, "numpy": numpy})
trained = sorted(e for e, d in data.items() if any(k.startswith("dev") for k in d))
assert trained == list(range(1, epochs + 1)), "epochs with dev scores: %s" % trained
names = os.listdir(model)
suffix = ".index" if backend == "tf" else ".pt"
saved = sorted(int(m.group(1)) for m in (re.fullmatch(r"network\.(\d+)" + re.escape(suffix), f) for f in names) if m)
assert saved == list(range(1, epochs + 1)), "checkpoints: %s" % saved
hidden = [f for f in names if f.startswith(".") or "tmp" in f]
assert not hidden, "left beside the checkpoints: %s" % hidden
PY
  cycles=$((cycles + 1))
done
pass "$backend: $n kills of training (at ${moments[*]} after RETURNN's start; the run from there: ${KILL_WINDOW_MS} ms) in $cycles cycle(s): each left loadable checkpoints and no process; the next runs trained every epoch once, final dev error $FINAL_ERROR (uninterrupted: $bound)"

# --- conversion and forward ------------------------------------------------------
# The converted checkpoint: torch -> tf writes the prefix OUT (OUT.index, ...),
# tf -> torch the file OUT.
if [ "$backend" = torch ]; then
  ckpt="$TMP/ref/model/network.00$epochs.pt" conv_out="$TMP/conv" conv_file="$TMP/conv.index"
else
  ckpt="$TMP/ref/model/network.00$epochs" conv_out="$TMP/conv.pt" conv_file="$TMP/conv.pt"
fi
ref_conv="$TMP/ref/${conv_out##*/}"
# timed_ms COMMAND...: runs it to the end, prints its milliseconds.
timed_ms() {
  local start
  start=$(date +%s%N)
  "$@" >"$TMP/run.log" 2>&1 || { tail -n 20 "$TMP/run.log"; fail "uninterrupted: $*"; }
  echo $((($(date +%s%N) - start) / 1000000))
}
convert=("$RETC" convert-checkpoint 12ax --from "$backend" "$ckpt")
forward=("$RETC" forward 12ax --backend "$backend" --checkpoint "$ckpt" -o)
conv_ms=$(timed_ms "${convert[@]}" "$ref_conv")
fwd_ms=$(timed_ms "${forward[@]}" "$TMP/ref.hdf")

# same_numbers A B KIND: two checkpoints of the other backend (KIND
# checkpoint) or two HDF files (KIND hdf) hold the same values.
same_numbers() {
  "$VENV/bin/python" - "$@" "$other" <<'PY' 2>"$TMP/py.err" || { cat "$TMP/py.err"; fail "$1 differs from the uninterrupted run's"; }
import sys, numpy
a, b, kind, other = sys.argv[1:5]
def load(path):
    if kind == "hdf":
        import h5py
        with h5py.File(path, "r") as f:
            return {k: numpy.asarray(f[k]) for k in f if isinstance(f[k], h5py.Dataset)}
    if other == "torch":
        import torch
        return {k: v.numpy() for k, v in torch.load(path, map_location="cpu")["model"].items()}
    import tensorflow as tf
    r = tf.train.load_checkpoint(path)
    return {k: r.get_tensor(k) for k in r.get_variable_to_shape_map()}
x, y = load(a), load(b)
assert x.keys() == y.keys(), (sorted(x), sorted(y))
for k in x:
    assert numpy.array_equal(x[k], y[k]), k
PY
}

# kill_then_rerun WHAT WINDOW_MS FILE KIND COMMAND... OUT: a kill within
# WINDOW_MS of the run's start (uniformly over the whole run); FILE (what OUT
# makes) is then absent or holds the uninterrupted run's numbers (REF, a
# global), and so does the run after the kill.
kill_then_rerun() {
  local what=$1 window=$2 file=$3 kind=$4
  shift 4
  KILL_WINDOW_MS=$window
  kill_at "$@"
  if [ -n "$KILL_MS" ]; then moments+=("$what:${KILL_MS}ms"); else moments+=("$what:ended-first"); fi
  [ ! -e "$file" ] || same_numbers "${@: -1}" "$REF" "$kind"
  finish "$@" >"$TMP/run.log" 2>&1 || { cat "$TMP/run.log"; fail "$what after a kill"; }
  same_numbers "${@: -1}" "$REF" "$kind"
}
MARK=""
moments=()
for i in $(seq "$kills_other"); do
  REF=$ref_conv kill_then_rerun convert "$conv_ms" "$conv_file" checkpoint "${convert[@]}" "$conv_out"
  REF=$TMP/ref.hdf kill_then_rerun forward "$fwd_ms" "$TMP/fwd.hdf" hdf "${forward[@]}" "$TMP/fwd.hdf"
  hidden=$(ls -A "$TMP" | grep -E '^\.' || true)
  [ -z "$hidden" ] || fail "left beside the outputs: $hidden"
  rm -rf "$TMP/conv"* "$TMP/fwd.hdf"
done
pass "$backend: kills of convert-checkpoint and forward (at ${moments[*]}): each output absent or complete, no process left, the next run's numbers equal the uninterrupted run's"
