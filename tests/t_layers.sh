#!/usr/bin/env bash
# t_layers.sh — the module rules of src/ (docs/architecture.md, "What each
# folder may include"): tools/include_graph.py finds no include between folders that the
# rules forbid, no circle of includes between folders, and (over the build's objects) no circle
# of calls through a file of a checked module. Both checks can fail: an include of backend/
# from core/ and two objects that call each other are each reported.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
PY=/usr/bin/python3
if [ ! -d "$BUILD/obj" ]; then fail layers_build "$BUILD/obj not built (make -j2 all)"; exit 0; fi

out=$($PY tools/include_graph.py --symbols "$BUILD/obj" 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q ', 0 violations; calls checked over' <<<"$out"; then
    pass "layers_no_forbidden_include_no_circle ($(tail -1 <<<"$out" | sed 's/^include_graph: //'))"
else fail layers_no_forbidden_include_no_circle "exit $rc: $(grep violation <<<"$out" | head -5 | tr '\n' ' ')"; fi

# An include upward (core/ reaching into backend/) is refused, naming the file and the rule.
mkdir -p "$TMP/tree" && cp -r src "$TMP/tree/src"
sed -i '1i #include "../backend/backend.h"' "$TMP/tree/src/core/check.c"
out=$($PY tools/include_graph.py --root "$TMP/tree" 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q 'violation: src/core/check.c:1: module core includes ../backend/backend.h (module backend)' <<<"$out"; then
    pass "layers_refuses_core_including_backend"
else fail layers_refuses_core_including_backend "exit $rc: $(tail -3 <<<"$out" | tr '\n' ' ')"; fi

# Two files of a checked module that call each other are a circle.
mkdir -p "$TMP/obj/parallel"
printf 'void b_side(void);\nvoid a_side(void) { b_side(); }\n' > "$TMP/a.c"
printf 'void a_side(void);\nvoid b_side(void) { a_side(); }\n' > "$TMP/b.c"
cc -c "$TMP/a.c" -o "$TMP/obj/parallel/a_side.o" && cc -c "$TMP/b.c" -o "$TMP/obj/parallel/b_side.o"
out=$($PY tools/include_graph.py --symbols "$TMP/obj" 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q 'violation: a circle of calls: parallel/a_side <-> parallel/b_side' <<<"$out"; then
    pass "layers_refuses_a_circle_of_calls"
else fail layers_refuses_a_circle_of_calls "exit $rc: $(tail -3 <<<"$out" | tr '\n' ' ')"; fi
