#!/usr/bin/env bash
# An error inside RETURNN (a dataset option it rejects) is one clear line on
# stderr, with the full traceback in the log file it names; never a crash.
source "$(dirname "$0")/lib.sh"

expect_error 1 "^retc: error: RETURNN training failed: TypeError: .*unexpected keyword argument 'no_such_option' \(traceback: $TMP/work/retc-stderr.log\)$" -- \
  "$RETC_TEST_MODELS" train bad-dataset --workdir "$TMP/work"
grep -q "^Traceback (most recent call last):" "$TMP/work/retc-stderr.log" || fail "no traceback in the log"
grep -q "no_such_option" "$TMP/work/retc-stderr.log" || fail "the log lacks the error"
pass "RETURNN error: one line on stderr, traceback in the log"
