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

# ---- a build folder built again with other flags recompiles: never an object of the old flags ------
# (each switch that enters the compile line, to it and back; a CUDA build against CUDA=0 where nvcc
# is found: -DBOOST_CUDA changes what gpu_setup.c compiles to)
objs="$TMP/fb/obj/core/check.o $TMP/fb/obj/parallel/gpu_setup.o"
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u WERROR -u PORTABLE -u OPT -u CFLAGS -u CUDA \
         make --no-print-directory -C "$ROOT" BUILD="$TMP/fb" "$@" $objs 2>&1; }
compiled() { grep -cE -- ' -c src/(core/check|parallel/gpu_setup)\.c ' <<<"$1"; }
switches=("WERROR=1" "PORTABLE=1" "OPT=-O2 -march=native" "CFLAGS=-O1 -std=c11 -D_GNU_SOURCE -fopenmp")
[ -n "$(bash "$ROOT/mk/find-gpu-libs.sh" --nvcc 2>/dev/null)" ] && switches+=("CUDA=1")
out=$(mk CUDA=0); bad=""
[ "$(compiled "$out")" = 2 ] || bad="$bad first build compiled $(compiled "$out") of 2: $(tail -2 <<<"$out");"
for s in "${switches[@]}"; do   # (the switch comes after CUDA=0: make's last assignment wins, so CUDA=1 is a CUDA build)
    n1=$(compiled "$(mk CUDA=0 "$s")"); n2=$(compiled "$(mk CUDA=0 "$s")"); n3=$(compiled "$(mk CUDA=0)")
    [ "$n1/$n2/$n3" = 2/0/2 ] || bad="$bad '$s': compiled $n1, again $n2, back $n3 (expected 2/0/2);"
done
if [ -z "$bad" ]; then pass "build_flags_change_recompiles (${#switches[@]} switches, to and back)"
else fail build_flags_change_recompiles "$bad"; fi
