#!/usr/bin/env bash
# The bundled transducer, trained on both targets and decoded
# time-synchronously: conformer-transducer (conformer-ctc's task: binary
# numbers to hexadecimal digits; a Conformer encoder, an LSTM prediction
# network, a joint network, the monotonic transducer loss) trains on TF and
# on torch (9 of its 10 epochs) to a final dev label error (the greedy decoding's, reported by
# training) of at most 0.05 on each. `retc search` decodes the dev set:
# greedily (--beam 1) to exactly the label error training reported, and with
# beam search (beam 12) to at most 0.05; the TF checkpoint converted to torch
# gives the same hypotheses there as on TF. Then the standard RNN-T
# (`--set topology=rnnt`: the full-sum loss with any number of digits per
# frame, alignment-length synchronous decoding; time stride 4, a Conv1d
# frontend: one encoder frame per 4 binary digits, about one per hex digit) trains on TF (14 epochs)
# to at most 0.05, decodes greedily to the error training reported and with
# beam 12 to at most 0.05, and its checkpoint converted to torch decodes there
# to the same hypotheses. The loss itself against numpy: test_modules.py
# transducer_loss.
# ctest-cost: 190
source "$(dirname "$0")/lib.sh"

search() {  # BACKEND OUT [ARGS...]: the dev label error of `retc search`, checked <= 0.05
  local backend=$1 out=$2
  shift 2
  "$RETC" search conformer-transducer "${SETS[@]}" --backend "$backend" -o "$out" "$@" >"$TMP/search" 2>"$TMP/err" ||
    { tail -n 30 "$TMP/search" "$TMP/err"; fail "retc search conformer-transducer --backend $backend $*"; }
  local last
  last=$(tail -n 1 "$TMP/search")
  [[ "$last" =~ ^dev\ label\ error:\ ([0-9.e+-]+)$ ]] || fail "the last line is not the dev label error: $last"
  "$VENV/bin/python" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 0.05 else 1)" "${BASH_REMATCH[1]}" ||
    fail "dev label error ${BASH_REMATCH[1]} > 0.05 ($backend $*)"
  SEARCH_ERROR=${BASH_REMATCH[1]}
}

SETS=()
for backend in tf torch; do
  start=$SECONDS
  # 9 of its 10 epochs: dev label error 0.0065 (TF) and 0.011 (torch) after epoch 9.
  "$RETC" train conformer-transducer --backend "$backend" --epochs 9 --workdir "$TMP/$backend" >"$TMP/log_$backend" 2>"$TMP/err" ||
    { tail -n 30 "$TMP/log_$backend" "$TMP/err"; fail "train conformer-transducer --backend $backend"; }
  expect_final_error "$TMP/log_$backend" 0.05 "conformer-transducer on $backend"
  trained=$FINAL_ERROR
  pass "conformer-transducer on $backend: final dev label error $trained in $((SECONDS - start)) s"
  search "$backend" "$TMP/greedy_$backend.py" --workdir "$TMP/$backend" --beam 1
  [ "$SEARCH_ERROR" = "$trained" ] || fail "greedy search on $backend: $SEARCH_ERROR, training reported $trained"
  search "$backend" "$TMP/beam_$backend.py" --workdir "$TMP/$backend"
  pass "retc search on $backend: greedy $trained (as training reported), beam 12: $SEARCH_ERROR"
done

# same_on_torch WORKDIR TAG: WORKDIR's last TF checkpoint converted to torch
# decodes there (beam 12) to the hypotheses of $TMP/beam_TAG.py (TF's).
same_on_torch() {
  mkdir -p "$TMP/conv_$2"
  local ckpt conv
  ckpt=$(ls "$1/model/"network.*.index | sort | tail -n 1)
  conv="$TMP/conv_$2/$(basename "$ckpt" .index).pt"
  "$RETC" convert-checkpoint conformer-transducer "${SETS[@]}" --from tf "${ckpt%.index}" "$conv" >/dev/null ||
    fail "convert-checkpoint conformer-transducer ${SETS[*]} --from tf"
  search torch "$TMP/beam_conv_$2.py" --checkpoint "$conv"
  "$VENV/bin/python" - "$TMP/beam_$2.py" "$TMP/beam_conv_$2.py" <<'PY' || fail "the converted checkpoint's hypotheses on torch differ from TF's ($2)"
import sys
tf, torch = (eval(open(p).read()) for p in sys.argv[1:])
assert len(tf) == 200 and tf.keys() == torch.keys(), (len(tf), len(torch))
differ = [k for k in tf if tf[k] != torch[k]]
assert not differ, differ[:5]
assert all(0 <= int(v) < 16 for h in tf.values() for v in h.split())  # hex digits, no blank (16)
print("200 hypotheses alike, e.g. %r" % next(iter(tf.items()))[1])
PY
  pass "the TF checkpoint on torch ($2): beam search's hypotheses equal TF's (dev label error $SEARCH_ERROR)"
}
same_on_torch "$TMP/tf" tf

# The standard RNN-T: trained on TF, decoded on both.
SETS=(--set topology=rnnt --set time_stride=4 --set epochs=14)
start=$SECONDS
"$RETC" train conformer-transducer "${SETS[@]}" --workdir "$TMP/rnnt" >"$TMP/log_rnnt" 2>"$TMP/err" ||
  { tail -n 30 "$TMP/log_rnnt" "$TMP/err"; fail "train conformer-transducer ${SETS[*]}"; }
expect_final_error "$TMP/log_rnnt" 0.05 "conformer-transducer ${SETS[*]}"
trained=$FINAL_ERROR
pass "conformer-transducer ${SETS[*]} on tf: final dev label error $trained in $((SECONDS - start)) s"
search tf "$TMP/greedy_rnnt.py" --workdir "$TMP/rnnt" --beam 1
[ "$SEARCH_ERROR" = "$trained" ] || fail "rnnt greedy search: $SEARCH_ERROR, training reported $trained"
search tf "$TMP/beam_rnnt.py" --workdir "$TMP/rnnt"
pass "rnnt: retc search on tf: greedy $trained (as training reported), beam 12: $SEARCH_ERROR"
same_on_torch "$TMP/rnnt" rnnt
