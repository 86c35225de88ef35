#!/usr/bin/env bash
# t_store.sh — step dumps and checkpoints as other tools see them: the documented
# names, shapes and dtypes read back with h5py (analysis/read_dump.py) and h5ls/h5dump.
source "$(dirname "$0")/lib.sh"
BIN=${STORE_TEST_BIN:-$BUILD/test_store}
[ -x "$BIN" ] || { fail t_store "$BIN not built (make)"; exit 1; }
PY=/usr/bin/python3
cd "$ROOT"

for kind in cola svd dense lax lax-svd-dense; do
    D=$TMP/dump_$kind.h5
    if ! out=$("$BIN" --write-dump "$D" $kind 2>&1); then fail "dump_write_$kind" "$out"; continue; fi
    expect_ok "dump_h5py_layout_$kind" $PY analysis/read_dump.py "$D" --quiet
done

# h5ls sees the documented paths, shapes and types
D=$TMP/dump_cola.h5
ls_out=$(h5ls -r "$D" 2>&1 | tr -s ' ')   # columns are padded: squeeze the blanks
ok=1
for want in "/model/layers/1/attn/q/A Dataset {32, 8}" "/grads/layers/0/mlp/down/B Dataset {8, 32}" \
            "/batch/inputs Dataset {4, 8}" "/activations/layers/0/gate_z Dataset {16, 8}" "/loss Dataset {SCALAR}" \
            "/model/final_norm Dataset {32}"; do
    grep -qF "$want" <<<"$ls_out" || { fail dump_h5ls "missing '$want'"; ok=0; }
done
[ $ok = 1 ] && pass dump_h5ls
if h5dump -a /format "$D" | grep -q '"boost-c step dump"' && h5dump -a /format_version "$D" | grep -q '(0): 1'; then
    pass dump_h5dump_attrs
else fail dump_h5dump_attrs "$(h5dump -A -N / "$D" | head -20)"; fi

# read_dump.py catches a violation (a float64 tensor, a missing one)
$PY - "$D" "$TMP/bad.h5" <<'PY'
import shutil, sys, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    x = f["model/final_norm"][()]; del f["model/final_norm"]; f["model/final_norm"] = x.astype(np.float64)
    del f["grads/layers/0/attn/k/A"]
PY
out=$($PY analysis/read_dump.py "$TMP/bad.h5" --quiet 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "final_norm has dtype float64" <<<"$out" && grep -q "grads/layers/0/attn/k/A missing" <<<"$out"; then
    pass dump_reader_detects_violations
else fail dump_reader_detects_violations "rc $rc: $out"; fi

# LaX (docs/lax.md): read_dump.py recomputes the crossing from the dumped activations, so a
# changed kron factor breaks h = a @ A + g(z_prev) and a changed LayerNorm gain z = σ(LN(h))
$PY - "$TMP/dump_lax.h5" "$TMP/bad_lax.h5" <<'PY'
import shutil, sys, h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    g = f["model/layers/1/mlp/up/lax_norm/gamma"]; x = g[()]; x[3] += 0.5; g[...] = x
    G = f["model/layers/1/attn/k/lax_gate/G2"]; y = G[()]; y[0, 1] += 0.5; G[...] = y
PY
out=$($PY analysis/read_dump.py "$TMP/bad_lax.h5" --quiet 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "layers/1/k_h != a @ A + g(z_prev)" <<<"$out" && grep -q "layers/1/up_z != σ(LN(up_h))" <<<"$out"; then
    pass dump_reader_checks_lax_crossing
else fail dump_reader_checks_lax_crossing "rc $rc: $out"; fi

# checkpoint: names, shapes, dtypes and attributes with h5py, the 5-line recipe of the doc
C=$TMP/ckpt/step_3.h5
if out=$("$BIN" --write-checkpoint "$C" cola 2>&1); then
    left=$(ls "$(dirname "$C")" | grep -v '^step_3.h5$')
    [ -z "$left" ] && pass ckpt_no_tmp_left || fail ckpt_no_tmp_left "left behind: $left"
    expect_ok ckpt_h5py_layout $PY - "$C" <<'PY'
import sys, zlib, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}   # fixed-length strings: bytes
    assert a["format"] == "boost-c checkpoint" and a["format_version"] == 2, dict(a)
    # the checksums of docs/checkpoint-format.md, recomputed with Python's zlib
    meta = ("step=%d\ntokens_seen=%d\nsamples_seen=%d\nseed=%d\noptimizer_step=%d\ngit_commit=%s\ncreated_at=%s\n"
            "manifest=%s\nconfig=%s\n" % (a["step"], a["tokens_seen"], a["samples_seen"], a["seed"],
            f["optimizer"].attrs["step"], a["git_commit"], a["created_at"], a["manifest"], a["config"]))
    assert zlib.crc32(meta.encode()) == a["meta_crc32"], "meta_crc32"
    assert f.userblock_size == 512, f.userblock_size
    def crc_ok(name, obj):
        if isinstance(obj, h5py.Dataset):
            assert zlib.crc32(obj[()].astype("<f4").tobytes()) == obj.attrs["crc32"], name
    f.visititems(crc_ok)
    assert (a["step"], a["tokens_seen"], a["samples_seen"], a["seed"]) == (3, 48, 6, 1), dict(a)
    assert a["manifest"] == "name: demo\n" and a["config"] == "{}" and a["git_commit"] == "unknown"
    assert f["optimizer"].attrs["step"] == 3
    names = []
    f["model"].visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    assert len(names) == 1 + 2 * (2 + 7 * 2) + 1 + 1, names     # embed, 2 layers, final_norm, lm_head
    for n in names:
        p, m, v = f["model/" + n], f["optimizer/m/" + n], f["optimizer/v/" + n]
        assert p.dtype == m.dtype == v.dtype == np.float32 and p.shape == m.shape == v.shape, n
    assert f["model/layers/0/attn/q/A"].shape == (32, 8) and f["model/layers/0/attn/k/B"].shape == (8, 16)
    assert f["model/layers/1/mlp/down/A"].shape == (48, 8) and f["model/lm_head"].shape == (32, 64)
    assert f["model/layers/0/input_norm"].shape == (32,) and np.all(f["model/layers/0/input_norm"][()] == 1)
raw = open(sys.argv[1], "rb").read()
block = dict(l.split(" ", 1) for l in raw[:512].rstrip(b"\0").decode().splitlines()[1:])
assert raw[:19] == b"boost-c checkpoint\n" and block["format_version"] == "2" and block["step"] == "3", block
assert int(block["size"]) == len(raw) and int(block["crc32"], 16) == zlib.crc32(raw[512:]), block
PY
    grep -qF "/optimizer/v/layers/1/mlp/gate/B Dataset {8, 48}" <<<"$(h5ls -r "$C" | tr -s ' ')" && pass ckpt_h5ls \
        || fail ckpt_h5ls "$(h5ls -r "$C" | head)"
else
    fail ckpt_write "$out"
fi

# ---- a full disk: a clean error naming the checkpoint and the cause, exit 2,
# no crash, no *.tmp.<pid> left, and the checkpoint written before still verifies.
# RLIMIT_FSIZE works anywhere (SIGXFSZ ignored: writes then fail with EFBIG); a real
# full file system (a 64 KiB tmpfs in a private mount namespace) where we may mount.
full_disk_case() {   # NAME DIR WRITE-PREFIX... : runs "$@ --write-checkpoint DIR/step_4.h5"
    local name=$1 dir=$2; shift 2
    local out rc
    out=$("$@" "$BIN" --write-checkpoint "$dir/step_4.h5" cola 2>&1); rc=$?
    if [ $rc -ne 2 ]; then fail "$name" "exit $rc (expected 2): $out"; return; fi
    grep -q "cannot write checkpoint $dir/step_4.h5: .*\(No space left on device\|File too large\).*partial file .*removed" <<<"$out" \
        || { fail "$name" "message: $out"; return; }
    local left; left=$(ls "$dir" | grep -v '^step_3.h5$')
    [ -z "$left" ] || { fail "$name" "left behind: $left"; return; }
    pass "$name"
}
D=$TMP/fsize; mkdir -p "$D"
"$BIN" --write-checkpoint "$D/step_3.h5" cola >/dev/null 2>&1
full_disk_case ckpt_full_disk_rlimit "$D" bash -c 'trap "" XFSZ; ulimit -f 24; exec "$@"' _
[ "$("$BIN" --verify "$D/step_3.h5")" = ok ] && pass ckpt_full_disk_rlimit_earlier_intact \
    || fail ckpt_full_disk_rlimit_earlier_intact "$("$BIN" --verify "$D/step_3.h5")"
out=$(bash -c 'trap "" XFSZ; ulimit -f 24; exec "$@"' _ "$BIN" --write-dump "$D/d.h5" cola 2>&1); rc=$?
if [ $rc = 2 ] && grep -q "cannot write step dump $D/d.h5" <<<"$out" && [ -z "$(ls "$D" | grep -v '^step_3.h5$')" ]; then
    pass dump_full_disk_rlimit
else fail dump_full_disk_rlimit "exit $rc: $out; dir: $(ls "$D")"; fi

if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null && unshare -m mount -t tmpfs -o size=64k tmpfs "$TMP" 2>/dev/null; then
    M=$TMP/tmpfs; mkdir -p "$M"
    out=$(unshare -m bash -c 'mount -t tmpfs -o size=256k tmpfs "$1" && "$2" --write-checkpoint "$1/step_3.h5" cola >/dev/null 2>&1 &&
          ( "$2" --write-checkpoint "$1/step_4.h5" cola 2>&1; echo "rc=$?"; ls "$1"; "$2" --verify "$1/step_3.h5" )' _ "$M" "$BIN" 2>&1)
    if grep -q "cannot write checkpoint $M/step_4.h5: .*No space left on device" <<<"$out" && grep -q '^rc=2$' <<<"$out" &&
       [ "$(sed -n '/^rc=/,$p' <<<"$out" | tail -n +2 | tr '\n' ' ')" = "step_3.h5 ok " ]; then
        pass ckpt_full_tmpfs
    else fail ckpt_full_tmpfs "$out"; fi
else
    echo "SKIP ckpt_full_tmpfs: cannot mount a tmpfs here (needs root and mount namespaces); the RLIMIT_FSIZE case ran"
fi
