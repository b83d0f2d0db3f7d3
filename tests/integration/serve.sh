#!/usr/bin/env bash
# retc serve (RETC_SERVER): a command run by a warm server's child prints,
# writes and exits as the same command without one (a check; errors, exit 1
# and 2; a training in a folder given relative to the command's own); the
# server's log names each command it ran; Ctrl-Z (SIGTSTP) stops the command
# and its run, SIGCONT continues both; Ctrl-C (SIGINT) to the command stops
# its run (exit 130); kill -9 of the command ends its run; a run killed
# by a signal ends its command by that signal; another start-up environment
# (OMP_NUM_THREADS) gets another server; a server ends when idle, and
# `retc serve --stop` ends them all.
# ctest-cost: 40
source "$(dirname "$0")/lib.sh"
set -m  # background jobs keep SIGINT's default, as a terminal's would
export RETC_SERVER="$TMP/srv"  # servers of its own (the suite's are shared)
log() { cat "$RETC_SERVER"/*-"$1".log; }

expect_error 2 "^retc: error: serve needs --dir DIR, or RETC_SERVER set to one" -- env -u RETC_SERVER "$RETC" serve
"$RETC" serve --help | grep -- "--idle-minutes" >/dev/null || fail "serve --help"
"$RETC" serve --backend tf >"$TMP/start.out" || fail "retc serve --backend tf"
cat "$TMP/start.out"
grep -E "^retc serve: the tf server \(PID [0-9]+\) is up, in $RETC_SERVER$" "$TMP/start.out" >/dev/null || fail "the start's line"
server=$(sed -n 's/.*(PID \([0-9]*\)).*/\1/p' "$TMP/start.out")
kill -0 "$server" || fail "the server's PID $server"
"$RETC" serve --backend tf | grep "was already up" >/dev/null || fail "a second start"

# The same output, through the server and without it.
"$RETC" check 12ax >"$TMP/served.out" 2>"$TMP/served.err" || { cat "$TMP/served.err"; fail "check through the server"; }
env -u RETC_SERVER "$RETC" check 12ax >"$TMP/own.out" 2>"$TMP/own.err" || fail "check without the server"
diff "$TMP/served.out" "$TMP/own.out" || fail "check's output differs through the server"
log tf | grep -E "^retc serve: PID [0-9]+ \(check 12ax\): exit 0 after" >/dev/null || fail "the server's log has no check: $(log tf)"
pass "retc check 12ax through the server: the same output; $(log tf | grep -c '(check 12ax)') in the server's log"
for args in "check no-such-model" "check 12ax --batch x"; do
  rc1=0 rc2=0
  "$RETC" $args >/dev/null 2>"$TMP/e1" || rc1=$?
  env -u RETC_SERVER "$RETC" $args >/dev/null 2>"$TMP/e2" || rc2=$?
  [ "$rc1" = "$rc2" ] && [ "$rc1" != 0 ] && diff "$TMP/e1" "$TMP/e2" || fail "retc $args: exit $rc1 and $rc2, stderr $(cat "$TMP/e1") against $(cat "$TMP/e2")"
  log tf | grep "($args): exit $rc1" >/dev/null || fail "retc $args did not run in the server"
  pass "retc $args: exit $rc1 and the same error through the server"
done

# A training in the command's folder (a relative --workdir) and environment.
mkdir "$TMP/here"
(cd "$TMP/here" && RETC_TF_GRAPH_OPTIMIZER=off "$RETC" train 12ax --epochs 1 --progress 0 --workdir rel >"$TMP/train.log" 2>&1) ||
  { tail -n 5 "$TMP/train.log"; fail "a training through the server"; }
ls "$TMP/here/rel/model/network.001.index" >/dev/null || fail "the training's checkpoint is not in the command's folder"
log tf | grep "(train 12ax --epochs 1 --progress 0 --workdir rel): exit 0" >/dev/null || fail "the training did not run in the server"
pass "a training through the server wrote $TMP/here/rel/model/network.001.*"

# run_bg ARGS...: `retc ARGS` in the background (RUN: its PID), once the
# server's child for it runs (CHILD: its PID) and RETURNN has started.
run_bg() {
  local before
  before=$(pgrep -P "$server" | sort || true)
  "$RETC" "$@" >"$TMP/bg.log" 2>&1 &
  RUN=$!
  for _ in $(seq 600); do
    CHILD=$(comm -13 <(echo "$before") <(pgrep -P "$server" | sort) | head -n 1)
    [ -n "$CHILD" ] && grep -q "^Train data:" "$TMP/bg.log" && return 0
    kill -0 "$RUN" 2>/dev/null || { cat "$TMP/bg.log"; fail "retc $* ended early"; }
    sleep 0.1
  done
  fail "retc $* did not start in the server"
}
gone() {  # gone PID: within 10 s
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  return 1
}
state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }  # R, S, T (stopped), ...
# until_state STATE PID...: each in that state (T) or not in it (!T), within 10 s.
until_state() {
  local want=$1 p ok
  shift
  for _ in $(seq 100); do
    ok=1
    for p in "$@"; do
      if [ "$want" = T ]; then [ "$(state "$p")" = T ] || ok=0; else [ "$(state "$p")" != T ] || ok=0; fi
    done
    [ "$ok" = 1 ] && return 0
    sleep 0.1
  done
  return 1
}
train=(train 12ax --epochs 100 --progress 0)
run_bg "${train[@]}" --workdir "$TMP/w1"
kill -TSTP "$RUN"
until_state T "$RUN" "$CHILD" || fail "Ctrl-Z: the command ($(state "$RUN")) and its run ($(state "$CHILD")) are not both stopped"
kill -CONT "$RUN"
until_state '!T' "$RUN" "$CHILD" || fail "fg: the command ($(state "$RUN")) and its run ($(state "$CHILD")) did not both go on"
pass "Ctrl-Z stopped the command and its run in the server, SIGCONT (fg) continued both"
kill -INT "$RUN"
rc=0; wait "$RUN" || rc=$?
[ "$rc" = 130 ] || { cat "$TMP/bg.log"; fail "Ctrl-C: exit $rc, not 130"; }
grep "interrupted" "$TMP/bg.log" >/dev/null || fail "Ctrl-C: no 'interrupted' line: $(tail -n 3 "$TMP/bg.log")"
gone "$CHILD" || fail "Ctrl-C: the run (PID $CHILD) goes on"
pass "Ctrl-C to the command stopped its run in the server: exit 130, $(tail -n 1 "$TMP/bg.log")"

run_bg "${train[@]}" --workdir "$TMP/w2"
kill -KILL "$RUN"
wait "$RUN" 2>/dev/null || true
gone "$CHILD" || fail "kill -9: the run (PID $CHILD) outlived its command"
log tf | grep "the client of PID $CHILD is gone: SIGKILL to it" >/dev/null || fail "kill -9: the server's log: $(log tf | tail -n 2)"
pass "kill -9 of the command ended its run in the server (PID $CHILD)"

run_bg "${train[@]}" --workdir "$TMP/w3"
kill -KILL "$CHILD"
rc=0; wait "$RUN" || rc=$?
[ "$rc" = 137 ] || fail "a run killed by SIGKILL: its command exited $rc, not 137"
pass "a run killed by SIGKILL: its command ended so too (exit 137)"

# Another OMP_NUM_THREADS, another server (this command starts it, and runs itself).
OMP_NUM_THREADS=2 "$RETC" check 12ax >"$TMP/omp.out" 2>&1 || fail "check with OMP_NUM_THREADS=2"
diff <(grep -v "via OMP_NUM_THREADS" "$TMP/omp.out") <(grep -v "via OMP_NUM_THREADS" "$TMP/own.out") ||
  fail "check with OMP_NUM_THREADS=2: another output"
for _ in $(seq 600); do [ "$(ls "$RETC_SERVER"/*-tf.sock | wc -l)" = 2 ] && break; sleep 0.1; done
[ "$(ls "$RETC_SERVER"/*-tf.sock | wc -l)" = 2 ] || fail "no second server for OMP_NUM_THREADS=2: $(ls "$RETC_SERVER")"
pass "OMP_NUM_THREADS=2: a server of its own"

"$RETC" serve --stop >"$TMP/stop.out" || fail "retc serve --stop"
grep "^retc serve: stopped 2 servers in $RETC_SERVER$" "$TMP/stop.out" >/dev/null || fail "serve --stop: $(cat "$TMP/stop.out")"
gone "$server" || fail "the server (PID $server) did not end on --stop"
[ -z "$(ls "$RETC_SERVER"/*.sock 2>/dev/null)" ] || fail "sockets left after --stop: $(ls "$RETC_SERVER")"
pass "retc serve --stop ended both servers"

"$RETC" serve --backend torch --idle-minutes 0.1 >"$TMP/start.out" || fail "retc serve --backend torch"
server=$(sed -n 's/.*(PID \([0-9]*\)).*/\1/p' "$TMP/start.out")
"$RETC" check 12ax --backend torch >"$TMP/torch.out" 2>&1 || { cat "$TMP/torch.out"; fail "a torch check through the server"; }
log torch | grep "(check 12ax --backend torch): exit 0" >/dev/null || fail "the torch check did not run in the server"
for _ in $(seq 300); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$server" 2>/dev/null || fail "the torch server did not end after 6 s idle"
log torch | grep "ends (idle for 6 s)" >/dev/null || fail "the torch server's log: $(log torch | tail -n 1)"
pass "the torch server ran a check and ended after 6 s idle"
