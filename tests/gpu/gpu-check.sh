#!/usr/bin/env bash
# gpu-check.sh [--out DIR] [--budget SECONDS] — the device check: what a person with one
# NVIDIA GPU runs (make gpu-check, or tests/gpu/gpu-check.sh inside the unpacked bundle of
# make gpu-bundle). At most 8 minutes (--budget 480) of wall time; every section prints its
# elapsed time and is skipped (said so, never guessed) when the budget is spent.
#
#   1 machine      build/gpu_probe, nvidia-smi; no usable GPU: says why and stops (exit 0)
#   2 ops          the op table: every op CPU against CUDA, fp32 and bf16 (test_backend_ops --table)
#   3 parity       one step CUDA fp32 vs CPU fp32, bf16 within bounds, 16 BOOST switch
#                  combinations at tp 2 on one GPU vs tp 1 (tests/gpu/checks.sh)
#   4 curve        200 steps bf16 vs fp32
#   5 boost-c      tokens/s and MFU of dense, cola, svd at boost-1b, s 2048, bf16
#   6 pytorch      the same step in PyTorch, eager and torch.compile (analysis/torch_gpu_bench.py)
#   7 timing       every op's device time at the 1B shapes for the performance model
#                  (test_backend_ops --json: DIR/gpu-ops.json), and causal attention
#                  forward+backward at s 4096: boost-c's kernel (attention_bench) vs SDPA
#   8 summary      the throughput table against the issue's targets
# BOOST_GPU_TEST_DEVICE=cpu (tests/gpu/checks.sh) runs every section on the CPU, only to
# debug this script without a GPU (with TP_PRESET=tiny TP_SEQ=32 for a small shape).
# Writes DIR/gpu-check.json (every number above), DIR/gpu-ops.json (per-op times for the
# performance model), DIR/torch*.json (PyTorch's), DIR/gpu-check.log (the full output).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUTDIR=""; BUDGET=480
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUTDIR=$2; shift 2 ;;
        --budget) BUDGET=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu-check: unknown argument '$1' (--out DIR, --budget SECONDS)" >&2; exit 2 ;;
    esac
done
if [ -f "$ROOT/BUNDLE" ]; then   # inside the bundle: its wrappers, its libraries, its mpirun
    . "$ROOT/env.sh"
    export BUILD="$ROOT/build"
fi
OUTDIR=${OUTDIR:-$ROOT/build/gpu-check}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
source "$ROOT/tests/lib.sh"
source "$HERE/checks.sh"
exec > >(tee "$OUTDIR/gpu-check.log") 2>&1

T0=$(date +%s)
declare -A SEC_S            # section → seconds taken
elapsed() { echo $(( $(date +%s) - T0 )); }
# section NAME WANT_S: header, and GPU_DEADLINE = now + min(WANT_S, what is left of the budget)
section() {
    SEC_NAME=$1; SEC_T0=$(date +%s)
    local left=$(( BUDGET - $(elapsed) )) want=$2
    [ "$want" -gt "$left" ] && want=$left
    export GPU_DEADLINE=$(( SEC_T0 + want ))
    echo
    echo "== $1 (budget ${want} s; ${left} s of ${BUDGET} s left)"
    [ "$want" -gt 10 ]
}
section_end() {
    SEC_S[$SEC_NAME]=$(( $(date +%s) - SEC_T0 ))
    echo "-- $SEC_NAME: ${SEC_S[$SEC_NAME]} s (total $(elapsed) s)"
}
PY=python3   # the one with PyTorch (the GPU machine's first python3; Debian's here)
for p in python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1 && { PY=$p; break; }
done
GPU_PY=$(gpu_python || true)
json_rows=$TMP/rows.jsonl; : > "$json_rows"
emit() { echo "$1" >> "$json_rows"; }   # one JSON object per line, merged at the end

# ---- 1 machine -----------------------------------------------------------------------
section machine 10
echo "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); $( [ -f "$ROOT/BUNDLE" ] && sed -n '1,3p' "$ROOT/BUNDLE" | tr '\n' ' ' || echo "build $BUILD, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)")"
probe=$("$BUILD/gpu_probe" 2>&1); probe_rc=$?
echo "$probe"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | sed 's/^/nvidia-smi: /'
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' 2>/dev/null |
    sed 's/^/python: /' | grep . || echo "python: no PyTorch in $(command -v "$PY" || echo "$PY") (the pytorch section will say so)"
GPU_NAME=$(sed -nE 's/^  0: ([^,]*),.*/\1/p' <<<"$probe")
section_end
if [ $probe_rc -ne 0 ] && [ "$GPU_DEVICE" = cuda ]; then
    echo
    echo "gpu-check: no GPU ($(sed -n 's/^usable: no: //p' <<<"$probe")): nothing to measure; every section skipped."
    for s in ops parity curve boost-c pytorch timing; do skip "gpu_check_$s" "no GPU"; done
    exit 0
fi
[ -n "$GPU_PY" ] || echo "note: no python3 with h5py and numpy: the parity comparisons will fail"

# ---- 2 op table ------------------------------------------------------------------------
if section ops 45; then
    if [ -x "$BUILD/test_backend_ops" ]; then
        timeout $(( GPU_DEADLINE - $(date +%s) )) "$BUILD/test_backend_ops" ${OPS_ARGS:---table} > "$OUTDIR/ops.txt" 2>&1; rc=$?
        cat "$OUTDIR/ops.txt"
        echo "op test: exit $rc, $(grep -c '^PASS ' "$OUTDIR/ops.txt") passed, $(grep -c '^FAIL ' "$OUTDIR/ops.txt") failed, $(grep -c '^SKIP ' "$OUTDIR/ops.txt") skipped"
    else
        skip gpu_check_ops "$BUILD/test_backend_ops not in this build"
    fi
else skip gpu_check_ops "budget spent"; fi
section_end

# ---- 3 parity --------------------------------------------------------------------------
if section parity 135; then
    check_step_fp32 | tee "$TMP/parity.txt"
    check_step_bf16 | tee -a "$TMP/parity.txt"
    check_switches_tp2 | tee -a "$TMP/parity.txt"
else skip gpu_check_parity "budget spent"; fi
section_end

# ---- 4 bf16 curve ----------------------------------------------------------------------
if section curve 50; then
    check_bf16_curve | tee "$TMP/curve.txt"
else skip gpu_check_curve "budget spent"; fi
section_end

# ---- 5 boost-c throughput ----------------------------------------------------------------
# build/train on the 1B shape, synthetic data; stopped (SIGKILL, by its pid) once it has
# printed WARM + MEAS step lines: a 1B model's final checkpoint would take minutes.
TP_PRESET=${TP_PRESET:-boost-1b}; TP_SEQ=${TP_SEQ:-2048}; TP_BATCH=${TP_BATCH:-4}; WARM=3; MEAS=6
peak_bf16() {  # dense bf16 TFLOP/s by device name (datasheet), as torch_gpu_bench.py
    case "$GPU_NAME" in *H200*|*H100\ SXM*|*H100\ 80GB\ HBM3*) echo 989.4 ;; *H100\ PCIe*) echo 756 ;; *H100*) echo 989.4 ;;
        *A100*) echo 312 ;; *L40S*) echo 362.1 ;; *) echo 0 ;; esac
}
boostc_run() {  # KIND → "kind ms_median tok_s flops_per_token" on stdout
    local kind=$1 log="$TMP/tp-$1.log"
    cat > "$TMP/tp.yaml" <<YAML
model: {preset: $TP_PRESET, linear: $kind, seq_len: $TP_SEQ}
data: {dataset: synthetic, cache_dir: $TMP/cache}
train: {batch_size: $TP_BATCH, steps: 1000, warmup_steps: 0, log_every: 1, val_every: 0, threads: 4}
run: {checkpoint_dir: $TMP/tp-ckpt}
YAML
    : > "$log"   # exists before the loop below reads it (the child opens it later)
    "$BUILD/train" "$TMP/tp.yaml" --no-db $(dev_args bf16) > "$log" 2>&1 &
    local pid=$!
    while kill -0 $pid 2>/dev/null; do
        [ "$(grep -c '^step ' "$log")" -ge $((WARM + MEAS)) ] && break
        [ "$(date +%s)" -ge "$GPU_DEADLINE" ] && break
        sleep 0.5
    done
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    local fpt ms
    fpt=$(sed -nE 's/.*train FLOPs\/token ([0-9.e+]+).*/\1/p' "$log" | head -1)
    ms=$(sed -nE 's/^step +[0-9]+\/[0-9]+ \|.*\| +([0-9.]+) ms \|.*/\1/p' "$log" | tail -n +$((WARM + 1)) | sort -g |
         awk '{a[NR]=$1} END {if (NR) print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}')
    if [ -z "$ms" ] || [ -z "$fpt" ]; then
        echo "boost-c $kind: no timed steps ($(grep -E 'error|hint' "$log" | head -2 | tr '\n' ' ')$(tail -2 "$log" | tr '\n' ' '))" >&2
        return 1
    fi
    awk -v k="$kind" -v ms="$ms" -v f="$fpt" -v tok=$((TP_BATCH * TP_SEQ)) 'BEGIN { printf "%s %.3f %.1f %s\n", k, ms, tok / (ms / 1e3), f }'
}
PEAK=$(peak_bf16)
if section boost-c 70; then
    echo "boost-c: $TP_PRESET, batch $TP_BATCH x seq $TP_SEQ, bf16, median of $MEAS steps after $WARM (peak for MFU: ${PEAK} TFLOP/s bf16, $GPU_NAME)"
    : > "$TMP/boostc.txt"
    for kind in dense cola svd; do
        if [ $(( GPU_DEADLINE - $(date +%s) )) -le 10 ]; then skip "gpu_check_boostc_$kind" "budget spent"; continue; fi
        if r=$(boostc_run $kind); then
            echo "$r" >> "$TMP/boostc.txt"
            read -r k ms toks fpt <<<"$r"
            mfu=$(awk -v t="$toks" -v f="$fpt" -v p="$PEAK" 'BEGIN { if (p > 0) printf "%.1f%%", 100 * t * f / (p * 1e12); else print "n/a" }')
            printf '  %-6s %9.2f ms/step %10.0f tok/s  MFU %s\n' "$k" "$ms" "$toks" "$mfu"
            emit "{\"section\": \"boost-c\", \"kind\": \"$k\", \"ms_per_step\": $ms, \"tokens_per_s\": $toks, \"flops_per_token\": $fpt, \"peak_tflops\": $PEAK}"
        fi
    done
else skip gpu_check_boostc "budget spent"; fi
section_end

# ---- 6 PyTorch eager and torch.compile ----------------------------------------------------
if section pytorch 120; then
    PYTHONUNBUFFERED=1 timeout $(( GPU_DEADLINE - $(date +%s) + 5 )) "$PY" "$ROOT/analysis/torch_gpu_bench.py" \
        --preset "$TP_PRESET" --seq "$TP_SEQ" --batch "$TP_BATCH" --precision bf16 --modes eager,compile \
        --steps $MEAS --warmup $WARM $([ "$GPU_DEVICE" = cuda ] && echo --gemm) --device "$([ "$GPU_DEVICE" = cpu ] && echo cpu || echo cuda)" --budget $(( GPU_DEADLINE - $(date +%s) - 15 )) \
        --json "$OUTDIR/torch.json" || echo "torch_gpu_bench.py: exit $?"
else skip gpu_check_pytorch "budget spent"; fi
section_end

# ---- 7 per-op times, flash attention vs SDPA ----------------------------------------------
if section timing 45; then
    if [ -x "$BUILD/test_backend_ops" ]; then
        timeout 25 "$BUILD/test_backend_ops" --json "$OUTDIR/gpu-ops.json" --sizes "${OPS_SIZES:-1b}" 2>&1 | tail -40
    else
        skip gpu_check_op_times "$BUILD/test_backend_ops not in this build"
    fi
    dev=$([ "$GPU_DEVICE" = cpu ] && echo cpu || echo cuda)
    timeout 15 "$BUILD/attention_bench" --device "$dev" --precision bf16 --shape ${ATTN_SHAPE:-2 32 4096 64} \
        --json "$OUTDIR/attention.json" 2>&1
    PYTHONUNBUFFERED=1 timeout 20 "$PY" "$ROOT/analysis/torch_gpu_bench.py" --modes "" --attention \
        --attn-shape ${ATTN_SHAPE:-2 32 4096 64} --device "$dev" --precision bf16 --json "$OUTDIR/torch-attention.json" \
        || echo "torch attention: exit $?"
else skip gpu_check_timing "budget spent"; fi
section_end

# ---- 8 summary -----------------------------------------------------------------------------
echo
echo "== summary ($TP_PRESET, batch $TP_BATCH x seq $TP_SEQ, bf16, $GPU_NAME; targets from the CUDA issue)"
"$PY" - "$TMP/boostc.txt" "$OUTDIR/torch.json" "$OUTDIR/attention.json" "$OUTDIR/torch-attention.json" "$PEAK" <<'PY'
import json, os, sys
bc_path, torch_path, battn_path, attn_path, peak = sys.argv[1:6]
peak = float(peak)
bc = {}
if os.path.exists(bc_path):
    for line in open(bc_path):
        k, ms, toks, fpt = line.split()
        bc[k] = {"ms": float(ms), "toks": float(toks), "fpt": float(fpt)}
tr = {}
if os.path.exists(torch_path):
    for r in json.load(open(torch_path)).get("results", []):
        tr[(r["kind"], r["mode"])] = r
def f(x, fmt):
    return format(x, fmt) if x is not None else "-"
print(f"{'kind':<6} {'boost-c tok/s':>13} {'MFU':>6} {'eager tok/s':>12} {'MFU':>6} {'compile tok/s':>14} {'MFU':>6} {'bc/eager':>9} {'bc/compile':>11}")
for k in ("dense", "cola", "svd"):
    b, e, c = bc.get(k), tr.get((k, "eager")), tr.get((k, "compile"))
    bm = b["toks"] * b["fpt"] / (peak * 1e12) if b and peak else None
    se = b["ms"] / e["ms_per_step"] if b and e else None
    sc = b["ms"] / c["ms_per_step"] if b and c else None
    print(f"{k:<6} {f(b and b['toks'], '13.0f')} {f(bm and 100 * bm, '5.1f')}% {f(e and e['tokens_per_s'], '12.0f')} "
          f"{f(e and e['mfu'] and 100 * e['mfu'], '5.1f')}% {f(c and c['tokens_per_s'], '14.0f')} {f(c and c['mfu'] and 100 * c['mfu'], '5.1f')}% "
          f"{f(se, '8.2f')}x {f(sc, '10.2f')}x")
print("(bc/eager, bc/compile: boost-c's step time over PyTorch's; below 1 is faster)")
def target(name, ok, detail):
    print(f"  target {name}: {'met' if ok else 'NOT met' if ok is not None else 'not measured'} ({detail})")
b, e, c = bc.get("cola"), tr.get(("cola", "eager")), tr.get(("cola", "compile"))
target("CoLA bf16 step <= 0.8x eager", b and e and b["ms"] <= 0.8 * e["ms_per_step"] if b and e else None,
       f"{b['ms'] / e['ms_per_step']:.2f}x" if b and e else "missing")
target("CoLA bf16 step <= 1.0x torch.compile", b and c and b["ms"] <= c["ms_per_step"] if b and c else None,
       f"{b['ms'] / c['ms_per_step']:.2f}x" if b and c else "missing")
d = bc.get("dense")
dm = d["toks"] * d["fpt"] / (peak * 1e12) if d and peak else None
target("dense MFU >= 50%", dm >= 0.5 if dm is not None else None, f"{100 * dm:.1f}%" if dm is not None else "missing")
fa = sd = None
if os.path.exists(battn_path):
    fa = json.load(open(battn_path)).get("ms_forward_backward")
if os.path.exists(attn_path):
    sd = json.load(open(attn_path)).get("attention", {}).get("ms_forward_backward")
target("flash attention fwd+bwd <= 1.5x SDPA at s 4096", fa <= 1.5 * sd if fa and sd else None,
       f"boost-c {fa:.3f} ms vs SDPA {sd:.3f} ms = {fa / sd:.2f}x" if fa and sd else f"boost-c {fa}, SDPA {sd}")
PY

# everything in one JSON
"$PY" - "$json_rows" "$OUTDIR" "$(elapsed)" "$GPU_NAME" <<'PY' || true
import json, os, sys
rows, outdir, total, gpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
out = {"gpu": gpu, "wall_s": total, "boost_c": [json.loads(l) for l in open(rows) if l.strip()]}
for name, key in (("torch.json", "pytorch"), ("torch-attention.json", "pytorch_attention"),
                  ("attention.json", "attention"), ("gpu-ops.json", "ops")):
    p = os.path.join(outdir, name)
    if os.path.exists(p):
        out[key] = json.load(open(p))
log = open(os.path.join(outdir, "gpu-check.log")).read().splitlines()
out["checks"] = [l for l in log if l.startswith(("PASS ", "FAIL ", "SKIP "))]
json.dump(out, open(os.path.join(outdir, "gpu-check.json"), "w"), indent=1)
PY
echo
echo "sections: $(for s in machine ops parity curve boost-c pytorch timing; do printf '%s %ss  ' "$s" "${SEC_S[$s]:-0}"; done)"
echo "gpu-check: $(elapsed) s of the ${BUDGET} s budget; $(grep -c '^PASS ' "$OUTDIR/gpu-check.log") passed, $(grep -c '^FAIL ' "$OUTDIR/gpu-check.log") failed, $(grep -c '^SKIP ' "$OUTDIR/gpu-check.log") skipped; files in $OUTDIR"
