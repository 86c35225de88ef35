#!/usr/bin/env bash
# emu-attention.sh EMU_OP_TEST — the attention selection of the CUDA back end (train.attention,
# BOOST_CUDA_ATTENTION; cuda_attention.cu) on the CPU emulator, whose build has no cuDNN
# (cudnn_attention.cu compiled without nvcc): make cuda-emu-test runs it after the op cases.
#   auto   (the default) an attention case (the smallest: the selection, not the kernel) passes on the flash kernel, and a note says why
#          cuDNN was not used: no cuDNN in this build (bf16), fp32 compute (fp32)
#   flash  the same cases pass and no note is printed
#   cudnn  refused at back-end construction with the reason and a hint (exit 2)
#   other  refused with the values it accepts
# Prints PASS/FAIL lines (tests/lib.sh) and exits 1 on a failure.
set -u
EMU=${1:?usage: emu-attention.sh build/emu/test_backend_ops_emu}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
run() {  # NAME MODE → rc in $RC, stdout+stderr in $TMP/NAME.log
    local name=$1 mode=$2
    if [ -n "$mode" ]; then BOOST_CUDA_ATTENTION=$mode "$EMU" --only "attention_forward B=2 T=1 H=2" > "$TMP/$name.log" 2>&1
    else env -u BOOST_CUDA_ATTENTION "$EMU" --only "attention_forward B=2 T=1 H=2" > "$TMP/$name.log" 2>&1; fi
    RC=$?
}
why() { tail -3 "$TMP/$1.log" | tr '\n' ' '; }

run auto ""
if [ $RC -eq 0 ] && grep -q '^attention: the hand-written flash kernel: this build has no cuDNN' "$TMP/auto.log" \
   && grep -q '^attention: the hand-written flash kernel: this back end computes in fp32' "$TMP/auto.log" \
   && [ "$(grep -c '^attention: ' "$TMP/auto.log")" -eq 2 ] && ! grep -q '^FAIL ' "$TMP/auto.log"; then
    pass "emu_attention_auto_falls_back_with_one_note_each"
else fail emu_attention_auto_falls_back_with_one_note_each "exit $RC, notes: $(grep '^attention: ' "$TMP/auto.log" | tr '\n' ';') $(why auto)"; fi

run flash flash
if [ $RC -eq 0 ] && ! grep -q '^attention: ' "$TMP/flash.log" && grep -q '^PASS ' "$TMP/flash.log" && ! grep -q '^FAIL ' "$TMP/flash.log"; then
    pass emu_attention_flash_silent
else fail emu_attention_flash_silent "exit $RC: $(why flash)"; fi

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
