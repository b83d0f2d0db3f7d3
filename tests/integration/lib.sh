# Shared helpers for the integration tests (sourced). ctest sets RETC,
# RETC_TEST_MODELS, RETC_SOURCE_DIR and RETC_BUILD_DIR.
set -euo pipefail
: "${RETC:?run through ctest}"
VENV=${RETC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/retc/venv}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/retc-it.XXXXXX")
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

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
  head -n 1 "$TMP/err" | grep -qE -- "$pattern" || fail "stderr of $* does not match '$pattern': $(cat "$TMP/err")"
}
