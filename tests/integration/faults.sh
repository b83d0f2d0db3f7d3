#!/usr/bin/env bash
# Faults at run time (argument: the backend, tf or torch), each one line on
# stderr that names the cause, the right exit code, and nothing new left in
# the output directory or $TMPDIR (but the traceback logs retc-*.log):
# eval data with labels out of range, NaN in the features (eval and training
# name the step and the sequence whose input holds it), a checkpoint with a
# param the model lacks (an error unless --allow-extra-params), a truncated
# checkpoint, `forward -o DIR`, forward on data without targets; a model
# 400 residual steps deep checks (TF; extern data marked as an output and data
# without a feature dim: the sweep's mask and nofeat situations); a
# checkpoint converted to the other backend
# (TF: a prefix without an epoch) evaluates there to the same error. On
# slow-12ax: a second `retc train` on a busy workdir is refused; SIGTERM stops
# a training as Ctrl-C does (exit 143, epoch 1 kept); after kill -9 the next
# run takes the lock over with a note, and no data-loader worker outlives the
# killed one; a workdir whose path has a '$' is a usage error. A full disk
# (tmpfs) at an epoch's save, in a conversion and in forward: one line naming
# the file, nothing half-written, and training resumes once there is space.
# ctest-variants: tf torch
# ctest-cost: 110
source "$(dirname "$0")/lib.sh"
set -m  # background jobs keep the default signal handling
backend=${1:-tf}
other=$([ "$backend" = tf ] && echo torch || echo tf)
work="$TMP/work"
out="$TMP/outdir"
# A $TMPDIR of its own, to see what is left there; RETURNN's caches of compiled
# native code (TMPDIR/USER: a minute to compile afresh) are the shared ones.
user=$(id -un)
mkdir -p "$out" "$TMP/tmpdir" "${TMPDIR:-/tmp}/$user"
ln -s "${TMPDIR:-/tmp}/$user" "$TMP/tmpdir/$user"
export TMPDIR="$TMP/tmpdir"

# no_leftovers WHAT: $out holds only what the test put there (KEEP); $TMPDIR
# only the traceback logs and what it held after the first training (caches:
# RETURNN's compiled native ops, torch's inductor).
no_leftovers() {
  local extra
  extra=$(ls -A "$out" | grep -vxF -f <(printf '%s\n' "${KEEP[@]}") || true)
  [ -z "$extra" ] || fail "$1 left in $out: $extra"
  extra=$(ls -A "$TMPDIR" | grep -vxF -f <(printf '%s\n' "${CACHES[@]}") | grep -Ev '^retc-[a-z]+-[A-Za-z0-9_.-]+\.log$' || true)
  [ -z "$extra" ] || fail "$1 left in \$TMPDIR: $extra"
}
KEEP=(none)
CACHES=(none)

"$RETC" train 12ax --backend "$backend" --epochs 1 --workdir "$work" >"$TMP/log" 2>"$TMP/err" ||
  { tail -n 20 "$TMP/log" "$TMP/err"; fail "retc train 12ax"; }
expect_final_error "$TMP/log" 0.5 "12ax on $backend, 1 epoch"
trained=$FINAL_ERROR
if [ "$backend" = tf ]; then  # the suite's RETC_TF_GRAPH_OPTIMIZER=off reached RETURNN's session
  grep -q "^Setup TF session with options .*'disable_meta_optimizer': True" "$TMP/log" ||
    fail "RETC_TF_GRAPH_OPTIMIZER=off: not in RETURNN's session options"
  # The suite's OMP_NUM_THREADS=1: one thread in each of TF's pools (RETURNN makes it 2).
  grep -q "^Setup TF inter and intra global thread pools, num_threads 1, .*'intra_op_parallelism_threads': 1, 'inter_op_parallelism_threads': 1}" "$TMP/log" ||
    fail "OMP_NUM_THREADS=1: TF's thread pools not of one thread: $(grep '^Setup TF inter' "$TMP/log")"
fi
mapfile -t CACHES < <(ls -A "$TMPDIR"; echo none; echo "torchinductor_$user")  # torch's compile cache
if [ "$backend" = torch ]; then ckpt="$work/model/network.001.pt"; else ckpt="$work/model/network.001"; fi

# 12ax data as HDF (RETURNN's HDFDataset), with one fault: KIND labels (a label
# 7 of 2 classes), nan (a NaN feature in seq-2).
"$VENV/bin/python" - "$out" <<'PY'
import os, sys, numpy
from returnn.datasets.hdf import SimpleHDFWriter
for kind in ("labels", "nan", "noclasses"):
    rng = numpy.random.RandomState(0)
    w = SimpleHDFWriter(os.path.join(sys.argv[1], kind + ".hdf"), dim=9, ndim=2,
                        extra_type=None if kind == "noclasses" else {"classes": (2, 1, "int32")})
    for i in range(4):
        x = rng.normal(size=(1, 5 + i, 9)).astype("float32")
        y = rng.randint(0, 2, size=(1, 5 + i)).astype("int32")
        if kind == "labels": y[0, 2] = 7
        if kind == "nan" and i == 2: x[0, 1, 3] = numpy.nan
        w.insert_batch(x, numpy.array([5 + i]), ["seq-%d" % i],
                       extra=None if kind == "noclasses" else {"classes": y})
    w.close()
PY
KEEP=(labels.hdf nan.hdf noclasses.hdf)
no_leftovers "writing the HDF files"

expect_error 1 "^retc: error: RETURNN failed: (InvalidArgumentError: Received a label value of 7 which is outside the valid range of \[0, 2\)|IndexError: Target 7 is out of bounds)" -- \
  "$RETC" eval 12ax --backend "$backend" --checkpoint "$ckpt" --data "$out/labels.hdf"
no_leftovers "eval on labels out of range"
pass "$backend: labels out of range: $(head -c 150 "$TMP/err")"

expect_error 1 "^retc: error: RETURNN failed: (the loss is NaN or inf|ce is nan) in step 0( of ep 1 nan eval)?: NaN or inf in the input of seq-2 \(--allow-nonfinite goes on\)" -- \
  "$RETC" eval 12ax --backend "$backend" --checkpoint "$ckpt" --data "$out/nan.hdf"
no_leftovers "eval on NaN features"
pass "$backend: NaN in the features: $(head -c 200 "$TMP/err")"
# Training on them (the runtime's train on 12ax's config with the HDF file as
# its training data: the CLI trains the model's own data): the same line.
"$RETC" compile 12ax --backend "$backend" -o "$TMP/nan.config"
printf 'train = {"class": "HDFDataset", "files": [%s]}\nmodel = %s\n' "'$out/nan.hdf'" "'$TMP/nan/network'" >>"$TMP/nan.config"
mkdir "$TMP/nan"
# (A file, not stdin: torch's data-loader workers import the main script.)
cat >"$TMP/nan_train.py" <<'PY'
import sys
if __name__ == "__main__":  # not in the workers, which import this file
    sys.path.insert(0, sys.argv[1])
    import retc_runtime
    try:
        retc_runtime.train(sys.argv[2], 0)
    except BaseException as exc:  # noqa: BLE001: the line is the test
        open(sys.argv[3], "w").write(retc_runtime.error_line(exc))
PY
"$VENV/bin/python" "$TMP/nan_train.py" "$RETC_SOURCE_DIR/runtime" "$TMP/nan.config" "$TMP/nan.line" >/dev/null 2>&1 || true
line=$(cat "$TMP/nan.line" 2>/dev/null || true)
[ "$line" = "the loss is NaN or inf in step 0: NaN or inf in the input of seq-2 (--allow-nonfinite goes on)" ] ||
  fail "training on NaN features: '$line'"
pass "$backend: training on NaN features: $line"
"$RETC" eval 12ax --backend "$backend" --checkpoint "$ckpt" --data "$out/nan.hdf" --allow-nonfinite >"$TMP/eval" 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "eval --allow-nonfinite"; }
grep -Ei "^nan_[a-z_]*: -?nan$" "$TMP/eval" >/dev/null || fail "eval --allow-nonfinite reports no NaN: $(tail -n 3 "$TMP/eval")"
pass "$backend: --allow-nonfinite: eval goes on and reports $(grep -Ei '^nan_[a-z_]*: -?nan$' "$TMP/eval" | head -1)"

# A checkpoint of a bigger model: one param more.
"$VENV/bin/python" - "$backend" "$ckpt" "$out/bigger" 2>"$TMP/py.err" <<'PY' || { cat "$TMP/py.err"; fail "a bigger checkpoint"; }
import shutil, sys
backend, ckpt, bigger = sys.argv[1:]
if backend == "torch":
    import torch
    c = torch.load(ckpt, weights_only=False)
    c["model"]["other.weight"] = torch.zeros(3)
    torch.save(c, bigger + ".pt")
else:
    import tensorflow as tf
    r = tf.train.load_checkpoint(ckpt)
    with tf.Graph().as_default():
        vs = [tf.compat.v1.Variable(r.get_tensor(k), name=k) for k in r.get_variable_to_shape_map()]
        vs.append(tf.compat.v1.Variable([0.0, 0.0, 0.0], name="other/weight/param"))
        saver = tf.compat.v1.train.Saver(var_list=vs)
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            saver.save(s, bigger + ".001", write_state=False)
PY
if [ "$backend" = torch ]; then bigger="$out/bigger.pt"; KEEP+=(bigger.pt); else
  bigger="$out/bigger.001"; KEEP+=(bigger.001.index bigger.001.data-00000-of-00001 bigger.001.meta); fi
expect_error 1 "has 1 param the model lacks \(other[./]weight(/param)?\): a checkpoint of another model\? --allow-extra-params uses it anyway" -- \
  "$RETC" eval 12ax --backend "$backend" --checkpoint "$bigger"
"$RETC" eval 12ax --backend "$backend" --checkpoint "$bigger" --allow-extra-params >"$TMP/eval" 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "eval --allow-extra-params"; }
[ "$(tail -n 1 "$TMP/eval")" = "dev frame error: $trained" ] || fail "eval --allow-extra-params: $(tail -n 1 "$TMP/eval")"
pass "$backend: a checkpoint with an extra param: refused, and used with --allow-extra-params"

# A truncated checkpoint (a copy).
if [ "$backend" = torch ]; then
  cp "$ckpt" "$out/short.pt"; truncate -s 300 "$out/short.pt"; short="$out/short.pt"; KEEP+=(short.pt)
else
  for f in "$ckpt".*; do cp "$f" "$out/short.001.${f##*.}"; done
  truncate -s 100 "$out/short.001.data-00000-of-00001"; short="$out/short.001"
  KEEP+=(short.001.index short.001.data-00000-of-00001 short.001.meta)
fi
expect_error 1 "short(\.pt|\.001)" -- "$RETC" eval 12ax --backend "$backend" --checkpoint "$short"
pass "$backend: a truncated checkpoint: $(head -c 200 "$TMP/err")"
no_leftovers "eval on a truncated checkpoint"

expect_error 1 "^retc: error: cannot write '$out': it is a directory" -- \
  "$RETC" forward 12ax --backend "$backend" --checkpoint "$ckpt" -o "$out"
"$RETC" forward 12ax --backend "$backend" --checkpoint "$ckpt" -o "$out/fwd.hdf" >"$TMP/fwd" 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "forward"; }
KEEP+=(fwd.hdf)
no_leftovers "forward"
# Forward reads no targets: data without them runs.
"$RETC" forward 12ax --backend "$backend" --checkpoint "$ckpt" --data "$out/noclasses.hdf" -o "$out/fwd2.hdf" \
  >"$TMP/fwd" 2>"$TMP/err" || { cat "$TMP/err"; fail "forward on data without classes"; }
KEEP+=(fwd2.hdf)
pass "$backend: forward -o DIR refused before the job; forward writes only its output"

# Converted to the other backend (TF: at a prefix without an epoch).
if [ "$backend" = torch ]; then conv="$out/conv"; KEEP+=(conv.index conv.data-00000-of-00001 conv.meta); else
  conv="$out/conv.pt"; KEEP+=(conv.pt); fi
"$RETC" convert-checkpoint 12ax --from "$backend" "$ckpt" "$conv" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "convert"; }
no_leftovers "convert-checkpoint"
"$RETC" eval 12ax --backend "$other" --checkpoint "$conv" >"$TMP/eval" 2>"$TMP/err" || { cat "$TMP/err"; fail "eval of the converted checkpoint"; }
"$VENV/bin/python" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2].rsplit(' ', 1)[1]); assert abs(a - b) < 1e-4, (a, b)" \
  "$trained" "$(tail -n 1 "$TMP/eval")" || fail "the converted checkpoint: $(tail -n 1 "$TMP/eval"), trained $trained"
pass "$backend: converted to $other at $(basename "$conv"): $(tail -n 1 "$TMP/eval")"

expect_error 2 "--workdir '$TMP/w\\\$HOME': RETURNN cannot write its log" -- \
  "$RETC" train 12ax --backend "$backend" --workdir "$TMP/w\$HOME"
[ ! -e "$TMP/w\$HOME" ] || fail "a workdir with a '$' was made"
pass "$backend: a workdir with a '\$': $(head -c 120 "$TMP/err")"

# A model of 400 residual steps in a chain (RETURNN's TF network constructs
# layers recursively, through their inputs): check builds and runs it. (The
# torch target's module has no such recursion.)
if [ "$backend" = tf ]; then
  "$RETC_TEST_MODELS" check deep-chain --backend "$backend" >"$TMP/deep" 2>"$TMP/err" ||
    { cat "$TMP/err"; fail "check deep-chain"; }
  pass "$backend: $(tail -n 1 "$TMP/deep")"
fi
# A model whose name has a '/': its traceback log is $TMPDIR/retc-check-lab_tiny.log,
# and nothing of TensorFlow's start-up reaches the terminal.
"$RETC_TEST_MODELS" check lab/tiny --backend "$backend" >"$TMP/lab" 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "check lab/tiny"; }
[ ! -s "$TMP/err" ] || fail "check lab/tiny wrote to stderr: $(head -n 3 "$TMP/err")"
[ -e "$TMPDIR/retc-check-lab_tiny.log" ] || fail "no \$TMPDIR/retc-check-lab_tiny.log"
pass "$backend: a model named lab/tiny: its log is retc-check-lab_tiny.log"

# A full disk (tmpfs mounts; root, as CI runs): an epoch's checkpoint that
# does not fit fails naming the file, leaves no part of the epoch (TF: no
# .index without its .meta; torch: no .pt without its .opt.pt), and after space
# is freed the same command trains every epoch; a conversion and a forward
# into a full disk fail naming their output and leave nothing there.
full="$TMP/full"
mkdir -p "$full/w/model" "$full/out"
trap 'umount "$full/w/model" "$full/out" 2>/dev/null || true; [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
# TF's model directory also gets a TensorBoard summary (190 KB), torch's the scores.
mount -t tmpfs -o size="$([ "$backend" = tf ] && echo 300k || echo 12k)" tmpfs "$full/w/model" ||
  fail "cannot mount a tmpfs (the full-disk checks need root)"
mount -t tmpfs -o size=8k tmpfs "$full/out" || fail "cannot mount a tmpfs"
head -c 8192 /dev/zero >"$full/out/filler" 2>/dev/null || true
expect_error 1 "^retc: error: RETURNN training failed: No space left on device: cannot write '$full/w/model/network.001' " -- \
  "$RETC" train 12ax --backend "$backend" --epochs 2 --workdir "$full/w" --progress 0
left=$(ls -A "$full/w/model" | grep -E '^network|^\.|tmp' || true)
[ -z "$left" ] || fail "a failed save of epoch 1 left: $left"
pass "$backend: a full disk at epoch 1's save: $(head -c 160 "$TMP/err")"
mount -o remount,size=2m "$full/w/model"
"$RETC" train 12ax --backend "$backend" --epochs 2 --workdir "$full/w" --progress 0 >"$TMP/full.log" 2>"$TMP/err" ||
  { tail -n 5 "$TMP/full.log" "$TMP/err"; fail "training after space was freed"; }
expect_final_error "$TMP/full.log" 0.5 "12ax on $backend after a full disk" >/dev/null
if [ "$backend" = tf ]; then want="network.001.data-00000-of-00001 network.001.index network.001.meta network.002.data-00000-of-00001 network.002.index network.002.meta"
else want="network.001.opt.pt network.001.pt network.002.opt.pt network.002.pt"; fi
[ "$(ls "$full/w/model" | grep '^network' | tr '\n' ' ')" = "$want " ] || fail "after space was freed: $(ls -A "$full/w/model")"
[ -z "$(ls -A "$full/w/model" | grep -E '^\.|tmp')" ] || fail "hidden files after space was freed: $(ls -A "$full/w/model")"
pass "$backend: after space was freed the same command trained epochs 1 and 2, each complete"
[ "$backend" = torch ] && conv_out="$full/out/conv" || conv_out="$full/out/conv.pt"
expect_error 1 "^retc: error: checkpoint conversion failed: No space left on device: cannot write '$conv_out' " -- \
  "$RETC" convert-checkpoint 12ax --from "$backend" "$ckpt" "$conv_out"
[ "$(ls -A "$full/out")" = filler ] || fail "a conversion into a full disk left: $(ls -A "$full/out")"
expect_error 1 "^retc: error: RETURNN failed: No space left on device: cannot write '$full/out/fwd.hdf' " -- \
  "$RETC" forward 12ax --backend "$backend" --checkpoint "$ckpt" -o "$full/out/fwd.hdf"
[ "$(ls -A "$full/out")" = filler ] || fail "a forward into a full disk left: $(ls -A "$full/out")"
pass "$backend: conversion and forward into a full disk: $(head -c 160 "$TMP/err")"
umount "$full/w/model" "$full/out"
no_leftovers "the full-disk checks"

# From here retc runs in its own process (no RETC_SERVER): the lock's PID and
# the killed run's children are its own.
unset RETC_SERVER

# slow-12ax: 150 steps an epoch, a log line each. start RUN: in the background;
# on torch with a data-loader worker (on the CPU the default is none), whose
# end after kill -9 is checked below.
slow="$TMP/slow"
workers=()
[ "$backend" = tf ] || workers=(--workers 1)
start() {
  "$RETC_TEST_MODELS" train slow-12ax --backend "$backend" --workdir "$slow" "${workers[@]}" >"$TMP/slow$1" 2>"$TMP/slowerr$1" &
  pid=$!
}
# wait_for RUN REGEX: until RUN's log has a line matching REGEX.
wait_for() {
  for _ in $(seq 900); do
    grep -Eq "$2" "$TMP/slow$1" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { tail -n 5 "$TMP/slow$1" "$TMP/slowerr$1"; fail "run $1 ended before '$2'"; }
    sleep 0.2
  done
  fail "run $1: no '$2'"
}
# step_re EPOCH N: the log line of step N of EPOCH.
step_re() { echo "^(train epoch $1|ep $1 train), step $2,"; }
# descendants PID: the processes below PID (RETURNN's data-loader workers).
descendants() {
  local child
  for child in $(pgrep -P "$1" || true); do echo "$child"; descendants "$child"; done
}

start 1
wait_for 1 "$(step_re 1 10)"
expect_error 1 "^retc: error: '$slow' is in use by another run \(retc train slow-12ax, PID $pid on $(uname -n)\); wait for it to end, or use another --workdir$" -- \
  "$RETC_TEST_MODELS" train slow-12ax --backend "$backend" --workdir "$slow"
pass "$backend: a second train on a busy workdir: $(cat "$TMP/err")"
wait_for 1 "$(step_re 2 5)"
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" -eq 143 ] || { tail -n 5 "$TMP/slow1" "$TMP/slowerr1"; fail "SIGTERM: expected exit 143, got $rc"; }
[ "$(wc -l <"$TMP/slowerr1")" -eq 1 ] || fail "SIGTERM: stderr: $(cat "$TMP/slowerr1")"
grep -q "stopped by SIGTERM" "$TMP/slowerr1" || fail "SIGTERM: $(cat "$TMP/slowerr1")"
ls "$slow/model" | grep -Eq '^network\.001\.(pt|index)$' || fail "epoch 1's checkpoint is missing after SIGTERM"
ls "$slow/model" | grep -Eq '^network\.002\.' && fail "epoch 2 was saved although SIGTERM stopped it"
[ ! -e "$slow/retc.lock" ] || fail "the lock file stayed after SIGTERM"
pass "$backend: SIGTERM in epoch 2: exit 143, '$(cat "$TMP/slowerr1")'"

start 2
wait_for 2 "$(step_re 2 10)"
children=$(descendants "$pid")
[ "$backend" = tf ] || [ -n "$children" ] || fail "the torch training with --workers 1 has no child process"
kill -KILL "$pid"
wait "$pid" || true
for _ in $(seq 50); do
  alive=$(for c in $children; do kill -0 "$c" 2>/dev/null && ps -o pid=,args= -p "$c"; done || true)
  [ -z "$alive" ] && break
  sleep 0.2
done
[ -z "$alive" ] || fail "processes of the killed training outlived it by 10 s: $alive"
start 3
wait_for 3 "$(step_re 2 5)"
grep -q "^retc: note: took over the lock of '$slow' left by a run that ended without releasing it (retc train slow-12ax, PID [0-9]* on $(uname -n))$" "$TMP/slowerr3" ||
  fail "no note about the killed run's lock: $(cat "$TMP/slowerr3")"
kill -TERM "$pid"
wait "$pid" || true
pass "$backend: kill -9: none of its $(echo $children | wc -w) child processes left; the next run resumed epoch 2 and took the lock over: $(head -n 1 "$TMP/slowerr3")"
