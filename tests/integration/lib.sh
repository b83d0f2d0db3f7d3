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
