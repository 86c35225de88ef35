#!/usr/bin/env bash
# Make passes user variables to the shell as quoted raw text: payloads that would run a
# command if pasted into the recipe run nothing (issue: shell injection through make).
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
probe() {   # NAME, then make arguments; the payloads try to create files in $TMP
    local name=$1; shift
    make -s "$@" >"$TMP/$name.log" 2>&1
    local made; made=$(ls "$TMP"/hit-* 2>/dev/null)
    if [ -z "$made" ]; then pass "$name"; else fail "$name" "payload ran: $made"; rm -f "$TMP"/hit-*; fi
}
probe make_exp_dollar_paren exp "EXP=\$\$(touch $TMP/hit-1)"
probe make_exp_backticks exp "EXP=\`touch $TMP/hit-2\`"
probe make_variant_semicolon exp EXP=quickstart "VARIANT=x; touch $TMP/hit-3 #"
probe make_exp_single_quote exp "EXP=a'b; touch $TMP/hit-4; '"
probe make_set_payload exp EXP=quickstart DRY_RUN=1 "SET=train.steps=1 \$\$(touch $TMP/hit-5) ;touch $TMP/hit-6"
probe make_repeat_payload exp EXP=quickstart DRY_RUN=1 "REPEAT=2; touch $TMP/hit-9"
probe make_launch_payload exp EXP=quickstart SUMMARY=1 "LAUNCH=\$\$(touch $TMP/hit-10)"
probe make_figures_payload figures "EXP=x; touch $TMP/hit-7"
probe make_info_payload info "PRESET=tiny; touch $TMP/hit-8"
probe make_bench_payload bench REPEAT=1 "BENCH_ARGS=--preset tiny --seq 16 --batch 1 --steps 1 --warmup 0 --linears cola" \
    "TORCH_PYTHON=/nonexistent; touch $TMP/hit-11" "TORCH_ARGS=\$\$(touch $TMP/hit-12)"
grep -qF "cannot run /nonexistent; touch $TMP/hit-11" "$TMP/make_bench_payload.log" && pass make_bench_torch_python_literal \
    || fail make_bench_torch_python_literal "$(tail -2 "$TMP/make_bench_payload.log")"
# ... and the payload arrives as one literal word
grep -qF "no experiment '\$\$(touch $TMP/hit-1)'" "$TMP/make_exp_dollar_paren.log" && pass make_exp_literal_name \
    || fail make_exp_literal_name "$(head -2 "$TMP/make_exp_dollar_paren.log")"
grep -qF "no variant 'x; touch $TMP/hit-3 #'" "$TMP/make_variant_semicolon.log" && pass make_variant_literal_name \
    || fail make_variant_literal_name "$(head -2 "$TMP/make_variant_semicolon.log")"
probe make_launcher_payload exp EXP=quickstart DRY_RUN=1 "LAUNCHER=mpirun \$\$(touch $TMP/hit-13)" \
    "LAUNCHER_ARGS=-x \`touch $TMP/hit-14\` ;touch $TMP/hit-15" "HOSTFILE=h; touch $TMP/hit-16"

# ---- a line break in any user variable: one message naming it, before any shell runs --------
# (the list is the Makefile's own USER_VARS, so a variable added there is probed too; EXP names no
# experiment, so a variable the check missed fails fast instead of training)
vars=$(make -s -pn -f Makefile help 2>/dev/null | sed -n 's/^USER_VARS := //p')
n=0; bad=""
for v in $vars; do
    n=$((n + 1))
    out=$(make -s exp EXP=no-such-experiment "$v=one"$'\n'"two; touch $TMP/hit-nl" 2>&1); rc=$?
    if [ $rc != 2 ] || ! grep -qF "$v='one\ntwo; touch $TMP/hit-nl' holds a line break" <<<"$out" ||
       grep -q "Syntax error" <<<"$out" || [ -e "$TMP/hit-nl" ]; then bad="$bad $v(exit $rc: $(head -c 120 <<<"$out"))"; fi
done
if [ "$n" -ge 20 ] && [ -z "$bad" ]; then pass make_line_break_in_any_variable_refused
else fail make_line_break_in_any_variable_refused "$n variables; wrong for:$bad"; fi
