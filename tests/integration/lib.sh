# Shared helpers for the integration tests (sourced). ctest sets RETC,
# RETC_TEST_MODELS, RETC_SOURCE_DIR and RETC_BUILD_DIR.
# ctest: none (sourced by the tests)
set -euo pipefail
# Pipelines into grep read all input (no -q): under pipefail, grep -q exiting
# early kills the writer with SIGPIPE and fails the check at random.
: "${RETC:?run through ctest}"
VENV=${RETC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/retc/venv}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/retc-it.XXXXXX")
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# expect_final_error LOG BOUND MODEL: the last line of LOG is the final dev
# error (frame error, or label error for CTC), at most BOUND; sets FINAL_ERROR.
expect_final_error() {
  local last
  last=$(tail -n 1 "$1")
  echo "last line: $last"
  [[ "$last" =~ ^final\ dev\ (frame|label)\ error:\ ([0-9.e+-]+)$ ]] || fail "$3: the last line is not the final dev error"
  FINAL_ERROR=${BASH_REMATCH[2]}
  "$VENV/bin/python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$FINAL_ERROR" "$2" ||
    fail "$3: final dev error $FINAL_ERROR > $2"
  pass "$3 trains to dev ${BASH_REMATCH[1]} error $FINAL_ERROR"
}

# expect_error CODE STDERR_PATTERN -- COMMAND...: the command exits with CODE
# (or any non-zero code if CODE is "nonzero"), prints exactly one line to
# stderr (or NOTES more "note:" lines), and the first line matches the pattern.
expect_error() {
  local code=$1 pattern=$2
  shift 3
  local rc=0
  "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
  if [ "$code" = nonzero ]; then
    [ "$rc" -ne 0 ] || fail "expected failure: $*"
  else
    [ "$rc" -eq "$code" ] || fail "expected exit $code, got $rc: $* ($(cat "$TMP/err"))"
  fi
  [ "$(wc -l <"$TMP/err")" -eq $((1 + ${NOTES:-0})) ] || fail "expected $((1 + ${NOTES:-0})) line(s) on stderr from $*, got: $(cat "$TMP/err")"
  [ "$(grep -vc ': note: ' "$TMP/err")" -eq 1 ] || fail "extra lines on stderr from $*: $(cat "$TMP/err")"
  head -n 1 "$TMP/err" | grep -E -- "$pattern" >/dev/null || fail "stderr of $* does not match '$pattern': $(cat "$TMP/err")"
}

# expect_kept_checkpoints WORKDIR KEEP_LAST KEEP_BEST SUFFIX...: after training
# with --keep-last/--keep-best (RETURNN's cleanup_old_models), WORKDIR/model holds
# network.NNN<SUFFIX> for exactly these epochs: the last KEEP_LAST, and for each
# score in RETURNN's learning_rates file (its train and dev losses and errors;
# one whose value never changes is no measure) the KEEP_BEST best epochs of all
# trained (an epoch best at the end was best whenever a cleanup ran; ties: the
# earlier epoch). Prints the kept epochs.
expect_kept_checkpoints() {
  "$VENV/bin/python" - "$@" <<'PY' || fail "the checkpoints left by the cleanup"
import os, re, sys
work, keep_last, keep_best, suffixes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
model = os.path.join(work, "model")
import numpy
data = eval(open(os.path.join(model, "learning_rates")).read(),
            {"EpochData": lambda learningRate, error: error, "np": numpy, "numpy": numpy})
scores = {e: {k: v for k, v in d.items() if not k.startswith(":")} for e, d in data.items() if d}
epochs = sorted(scores)
want = set(epochs[-keep_last:])
for key in sorted({k for s in scores.values() for k in s}):
    values = [(scores[e][key], e) for e in epochs if key in scores[e]]
    if len({v for v, _ in values}) > 1:
        want.update(e for _, e in sorted(values)[:keep_best])
for suffix in suffixes:
    have = {int(m.group(1)) for m in (re.fullmatch(r"network\.(\d+)" + re.escape(suffix), f) for f in os.listdir(model)) if m}
    assert have == want, "network.*%s: epochs %s remain, expected %s (trained: %s)" % (suffix, sorted(have), sorted(want), epochs)
print("epochs %s of %s kept (%s)" % (sorted(want), epochs, ", ".join(suffixes)))
PY
}
