#!/usr/bin/env bash
# The performance model as a user meets it (docs/performance-model.md, docs/reproduction.md):
# make exp SIMULATE=1 records simulated runs in the run database; build/simulate --json and
# --gemm; the GPU calibration from a make gpu-check JSON (a synthetic one in the documented
# format: no GPU here); make reproduce writes every figure, CSV and the report.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
DB=$TMP/sim.db
SETS=(--set run.db="$DB")

# ---- make exp SIMULATE=1: one launch of simulated runs ----------------------------------------
out=$(make -s exp EXP=ablation-btp SIMULATE=1 HARDWARE=cpu-local "SET=run.db=$DB" 2>&1); rc=$?
row=$(sqlite3 "$DB" "SELECT kind || '|' || hardware || '|' || runs || '|' || completed FROM launch_summary" 2>&1)
if [ $rc = 0 ] && [ "$row" = "simulated|cpu-local|4|4" ] && grep -q "SIMULATED on hardware profile cpu-local" <<<"$out"; then
    pass "make_exp_simulate_records_a_launch (4 variants, on-demand ones included)"
else fail make_exp_simulate_records_a_launch "exit $rc, launch '$row': $(tail -3 <<<"$out")"; fi
# every simulated run: kind, hardware, one timed step, its simulation row, the split adding up
q=$(sqlite3 "$DB" "SELECT COUNT(*) FROM run_summary r JOIN simulation s ON s.run_id = r.run_id
                   WHERE r.kind = 'simulated' AND r.hardware = 'cpu-local' AND r.timed_steps = 1 AND r.final_loss IS NULL
                   AND ABS(r.mean_ms_per_step - 1000 * s.step_seconds) < 1e-6 * r.mean_ms_per_step
                   AND ABS(s.compute_seconds + s.comm_seconds + s.p2p_seconds + s.bubble_seconds - s.step_seconds) < 1e-6 * s.step_seconds")
[ "$q" = 4 ] && pass simulated_runs_rows || fail simulated_runs_rows "$q of 4 runs consistent"
# the tp 2 BTP run's communication rows: counted exactly, modeled seconds; every rank's totals
q=$(sqlite3 "$DB" "SELECT SUM(c.calls) || '|' || (SUM(c.seconds) > 0) || '|' || (SELECT COUNT(*) FROM comm_ranks k WHERE k.run_id = r.id)
                   FROM runs r JOIN comm c ON c.run_id = r.id WHERE r.variant = 'btp' AND c.layer = 1 AND c.phase = 'forward'")
# (ablation-btp's BTP is ungrouped with SyncRMSNorm: 9 all-reduces per layer forward, docs/boost.md §5)
[ "$q" = "9|1|2" ] && pass simulated_comm_rows || fail simulated_comm_rows "layer 1 forward calls|seconds>0|ranks = '$q', expected 9|1|2"
q=$(sqlite3 "$DB" "SELECT COUNT(*) FROM memory m JOIN runs r ON r.id = m.run_id WHERE r.variant = 'btp'
                   AND m.category IN ('parameters','gradients','optimizer','activations')")
[ "$q" = 4 ] && pass simulated_memory_rows || fail simulated_memory_rows "$q categories"
out=$(build/exp ablation-btp --summary "${SETS[@]}" 2>&1)
grep -qE '^btp +1/1 +1 +- +- +[0-9.]+ +- ' <<<"$out" && pass simulated_launch_summary_table \
    || fail simulated_launch_summary_table "$(grep -E '^btp ' <<<"$out")"

# ---- simulate --record --launch joins only a launch of its own experiment, manifest, kind, hardware --
# (store/db.h rundb_launch_joinable, train's rule). Generated: copies of the simulated launch, each
# with one field changed, ids that are not there, and ids that are no id; each refused by exit 2
# naming what the launch is, with the database unchanged.
L=$(sqlite3 "$DB" "SELECT MAX(id) FROM launches")
mk_launch() {   # SET-CLAUSE: a copy of launch $L with that change; prints its id
    sqlite3 "$DB" "CREATE TEMP TABLE t AS SELECT * FROM launches WHERE id = $L;
                   UPDATE t SET id = (SELECT MAX(id) + 1 FROM launches), $1;
                   INSERT INTO launches SELECT * FROM t; SELECT MAX(id) FROM launches"
}
cases=()
for change in "experiment = 'quickstart'|is of experiment quickstart, kind simulated on cpu-local" \
              "kind = 'measured'|kind measured; this run is of experiment ablation-btp, kind simulated" \
              "hardware = 'a100-80gb-node4'|kind simulated on a100-80gb-node4; this run" \
              "manifest_sha256 = 'ab'|its manifest text differs"; do
    cases+=("$(mk_launch "${change%%|*}")|${change#*|}")
done
for id in $((L + 100)) 999999 9223372036854775807; do cases+=("$id|has no launch $id"); done
for id in 0 -1 abc 1x "" 9223372036854775808 " "; do cases+=("$id|simulate --launch"); done
sqlite3 "$DB" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
before=$(sqlite3 "$DB" .dump | md5sum)
n=0 bad=()
for c in "${cases[@]}"; do
    id=${c%%|*} want=${c#*|}
    out=$(timeout 60 build/simulate experiments/ablation-btp.yaml --variant btp --hardware cpu-local "${SETS[@]}" \
          --record --launch "$id" 2>&1 >/dev/null); rc=$?
    n=$((n + 1))
    if [ $rc != 2 ] || ! grep -qF -- "$want" <<<"$out" || grep -qi "FOREIGN KEY" <<<"$out"; then
        bad+=("--launch '$id': exit $rc, wanted '$want': $(grep -m1 error <<<"$out")")
    elif [[ "$want" != "simulate --launch" ]] && ! grep -qF "launch_summary" <<<"$out"; then
        bad+=("--launch '$id': no hint listing the launches: $(head -c 300 <<<"$out")")
    fi
done
after=$(sqlite3 "$DB" .dump | md5sum)
if [ ${#bad[@]} = 0 ] && [ "$before" = "$after" ]; then pass "simulate_record_refuses_a_launch_it_may_not_join ($n cases)"
else fail simulate_record_refuses_a_launch_it_may_not_join "${#bad[@]} of $n: $(printf '%s; ' "${bad[@]}")database changed: $([ "$before" = "$after" ] && echo no || echo yes)"; fi
sqlite3 "$DB" "DELETE FROM launches WHERE id > $L"

expect_error simulate_refuses_repeat "a simulation is deterministic" 2 build/exp ablation-btp --simulate cpu-local --repeat 2 "${SETS[@]}"
expect_error simulate_refuses_resume "nothing to resume" 2 build/exp ablation-btp --simulate cpu-local --resume "${SETS[@]}"
expect_error simulate_unknown_profile "experiments/hardware/no-such.yaml" 2 build/exp ablation-btp --simulate no-such "${SETS[@]}"
# an fp32 variant on a bf16-only GPU profile: priced as the bf16 run it is on GPUs, with one
# note, and recorded so (make exp EXP=ablation-online-rmsnorm SIMULATE=1 as documented)
out=$(build/exp ablation-btp --simulate a100-80gb-node4 --variant btp "${SETS[@]}" 2>&1); rc=$?
prec=$(sqlite3 "$DB" "SELECT s.precision || '|' || r.precision FROM simulation s JOIN run_summary r ON r.run_id = s.run_id
                      ORDER BY s.run_id DESC LIMIT 1")
if [ $rc = 0 ] && [ "$(grep -c "priced as bf16" <<<"$out")" = 1 ] && [ "$prec" = "bf16|bf16" ]; then pass simulate_fp32_on_a_gpu_profile_priced_as_bf16
else fail simulate_fp32_on_a_gpu_profile_priced_as_bf16 "exit $rc, precision '$prec': $(grep -m1 "error\|note" <<<"$out")"; fi
# HARDWARE reaches the shell as one quoted word: a payload runs nothing
make -s exp EXP=quickstart SIMULATE=1 "HARDWARE=\$\$(touch $TMP/hit-1)" "SET=run.db=$DB" >"$TMP/payload.log" 2>&1
if [ ! -e "$TMP/hit-1" ] && grep -qF "\$\$(touch $TMP/hit-1)" "$TMP/payload.log"; then pass make_hardware_payload_is_literal
else fail make_hardware_payload_is_literal "$(head -2 "$TMP/payload.log")"; fi

# ---- the stages' tails joined at their calls over stages (docs/performance-model.md §21) --------
# pp 2 and pp 4 with 2 and 8 micro-batches: every stage's parts (its wait inside the joining calls part of
# its comm) add up to the step; some stage waits; the step's split keeps the busiest stage's wait
# in the bubble; an interleaved schedule shrinks that stage's idle time and its wait together.
for lay in "2 2 4" "4 8 8"; do
    set -- $lay
    a=(experiments/boost-vs-baselines.yaml --variant boost --hardware cpu-local --set parallel.tp=1 --set parallel.pp=$1
       --set train.grad_accum=$2 --set train.batch_size=$((8 * $2)) --set model.n_layers=$3)
    if build/simulate "${a[@]}" --json "$TMP/j1.json" >"$TMP/j.log" 2>&1 &&
       build/simulate "${a[@]}" --virtual-stages 2 --json "$TMP/j2.json" >>"$TMP/j.log" 2>&1; then
        chk=$(/usr/bin/python3 - "$TMP/j1.json" "$TMP/j2.json" <<'EOF'
import json, sys
d, v = (json.load(open(f)) for f in sys.argv[1:3])
step, st = d["step"], d["stages"]
bad = []
for s in st:
    if abs(s["compute_s"] + s["comm_s"] + s["xfer_s"] + s["idle_s"] - step["seconds"]) > 1e-9 * step["seconds"]:
        bad.append(f"stage {s['stage']}'s parts do not add up to the step")
    if s["sync_wait_s"] < 0 or s["sync_wait_s"] > s["comm_s"]:
        bad.append(f"stage {s['stage']}: its wait {s['sync_wait_s']} is not part of its comm {s['comm_s']}")
if not any(s["sync_wait_s"] > 0 for s in st):
    bad.append("no stage waits at the loss's sum")
c = st[step["critical_stage"]]
if abs(step["comm_s"] - (c["comm_s"] - c["sync_wait_s"])) > 1e-12 * step["seconds"]:
    bad.append("the step's split books the busiest stage's wait as communication")
want = step["seconds"] - 0.5 * (c["idle_s"] + c["sync_wait_s"]) + c["xfer_s"]
if abs(v["step"]["seconds"] - want) > 1e-9 * want:
    bad.append(f"interleaved step {v['step']['seconds']} s, want {want} s (idle and wait shrunk together)")
print("; ".join(bad) or "ok")
EOF
)
        [ "$chk" = ok ] && pass "simulate_tails_join_pp$1" || fail "simulate_tails_join_pp$1" "$chk"
    else fail "simulate_tails_join_pp$1" "$(tail -3 "$TMP/j.log")"; fi
done

# ---- build/simulate --json: the report adds up -----------------------------------------------
if build/simulate experiments/paper-ablations.yaml --variant btp-online-grouped --hardware a100-80gb-node4 --trace-layer 3 \
        --json "$TMP/r.json" >"$TMP/r.log" 2>&1; then
    chk=$(/usr/bin/python3 - "$TMP/r.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["step"]
ok = abs(s["compute_s"] + s["comm_s"] + s["p2p_s"] + s["bubble_s"] - s["seconds"]) <= 1e-9 * s["seconds"]
lt = d["layer_trace"]
layer = next(l for l in d["stages"][lt["stage"]]["layers"] if l["layer"] == lt["layer"])
for ph in ("forward", "backward"):
    ev = [e for e in lt["events"] if e["phase"] == ph]
    c = sum(e["seconds"] for e in ev if e["type"] == "op")
    m = sum(e["seconds"] for e in ev if e["type"] == "comm")
    ok &= abs(c - layer[ph][0]) <= 1e-9 * c and abs(m - layer[ph][1]) <= 1e-9 * max(m, 1e-12)
ok &= lt["layer"] == 3 and d["grid"]["tp"] == 4 and d["hardware"]["name"] == "a100-80gb-node4"
ok &= sum(1 for e in lt["events"] if e["type"] == "comm" and e["phase"] == "forward") == 4   # BTP grouped, online: 4 ARs
print("ok" if ok else "bad")
EOF
)
    [ "$chk" = ok ] && pass simulate_json_adds_up || fail simulate_json_adds_up "$chk"
else fail simulate_json_adds_up "exit: $(tail -2 "$TMP/r.log")"; fi
g=$(build/simulate --hardware a100-80gb-node4 --gemm 16384,16384,16384 2>&1)   # the profile's pin: Azure's cuBLASLt maximum
/usr/bin/python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if abs(d['flop_per_s']/256.5e12-1)<1e-9 else 1)" "$g" \
    && pass simulate_gemm_gives_the_mamf_back || fail simulate_gemm_gives_the_mamf_back "$g"
expect_error simulate_gemm_bad_shape "expected M,N,K" 2 build/simulate --hardware a100-80gb-node4 --gemm 1024,x,5

# ---- a GPU profile from a make gpu-check JSON (synthetic, in test_backend_ops --json's format) --
cat >"$TMP/gpu-ops.json" <<'EOF'
{
  "device": "Synthetic GPU", "reps": 5, "tf32": 0,
  "records": [
    {"op": "gemm", "case": "gemm NN 8192x2048x2048", "size": "1b", "dtype": "bf16", "ms": 0.4, "flops": 68719476736, "bytes": 100663296, "M": 8192, "N": 2048, "K": 2048, "count": 1},
    {"op": "gemm", "case": "gemm NN 8192x512x2048", "size": "1b", "dtype": "bf16", "ms": 0.2, "flops": 17179869184, "bytes": 44040192, "M": 8192, "N": 512, "K": 2048, "count": 1},
    {"op": "gemm_group", "case": "group", "size": "1b", "dtype": "bf16", "ms": 0.3, "flops": 51539607552, "bytes": 1e8, "M": 8192, "N": 512, "K": 2048, "count": 3},
    {"op": "attention_forward", "case": "attention fwd", "size": "1b", "dtype": "bf16", "ms": 2.0, "flops": 300e9, "bytes": 1e8, "M": 0, "N": 0, "K": 0, "count": 1},
    {"op": "attention_backward", "case": "attention bwd", "size": "1b", "dtype": "bf16", "ms": 6.0, "flops": 600e9, "bytes": 2e8, "M": 0, "N": 0, "K": 0, "count": 1},
    {"op": "silu_forward", "case": "silu", "size": "1b", "dtype": "bf16", "ms": 0.05, "flops": 1e8, "bytes": 2e8, "M": 0, "N": 0, "K": 0, "count": 1},
    {"op": "add", "case": "add", "size": "1b", "dtype": "bf16", "ms": 0.06, "flops": 1e7, "bytes": 2.4e8, "M": 0, "N": 0, "K": 0, "count": 1},
    {"op": "silu_forward", "case": "silu", "size": "small", "dtype": "bf16", "ms": 0.010, "flops": 1e6, "bytes": 2e7, "M": 0, "N": 0, "K": 0, "count": 1},
    {"op": "add", "case": "add", "size": "small", "dtype": "bf16", "ms": 0.012, "flops": 1e6, "bytes": 2.4e7, "M": 0, "N": 0, "K": 0, "count": 1},
    {"op": "gemm", "case": "fp32 gemm", "size": "1b", "dtype": "fp32", "ms": 10.0, "flops": 68719476736, "bytes": 1e8, "M": 8192, "N": 2048, "K": 2048, "count": 1}
  ]
}
EOF
if /usr/bin/python3 analysis/calibrate_gpu.py "$TMP/gpu-ops.json" --base h200-1 --name synth-gpu --out "$TMP/synth-gpu.yaml" >"$TMP/cg.log" 2>&1; then
    # memory: median of 4.0 and 4.0 TB/s over 4.8 TB/s; overhead: median of (10 us - 5 us, 12 us - 6 us) = 5.5 us;
    # the model adds that overhead to every op, so the roofline is pinned on the time without it:
    # mamf = the fastest bf16 GEMM, 68.72 GFLOP / (0.4 ms - 5.5 us); attention 300 GFLOP / (2 ms - 5.5 us)
    # and 600 GFLOP / (6 ms - 5.5 us) over 989 TFLOP/s; simulate gives the measured 171.8 TFLOP/s back
    chk=$(/usr/bin/python3 - "$TMP/synth-gpu.yaml" <<'EOF'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
g = p["gemm"]["bf16"]; a = p["attention"]["bf16"]; pk = p["peak_flops"]["bf16"]
ok = abs(g["mamf"] / (68719476736 / (0.4e-3 - 5.5e-6)) - 1) < 1e-5 and g["mamf_shape"] == [8192, 2048, 2048]
ok &= abs(a["forward"] - 300e9 / (2e-3 - 5.5e-6) / pk) < 1e-5 and abs(a["backward"] - 600e9 / (6e-3 - 5.5e-6) / pk) < 1e-5
ok &= abs(p["memory_efficiency"] - 4e12 / p["memory_bandwidth"]) < 1e-5 and abs(p["op_overhead_s"] - 5.5e-6) < 1e-9
ok &= p["name"] == "synth-gpu" and p["device"] == "Synthetic GPU" and p["links"] == yaml.safe_load(open("experiments/hardware/h200-1.yaml"))["links"]
print("ok" if ok else f"bad {g} {a} {p['memory_efficiency']} {p['op_overhead_s']}")
EOF
)
    g=$(build/simulate --hardware "$TMP/synth-gpu.yaml" --gemm 8192,2048,2048 2>&1)
    back=$(/usr/bin/python3 -c "import json,sys; print(round(json.loads(sys.argv[1])['flop_per_s']/1e12, 3))" "$g" 2>&1)
    if [ "$chk" = ok ] && [ "$back" = "171.799" ]; then pass calibrate_gpu_from_synthetic_json
    else fail calibrate_gpu_from_synthetic_json "$chk; simulate gives $back TFLOP/s at the mamf shape"; fi
    build/simulate experiments/paper-1gpu.yaml --variant cola --hardware "$TMP/synth-gpu.yaml" >"$TMP/cg2.log" 2>&1 \
        && pass calibrated_gpu_profile_prices_a_recipe || fail calibrated_gpu_profile_prices_a_recipe "$(tail -2 "$TMP/cg2.log")"
else fail calibrate_gpu_from_synthetic_json "$(tail -3 "$TMP/cg.log")"; fi
echo '{"skipped": "built without CUDA (CUDA=0 or no nvcc)"}' >"$TMP/skipped.json"
expect_error calibrate_gpu_refuses_a_skipped_run "the GPU timing was skipped" 2 \
    /usr/bin/python3 analysis/calibrate_gpu.py "$TMP/skipped.json" --base h200-1 --name x --out "$TMP/x.yaml"
echo '{"device": "d", "records": [{"op": "gemm", "ms": 1}]}' >"$TMP/short.json"
expect_error calibrate_gpu_refuses_a_malformed_record "record 0 lacks" 2 \
    /usr/bin/python3 analysis/calibrate_gpu.py "$TMP/short.json" --base h200-1 --name x --out "$TMP/x.yaml"

# ---- one schedule: the simulator runs the trainer's micro-batch loop (train/step_loop.c), so its
# pipeline messages are sized like the trainer's (model_stage_elems): LaX's latents travel too
for v in lax-boost cola-boost; do
    build/simulate experiments/paper-architectures.yaml --variant $v --hardware a100-80gb-node4 --set parallel.pp=2 \
        --set model.tie_embeddings=false --json "$TMP/pp_$v.json" >/dev/null 2>&1
done
r=$(/usr/bin/python3 -c "import json,sys; a,b=(json.load(open(f))['step']['p2p_s'] for f in sys.argv[1:]); print(f'{a/b:.2f}')" \
    "$TMP/pp_lax-boost.json" "$TMP/pp_cola-boost.json" 2>&1)
awk -v r="$r" 'BEGIN { exit !(r + 0 > 2) }' && pass "simulate_pipeline_messages_carry_lax_latents (LaX/CoLA p2p time $r)" ||
    fail simulate_pipeline_messages_carry_lax_latents "LaX/CoLA pipeline transfer time ratio '$r' (the latents must travel)"

# ---- the bands: one constant at a time, and jointly to first order (the swings added) -----------
out=$(cd analysis && /usr/bin/python3 -c '
import reproduction_bands as rb
runs = [("a", "lo", {"x": 0.9, "y": 2.0}), ("a", "hi", {"x": 1.2, "y": 2.0}), ("b", "l", {"x": 0.95, "y": 2.5})]
b, j = rb.bands({"x": 1.0, "y": 2.0}, runs), rb.joint_bands({"x": 1.0, "y": 2.0}, runs)
assert b["x"] == (0.9, 1.2, "a") and b["y"] == (2.0, 2.5, "b"), b
assert abs(j["x"][0] - 0.85) < 1e-12 and abs(j["x"][1] - 1.2) < 1e-12 and j["y"] == (2.0, 2.5), j
print("ok")' 2>&1)
[ "$out" = ok ] && pass bands_one_at_a_time_and_joint || fail bands_one_at_a_time_and_joint "$out"

# ---- make reproduce: every figure, CSV and the report ------------------------------------------
# (--no-bands: the sweep over the chosen constants prices everything 11 more times, minutes here;
# the bands are the same code on more profiles)
if /usr/bin/python3 analysis/reproduce.py --no-bands --out "$TMP/repro" >"$TMP/rep.log" 2>&1; then
    missing=""
    for f in REPORT.md fig1.png fig1.csv fig5.png fig5.csv fig6.png fig6.csv fig7.png fig7.csv tab2.csv tab3.csv rmsnorm.csv ladder.csv r30b.csv bands.csv published.csv sp.png sp.csv; do
        [ -s "$TMP/repro/$f" ] || missing+=" $f"
    done
    head=$(head -1 "$TMP/repro/fig5.csv")
    rows=$(($(wc -l <"$TMP/repro/fig5.csv") - 1))
    # 15 weak-scaling rows and the architectures panel's SVD and LaX (its CoLA bars are the 7B rows: once)
    if [ -z "$missing" ] && [ "$head" = "size,arch,scheme,gpus,tp,pp,paper_s,paper_provenance,model_s,model_lo,model_hi,measured_s,fits_in_memory" ] &&
       [ "$rows" = 21 ] && grep -q "## The reproduction's targets" "$TMP/repro/REPORT.md" && grep -q "modeled (a100-80gb-node4)" "$TMP/repro/REPORT.md"; then
        pass "reproduce_writes_every_figure_and_the_report ($rows Fig. 5 rows)"
    else fail reproduce_writes_every_figure_and_the_report "missing:$missing; header '$head'; $rows rows"; fi
    # every section carries its commit: each "## " heading is followed by a blank line and the stamp
    bad=$(awk '/^## /{h=$0; getline; getline; if ($0 !~ /^\*Section (generated|measured|from).*commit `/) print h}' "$TMP/repro/REPORT.md")
    n=$(grep -c '^## ' "$TMP/repro/REPORT.md")
    [ -z "$bad" ] && [ "$n" -ge 10 ] && pass "reproduce_stamps_every_section ($n sections)" || fail reproduce_stamps_every_section "unstamped: $bad"
    # regenerated byte-identically apart from the date line: a second run at the same commit
    before=$(git status --porcelain -- analysis/reproduction)
    if /usr/bin/python3 analysis/reproduce.py --no-bands --out "$TMP/repro2" --date "another date" >"$TMP/rep2.log" 2>&1; then
        diffs=""
        for f in "$TMP"/repro/*; do
            b=$(basename "$f")
            if [ "$b" = REPORT.md ]; then
                cmp -s <(grep -v '^Generated on ' "$f") <(grep -v '^Generated on ' "$TMP/repro2/$b") || diffs+=" $b"
                [ "$(grep -c '^Generated on ' "$TMP/repro2/$b")" = 1 ] || diffs+=" $b(date line)"
            else cmp -s "$f" "$TMP/repro2/$b" || diffs+=" $b"; fi
        done
        [ -z "$diffs" ] && [ "$before" = "$(git status --porcelain -- analysis/reproduction)" ] &&
            pass "reproduce_is_byte_identical_apart_from_the_date (and leaves the tracked copy alone)" ||
            fail reproduce_is_byte_identical_apart_from_the_date "differ:$diffs"
    else fail reproduce_is_byte_identical_apart_from_the_date "$(tail -3 "$TMP/rep2.log")"; fi
else fail reproduce_writes_every_figure_and_the_report "$(tail -3 "$TMP/rep.log")"; fi
