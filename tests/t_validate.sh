#!/usr/bin/env bash
# make validate-cpu's method (analysis/validate_cpu.py, docs/performance-model.md §8), without
# its measurements (those need a quiet machine): the domain is enforced, the statistics are
# right, and the op layer (build/simulate --measure-ops) prices exactly the op records of the
# step it timed — the same records the simulation prices for that step.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# ---- the domain: one pinned single-thread rank per core ---------------------------------------
over=$(( $(/usr/bin/python3 -c 'import os; print(len(os.sched_getaffinity(0)))') * 2 ))   # (nproc obeys OMP_NUM_THREADS)
expect_error validate_cpu_refuses_a_layout_outside_the_domain "outside the validated domain" 2 \
    /usr/bin/python3 analysis/validate_cpu.py --layouts "tp1,tp$over" --db "$TMP/v.db" --out "$TMP/v"
expect_error validate_cpu_refuses_a_bad_layout "expected tpN, ppN, dpN" 2 \
    /usr/bin/python3 analysis/validate_cpu.py --layouts tp2x --db "$TMP/v.db" --out "$TMP/v"
[ ! -e "$TMP/v.md" ] && [ ! -e "$TMP/v.db" ] && pass validate_cpu_refusal_runs_nothing || fail validate_cpu_refusal_runs_nothing "wrote output"

# ---- the statistics and the layer tables' inputs ------------------------------------------------
printf 'op,class,calls_per_step,measured_s,modeled_s,dry_calls_per_step,dry_modeled_s\ngemm,gemm,3,0.010,0.008,3,0.008\n'\
'attention_forward,attention,1,0.004,0.005,1,0.005\ngemm_group,gemm,2,0.002,0.003,2,0.003\nsilu_forward,memory,1,0.001,0.001,0,0\n'\
'(step wall),,,0.02,,,\n' >"$TMP/ops.csv"
out=$(cd analysis && /usr/bin/python3 - "$TMP/ops.csv" <<'PY' 2>&1
import sys, validate_cpu as v
assert v.parse_layout("tp1") == (1, 1, 1) and v.parse_layout("tp2") == (2, 1, 1)
assert v.parse_layout("pp2") == (1, 2, 1) and v.parse_layout("dp2") == (1, 1, 2) and v.parse_layout("tp2pp2") == (2, 2, 1)
assert all(v.in_domain(x, 2) for x in ("tp1", "tp2", "pp2", "dp2")) and not v.in_domain("tp4", 2) and not v.in_domain("tp2dp2", 2)
# the printed statistic is the median, and its interval is the median's (percentile bootstrap), on generated samples:
# it holds the sample median, lies within the sample, repeats exactly (a fixed seed), narrows as the sample grows
import random, statistics
rng = random.Random(5)
for n in (3, 5, 9, 25):
    for _ in range(20):
        xs = [rng.lognormvariate(0, 0.3) for _ in range(n)]
        lo, hi = v.median_ci(xs)
        assert min(xs) <= lo <= statistics.median(xs) <= hi <= max(xs), (xs, lo, hi)
        assert v.median_ci(xs) == (lo, hi)
wide = [v.median_ci([rng.gauss(0, 1) for _ in range(5)]) for _ in range(40)]
narrow = [v.median_ci([rng.gauss(0, 1) for _ in range(81)]) for _ in range(40)]
assert statistics.median(h - l for l, h in narrow) < statistics.median(h - l for l, h in wide)
assert v.median_ci([7]) is None and v.median_ci([2, 2, 2]) == (2, 2)
assert "bootstrap" in v.ci_text([0.1, -0.2, 0.05]) and v.ci_text([0.1]) == ""
assert v.summary([-0.1, 0.05, 0.3]) == (0.1, 0.3)
ops = v.read_ops_csv(sys.argv[1])
assert abs(ops["gemm"][0] - 0.012) < 1e-12 and abs(ops["gemm"][1] - 0.011) < 1e-12, ops
assert abs(ops["all ops"][0] - 0.017) < 1e-12 and abs(ops["all ops"][1] - 0.017) < 1e-12 and abs(ops["all ops"][2] - 0.016) < 1e-12, ops
assert "(step wall)" not in ops and ops["memory"] == (0.001, 0.001, 0.0), ops
print("ok")
PY
)
[ "$out" = ok ] && pass validate_cpu_statistics_and_op_tables || fail validate_cpu_statistics_and_op_tables "$out"

# ---- the quiet check and the collectives' steps ---------------------------------------------------
out=$(cd analysis && /usr/bin/python3 - "$TMP/c.db" <<'PY' 2>&1
import sqlite3, sys, validate_cpu as v
# other processes' cores: the machine's busy seconds less this session's own, over the wall time
assert v.other_cpu((10.0, 1.0, 3.0), (12.0, 1.5, 4.5), 2.0) == (0.25, 0.25)
assert v.other_cpu((10.0, 0.0, 3.0), (11.0, 0.0, 4.2), 1.0)[0] == 0.0   # own time beyond the machine's: none, not negative
other, steal, busy = v.idle_state(0.1)
assert other >= 0 and steal >= 0 and isinstance(busy, str), (other, steal, busy)
# the collectives per step: the median over the step times' own timed steps (the warm-up step left out)
con = sqlite3.connect(sys.argv[1])
con.execute("CREATE TABLE steps (run_id, step, step_seconds)")
con.execute("CREATE TABLE comm (run_id, step, kind, seconds)")
con.executemany("INSERT INTO steps VALUES (1, ?, ?)", [(k, 0.1 + 0.01 * k) for k in range(1, 9)])
con.executemany("INSERT INTO comm VALUES (1, ?, ?, ?)", [(1, "all_reduce", 5.0)] + [(k, "all_reduce", 0.001 * k) for k in range(2, 9)] +
                [(k, "all_gather", 0.001) for k in range(2, 9)] + [(k, "send", 0.5) for k in range(1, 9)])
t = v.timed_steps(con, 1)
assert sorted(t) == list(range(2, 9)), t
assert abs(v.timed_median(con, 1) - 0.15) < 1e-12
assert abs(v.comm_s(con, 1, False, t) - 0.006) < 1e-12, v.comm_s(con, 1, False, t)   # median of 0.003 .. 0.009
assert abs(v.comm_s(con, 1, True, t) - 0.5) < 1e-12
print("ok")
PY
)
[ "$out" = ok ] && pass validate_cpu_quiet_check_and_collective_steps || fail validate_cpu_quiet_check_and_collective_steps "$out"

# ---- --refresh: the rank share against the same window in a lone process, with the runs' threads;
# ---- the kernels timed as themselves again, and inside a training step (4c.: the GEMM table's in_step)
expect_error calibrate_refuses_bad_threads "calibrate --threads: expected an integer in [1, 1024], got '0'" 2 build/calibrate --threads 0 --out "$TMP/x.yaml"
mkdir -p "$TMP/share"
if out=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/calibrate --refresh experiments/hardware/cpu-local.yaml --ranks 2 \
         --threads 1 --out "$TMP/share/cpu-local.yaml" </dev/null 2>&1); then
    share=$(grep '^rank_share:' "$TMP/share/cpu-local.yaml")
    if grep -q "1 rank alone (1 thread)" <<<"$out" && grep -q "2 ranks (1 thread each)" <<<"$out" && [[ $share == "rank_share: {2: "* ]] \
       && grep -q "^    xent_forward: {byte_per_s: " "$TMP/share/cpu-local.yaml" \
       && grep -Eq "^    in_step: [0-9.e+-]+$" "$TMP/share/cpu-local.yaml" \
       && grep -Eq "^   gemm +[0-9]+ .* ms .* ms +[0-9.]+ +\(the table's price" <<<"$out" \
       && grep -Eq "^   adamw +[0-9]+ " <<<"$out" \
       && build/simulate experiments/boost-vs-baselines.yaml --variant boost --hardware "$TMP/share/cpu-local.yaml" >/dev/null 2>&1; then
        pass "calibrate_refresh_share_against_a_lone_process ($share)"
    else fail calibrate_refresh_share_against_a_lone_process "$share; $(tail -2 <<<"$out")"; fi
else fail calibrate_refresh_share_against_a_lone_process "exit $?: $(tail -2 <<<"$out")"; fi

# ---- a whole quick calibration: the started (ordered) reductions get their own α-β (5.), the
# ---- collectives inside the trainer's steps (5b.) become the link's in-step terms (the scalar
# ---- calls' seconds, the factors by group and kind, the pooled one), and the profile it writes
# ---- prices a tp 2 step
# Every in-step term is the median of its passes' values (docs/performance-model.md §18): each
# printed row's median is that of the factors printed beside it, and the profile holds it.
passes_ok() {
    /usr/bin/python3 - "$2" <<PY
import re, statistics, sys
prof = open(sys.argv[1]).read()
rows = re.findall(r"^   (tp|dp|all of them) +(\S+)? *[0-9]+ .*? ([0-9.]+)  ((?: [0-9.]+){3})", """$1""", re.M)
assert len(rows) >= 3, rows
for grp, kind, med, passes in rows:
    v = [float(x) for x in passes.split()]
    assert abs(statistics.median(v) - float(med)) <= 1e-3, (grp, kind, med, v)
    key = "in_step: {2: " if grp == "all of them" else f"{grp}_{kind}: {{2: "
    got = float(re.search(re.escape(key) + r"([0-9.e+-]+)", prof).group(1))
    assert abs(got - float(med)) <= 1e-3, (key, got, med)
call = re.search(r"median ([0-9.]+) us \(each pass's median: ([0-9. ]+);", """$1""")
assert abs(statistics.median(float(x) for x in call.group(2).split()) - float(call.group(1))) <= 1e-2
PY
}
# The validation's report carries that table as the calibration printed it (validate_cpu.py's
# calibration_in_step): from its 5b. header through the last rank count's pooled row, nothing
# after (a second rank count, as --ranks 2,4 prints, made from the first, is kept too).
report_keeps_in_step_table() {
    CAL_OUT="$1" /usr/bin/python3 - <<'PY'
import os, sys
sys.path.insert(0, "analysis")
import validate_cpu
out = os.environ["CAL_OUT"]
t = validate_cpu.calibration_in_step(out)
assert t and t[0].startswith("5b. ") and t[-1].rstrip().endswith("(in_step: a group or kind not measured)"), t
assert any(l.startswith("   tp   all_reduce") for l in t) and any(l.startswith("   dp   all_reduce") for l in t), t
assert validate_cpu.calibration_in_step(out.replace("5b. ", "5c. ")) == []
# the same output with a 4-rank block after the 2-rank one (calibrate prints one per rank count)
i = t.index(next(l for l in t if l.startswith("   2 ranks:")))
block4 = [l.replace("   2 ranks:", "   4 ranks:") for l in t[i:]]
lines = out.splitlines()
end = next(j for j, l in enumerate(lines) if l.rstrip() == t[-1]) + 1
out4 = "\n".join(lines[:end] + block4 + lines[end:])
t4 = validate_cpu.calibration_in_step(out4)
assert t4 == t + block4, (t4[-3:], len(t4), len(t) + len(block4))
assert sum(l.rstrip().endswith("(in_step: a group or kind not measured)") for l in t4) == 2, t4
PY
}
mkdir -p "$TMP/full"
if out=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/calibrate --quick --ranks 2 --threads 1 --out "$TMP/full/cpu-local.yaml" \
         </dev/null 2>&1); then
    ins=$(grep -E '^    in_step: \{2: [0-9.e+-]+\}$' "$TMP/full/cpu-local.yaml")
    by=$(grep -E '^    in_step_by: \{.*tp_all_reduce: \{2: [0-9.e+-]+\}' "$TMP/full/cpu-local.yaml" | grep -E 'dp_all_reduce: \{2: [0-9.e+-]+\}')
    call=$(grep -E '^    in_step_call_s: \{2: [0-9.e+-]+\}$' "$TMP/full/cpu-local.yaml")
    ord=$(grep -E '^    ordered: \{all_reduce: \{base_s: [0-9.e+-]+, hop_s: [0-9.e+-]+, busbw: .*reduce_scatter: \{base_s' "$TMP/full/cpu-local.yaml")
    if [ -n "$ins" ] && [ -n "$by" ] && [ -n "$call" ] && [ -n "$ord" ] && grep -Eq "^   all of them +[0-9]+ .*\(in_step: a group or kind not measured\)" <<<"$out" \
       && grep -Eq "^   tp +all_reduce +[0-9]+ " <<<"$out" && grep -Eq "^   dp +all_reduce +[0-9]+ " <<<"$out" \
       && grep -Eq "^   2 ranks: scalar collectives in 3 of 3 passes, rank 0's seconds per call, median" <<<"$out" \
       && passes_ok "$out" "$TMP/full/cpu-local.yaml" \
       && report_keeps_in_step_table "$out" \
       && grep -Eq "^   ordered_all_reduce +base " <<<"$out" \
       && cache=$(grep -Eo '/tmp/calibrate-data\.[A-Za-z0-9]+' <<<"$out" | head -1) && [ -n "$cache" ] && [ ! -e "$cache" ] \
       && build/simulate experiments/boost-vs-baselines.yaml --variant boost --hardware "$TMP/full/cpu-local.yaml" >/dev/null 2>&1; then
        pass "calibrate_collectives_in_step ($(sed 's/^ *//' <<<"$ins"))"
    else fail calibrate_collectives_in_step "$ins; $(grep -A3 '^5b' <<<"$out" | tail -2)"; fi
else fail calibrate_collectives_in_step "exit $?: $(tail -2 <<<"$out")"; fi

# ---- the op layer: measured and modeled are the same records of the same steps; the dry back ----
# ---- end's records of those steps are exactly what the simulation prices -----------------------
ARGS=(experiments/boost-vs-baselines.yaml --variant boost --hardware cpu-local --set parallel.tp=1 --set train.threads=1
      --set model.n_layers=2 --set train.batch_size=2)
out=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/simulate "${ARGS[@]}" --json "$TMP/dry.json" --measure-ops 2 --ops-csv "$TMP/m.csv" 2>&1); rc=$?
chk=$(/usr/bin/python3 - "$TMP/dry.json" "$TMP/m.csv" <<'PY' 2>&1
import csv, json, sys
dry = json.load(open(sys.argv[1]))["stages"][0]
rows = [r for r in csv.DictReader(open(sys.argv[2])) if not r["op"].startswith("(")]
drysum = sum(float(r["dry_modeled_s"]) for r in rows)
ok = abs(drysum - dry["compute_s"]) <= 1e-6 * dry["compute_s"]
ok = ok and all(float(r["measured_s"]) > 0 and float(r["modeled_s"]) > 0 for r in rows if int(r["calls_per_step"]) > 0)
ok = ok and {r["class"] for r in rows if int(r["calls_per_step"]) > 0} >= {"gemm", "attention", "memory"}
print("ok" if ok else f"the dry records priced {drysum!r} vs the simulation's compute {dry['compute_s']!r}; rows {len(rows)}")
PY
)
if [ $rc = 0 ] && [ "$chk" = ok ] && grep -q "^all ops" <<<"$out" && grep -q "^trace gap: " <<<"$out"; then
    pass "measure_ops_prices_the_records_of_the_step_it_timed ($(grep -c , "$TMP/m.csv") rows)"
else fail measure_ops_prices_the_records_of_the_step_it_timed "exit $rc: $chk $(tail -2 <<<"$out")"; fi
expect_error measure_ops_one_rank_only "one rank only" 2 build/simulate experiments/boost-vs-baselines.yaml --variant boost \
    --hardware cpu-local --measure-ops 1
expect_error ops_csv_needs_measure_ops "--ops-csv goes with --measure-ops" 2 build/simulate experiments/boost-vs-baselines.yaml \
    --hardware cpu-local --ops-csv "$TMP/x.csv"
