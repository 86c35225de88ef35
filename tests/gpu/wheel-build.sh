#!/usr/bin/env bash
# wheel-build.sh — the GPU build against cuDNN and NCCL as the pip wheels ship them, the way a
# cluster without cuDNN and NCCL modules gets them: `pip download nvidia-cudnn-cu13
# nvidia-nccl-cu13` into a temporary folder, unpacked (nvidia/cudnn/{include,lib},
# nvidia/nccl/{include,lib}: only libnccl.so.2, no unversioned name), CUDNN_HOME and NCCL_HOME
# pointing there, and `make` building build/train and build/gpu_probe into that folder. Checks that
# the binaries link the wheel's NCCL and load the wheel's cuDNN (gpu_probe's library lines: the
# version the wheel's headers declare, from the wheel's folder), that make gpu-libs reports them,
# and that nothing of the wheels is needed at run time beyond their folders (no LD_LIBRARY_PATH).
# `make wheel-build-check` and a step of .ci/run; not part of make test (about 700 MB to download
# and a CUDA build: minutes). WHEELS=dir takes the wheels from dir instead of downloading them.
# Without nvcc, or when the download fails (offline): "SKIP wheel_build: <why>", exit 0.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$ROOT"
if [ -z "$(bash mk/find-gpu-libs.sh --nvcc)" ]; then skip wheel_build "no nvcc (the wheels are for the CUDA build)"; exit 0; fi
W=$TMP/wheels; mkdir -p "$W"
if [ -n "${WHEELS:-}" ]; then cp "$WHEELS"/nvidia_cudnn_cu13-*.whl "$WHEELS"/nvidia_nccl_cu13-*.whl "$W"/ 2>/dev/null
else
    PIP=$(command -v pip3 || command -v pip || true)
    if [ -z "$PIP" ]; then skip wheel_build "no pip to download the wheels (or set WHEELS=dir)"; exit 0; fi
    if ! timeout 900 "$PIP" download --no-deps -q -d "$W" nvidia-cudnn-cu13 nvidia-nccl-cu13 >"$TMP/pip.log" 2>&1; then
        skip wheel_build "pip download nvidia-cudnn-cu13 nvidia-nccl-cu13 failed (offline?): $(tail -1 "$TMP/pip.log")"; exit 0
    fi
fi
# a real wheel, not the 0.0.0 placeholder an index serves where no binary wheel fits this platform
for w in cudnn nccl; do
    f=$(ls "$W"/nvidia_${w}_cu13-*.whl 2>/dev/null | head -1)
    if [ -z "$f" ] || [ "$(stat -c %s "$f")" -lt 1000000 ]; then
        skip wheel_build "no binary wheel of nvidia-$w-cu13 for this platform ($(basename "${f:-none}"))"; exit 0
    fi
done
S=$TMP/site
mkdir -p "$S"
for f in "$W"/*.whl; do
    if command -v unzip >/dev/null; then unzip -q -o "$f" -d "$S"; else /usr/bin/python3 -m zipfile -e "$f" "$S"; fi
done
CUDNN_HOME=$S/nvidia/cudnn NCCL_HOME=$S/nvidia/nccl
export CUDNN_HOME NCCL_HOME
cudnn_ver=$(awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) / {v[$2]=$3} END {print v["CUDNN_MAJOR"] "." v["CUDNN_MINOR"] "." v["CUDNN_PATCHLEVEL"]}' "$CUDNN_HOME/include/cudnn_version.h")
nccl_ver=$(awk '/#define NCCL_(MAJOR|MINOR|PATCH) / {v[$2]=$3} END {print v["NCCL_MAJOR"] "." v["NCCL_MINOR"] "." v["NCCL_PATCH"]}' "$NCCL_HOME/include/nccl.h")
echo "wheels: $(cd "$W" && ls *.whl | tr '\n' ' '); cuDNN $cudnn_ver, NCCL $nccl_ver"

out=$(make -s gpu-libs 2>&1)
if grep -q "cuDNN .*headers $CUDNN_HOME/include (cuDNN $cudnn_ver), library $CUDNN_HOME/lib" <<<"$out" &&
   grep -q "NCCL .*header $NCCL_HOME/include, library $NCCL_HOME/lib" <<<"$out"; then pass wheel_build_gpu_libs_finds_the_wheels
else fail wheel_build_gpu_libs_finds_the_wheels "$(grep -E 'cuDNN|NCCL' <<<"$out" | tr '\n' ' ')"; fi

B=$TMP/build
if ! make -j"${JOBS:-2}" BUILD="$B" CC="${CC_WHEEL:-ccache mpicc}" "$B/train" "$B/gpu_probe" >"$TMP/make.log" 2>&1; then
    fail wheel_build_builds "make failed: $(grep -m3 -E 'error|Error' "$TMP/make.log" | tr '\n' ' ')"; exit 0
fi
grep -q -- "-isystem $CUDNN_HOME/include" "$TMP/make.log" && grep -q -- "-isystem $NCCL_HOME/include" "$TMP/make.log" &&
    pass "wheel_build_compiles_against_the_wheels' headers" ||
    fail "wheel_build_compiles_against_the_wheels' headers" "the compile lines lack -isystem of the wheels' include folders"
lib=$(env -u LD_LIBRARY_PATH ldd "$B/train" | awk '$1 == "libnccl.so.2" {print $3}')
if [ "$(readlink -f "$lib")" = "$(readlink -f "$NCCL_HOME/lib/libnccl.so.2")" ]; then pass "wheel_build_links_the_wheel's_nccl ($lib)"
else fail "wheel_build_links_the_wheel's_nccl" "build/train resolves libnccl.so.2 to '$lib'"; fi
probe=$(env -u LD_LIBRARY_PATH "$B/gpu_probe" 2>&1)
if grep -qE "^  NCCL +$nccl_ver $NCCL_HOME/lib/libnccl.so.2" <<<"$probe" && grep -qE "^  cuDNN +$cudnn_ver $CUDNN_HOME/lib/libcudnn.so.9" <<<"$probe" &&
   ! grep -q 'NOT' <<<"$probe"; then
    pass "wheel_build_runs_with_the_wheels (NCCL $nccl_ver, cuDNN $cudnn_ver and its engine libraries from the wheels' folders)"
else fail wheel_build_runs_with_the_wheels "$(grep -E '^  (NCCL|cuDNN|nvrtc|  libcudnn)' <<<"$probe" | tr '\n' ';')"; fi
