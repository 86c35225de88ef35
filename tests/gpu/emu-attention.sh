#!/usr/bin/env bash
# emu-attention.sh EMU_OP_TEST — the attention selection of the CUDA back end (train.attention,
# BOOST_CUDA_ATTENTION; cuda_attention.cu) on the CPU emulator, whose build has no cuDNN
# (cudnn_attention.cu compiled without nvcc): make cuda-emu-test runs it after the op cases.
#   auto   (the default) the forward and backward cases of one shape pass on the flash kernel,
#          and one line per direction, shape and back end says which attention ran and why cuDNN
#          did not: no cuDNN in this build (bf16), fp32 compute (fp32)
#   flash  the same cases pass; each line names the choice (train.attention flash)
#   cudnn  refused at back-end construction with the reason and a hint (exit 2)
#   other  refused with the values it accepts
# (That a shape already seen is not said again, and that the lines reach the run's record, is
# tests/emu/cuda_emu_train.sh's emu_cuda_attention_path_recorded.)
# Prints PASS/FAIL lines (tests/lib.sh) and exits 1 on a failure.
set -u
EMU=${1:?usage: emu-attention.sh build/emu/test_backend_ops_emu}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
SHAPE="B 1 T 70 H 3 Hkv 1 hd 16"
run() {  # NAME MODE → rc in $RC, stdout+stderr in $TMP/NAME.log
    local name=$1 mode=$2
    if [ -n "$mode" ]; then BOOST_CUDA_ATTENTION=$mode "$EMU" --only "T=70 H=3" > "$TMP/$name.log" 2>&1
    else env -u BOOST_CUDA_ATTENTION "$EMU" --only "T=70 H=3" > "$TMP/$name.log" 2>&1; fi
    RC=$?
}
why() { tail -3 "$TMP/$1.log" | tr '\n' ' '; }
# lines DIRECTION REASON LOG: how many lines say the flash kernel ran for DIRECTION at SHAPE with REASON
lines() { grep -cF "attention: $1 $SHAPE: the flash kernel$2" "$TMP/$3.log"; }

run auto ""
if [ $RC -eq 0 ] && [ "$(grep -c '^attention: ' "$TMP/auto.log")" -eq 4 ] \
   && [ "$(lines forward ': this build has no cuDNN' auto)" -eq 1 ] && [ "$(lines forward ': this back end computes in fp32' auto)" -eq 1 ] \
   && [ "$(lines backward ': this build has no cuDNN' auto)" -eq 1 ] && [ "$(lines backward ': this back end computes in fp32' auto)" -eq 1 ] \
   && ! grep -q '^FAIL ' "$TMP/auto.log"; then
    pass "emu_attention_auto_falls_back_one_line_per_direction_and_shape"
else fail emu_attention_auto_falls_back_one_line_per_direction_and_shape "exit $RC, lines: $(grep '^attention: ' "$TMP/auto.log" | tr '\n' ';') $(why auto)"; fi

run flash flash
if [ $RC -eq 0 ] && [ "$(grep -c '^attention: ' "$TMP/flash.log")" -eq 4 ] && [ "$(lines forward ' (train.attention flash)' flash)" -eq 2 ] \
   && [ "$(lines backward ' (train.attention flash)' flash)" -eq 2 ] && grep -q '^PASS ' "$TMP/flash.log" && ! grep -q '^FAIL ' "$TMP/flash.log"; then
    pass emu_attention_flash_named
else fail emu_attention_flash_named "exit $RC: $(grep '^attention: ' "$TMP/flash.log" | tr '\n' ';') $(why flash)"; fi

run cudnn cudnn
if [ $RC -eq 2 ] && grep -q 'BOOST_CUDA_ATTENTION is cudnn but' "$TMP/cudnn.log" && grep -q '^hint: ' "$TMP/cudnn.log"; then
    pass emu_attention_cudnn_refused_with_reason
else fail emu_attention_cudnn_refused_with_reason "exit $RC (expected 2): $(why cudnn)"; fi

run bogus fastest
if [ $RC -eq 2 ] && grep -q "BOOST_CUDA_ATTENTION is 'fastest'; expected auto, cudnn or flash" "$TMP/bogus.log"; then
    pass emu_attention_bad_mode_refused
else fail emu_attention_bad_mode_refused "exit $RC (expected 2): $(why bogus)"; fi

echo "emu-attention: $((4 - fails)) passed, $fails failed"
[ $fails -eq 0 ]
