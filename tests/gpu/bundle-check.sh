#!/usr/bin/env bash
# bundle-check.sh [BUNDLE_DIR] — the GPU bundle (make gpu-bundle) where none of the project's
# packages and nothing of CUDA's are: its tarball unpacked in a bare Debian 12 root made by
# debootstrap (/var/tmp/fresh-check-base.tar, the root the fresh-check makes; made here the same
# way when missing), with no CUDA toolkit, no NVIDIA driver, no GPU. `make bundle-check`; a step
# of .ci/run; not part of make test (root, mounts, minutes). In the root, with a clean
# environment (no LD_LIBRARY_PATH), it checks:
#   - none of the -dev packages, no CUDA library, no driver
#   - every ELF file of the bundle finds its libraries inside it, but glibc, libstdc++, libgcc_s
#     and the driver (tests/gpu/bundle-ldd.sh)
#   - every binary starts (--help); gpu_probe says "no NVIDIA GPU" (exit 1) and shows cuDNN, its
#     engine libraries and nvrtc loaded from the bundle, nvrtc compiling a kernel
#   - build/info; a CPU training run without mpirun, and a tp 2 step on 2 ranks through the
#     bundle's mpirun; the device-buffer collectives on 2 ranks
#   - bin/selftest and bin/gpu-check stop at the missing GPU, saying so, exit 0
#   - failures are loud: with a GPU assumed present (BOOST_GPU_ASSUME_DEVICE=1) the self-test
#     fails naming the missing driver; with the bundle's libcublasLt moved away and
#     LD_LIBRARY_PATH at an empty folder, the device check fails naming libcublasLt, exit 1
# Prints each command and its output; the last line is "bundle-check: N passed, N failed".
set -uo pipefail
[ "$(id -u)" = 0 ] || { echo "bundle-check: run as root (chroot, mounts)" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUNDLE=$(cd "${1:-$ROOT/build/gpu-bundle}" 2>/dev/null && pwd) || { echo "bundle-check: no bundle at ${1:-build/gpu-bundle} (make gpu-bundle)" >&2; exit 2; }
[ -f "$BUNDLE.tar.gz" ] || { echo "bundle-check: no $BUNDLE.tar.gz (make gpu-bundle)" >&2; exit 2; }
base=/var/tmp/fresh-check-base.tar
root=$(mktemp -d /var/tmp/bundle-check.XXXXXX)

cleanup() {
    for m in "$root/dev/pts" "$root/dev" "$root/sys" "$root/proc"; do
        mountpoint -q "$m" 2>/dev/null && umount -l "$m"
    done
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT

if [ ! -f "$base" ]; then   # the fresh-check's base root, made the same way
    command -v debootstrap >/dev/null || { echo "bundle-check: apt-get install -y debootstrap" >&2; exit 2; }
    mirror=$(awk '/^URIs:/ && !done {print $2; done=1}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '$1=="deb" {print $2; exit}' /etc/apt/sources.list)
    echo "bundle-check: building the base root with debootstrap (once)…"
    debootstrap --variant=minbase --include=build-essential,ca-certificates,git,make,pkg-config,python3 \
        bookworm "$root" "$mirror" >/var/tmp/bundle-check-debootstrap.log 2>&1 \
        || { echo "bundle-check: debootstrap failed, see /var/tmp/bundle-check-debootstrap.log" >&2; exit 1; }
    tar -C "$root" -cf "$base" .
    rm -rf --one-file-system "$root"; mkdir -p "$root"
fi
tar -C "$root" -xf "$base"
mount -t proc proc "$root/proc"; mount --rbind /sys "$root/sys"; mount --rbind /dev "$root/dev"
mkdir -p "$root/opt"
cp "$BUNDLE.tar.gz" "$root/opt/gpu-bundle.tar.gz"

n_pass=0; n_fail=0
# step NAME EXPECTED_RC 'command run by bash in the chroot, in /opt/gpu-bundle' [pattern that must appear]
step() {
    local name=$1 want=$2 cmd=$3 pat=${4:-}
    echo
    echo "### $name"
    echo "\$ $cmd"
    local out rc lines=${BUNDLE_CHECK_LINES:-40}
    out=$(chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
          bash -c "set -o pipefail; cd /opt/gpu-bundle 2>/dev/null || cd /opt; $cmd" 2>&1); rc=$?
    echo "$out" | head -"$lines" | sed 's/^/    /'
    [ "$(echo "$out" | wc -l)" -gt "$lines" ] && echo "    [... $(($(echo "$out" | wc -l) - lines)) more lines]"
    if [ "$rc" -ne "$want" ]; then echo "FAIL $name: exit $rc, expected $want"; n_fail=$((n_fail + 1)); return; fi
    if [ -n "$pat" ] && ! grep -qE -- "$pat" <<<"$out"; then echo "FAIL $name: the output lacks /$pat/"; n_fail=$((n_fail + 1)); return; fi
    echo "PASS $name (exit $rc)"; n_pass=$((n_pass + 1))
}

cat > "$root/opt/tiny.yaml" <<'YAML'
model: {linear: cola, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, n_kv_heads: 4, d_ff: 48, seq_len: 16, rank_attn: 8, rank_mlp: 8}
data: {dataset: synthetic, cache_dir: /tmp/cache}
train: {batch_size: 4, grad_accum: 2, steps: 3, lr: 1e-2, warmup_steps: 0, threads: 1, val_batches: 1}
run: {checkpoint_dir: /tmp/ckpt}
YAML

echo "bundle-check: $(head -1 "$BUNDLE/BUNDLE") ($BUNDLE.tar.gz), in a debootstrap root $(chroot "$root" cat /etc/debian_version) at $root"
step unpack 0 "cd /opt && tar xzf gpu-bundle.tar.gz && rm gpu-bundle.tar.gz && sed -n '1,5p' gpu-bundle/BUNDLE" "boost-c GPU bundle"
step no_dev_packages_no_cuda 0 "dpkg-query -W -f='\${Package}\n' | grep -E '^(libhdf5|libfyaml|libsqlite3-dev|libopenblas|libopenmpi|openmpi|libblas|libcurl4|libdnnl|zlib1g-dev)'; test \$? = 1 || exit 1; ! ls -d /usr/local/cuda* 2>/dev/null || exit 1; ! ldconfig -p | grep -E 'libcublas|libcudnn|libnccl|libnvrtc|libcudart' || exit 1; echo 'none of the -dev packages, no CUDA toolkit, no CUDA library known to the loader'" "none of"
step no_driver 0 "! ls /usr/lib/x86_64-linux-gnu/libcuda.so* /dev/nvidia* 2>/dev/null && echo 'no libcuda, no /dev/nvidia*: no NVIDIA driver, no GPU'" "no libcuda"
step every_library_inside_the_bundle 0 "bash tests/gpu/bundle-ldd.sh /opt/gpu-bundle" "every library resolves inside the bundle"
step every_binary_starts 0 "for b in bin/*; do head -c4 \$b | grep -q ELF || continue; bin/\$(basename \$b) --help >/dev/null 2>&1 || { echo \"\$b --help failed: \$(bin/\$(basename \$b) --help 2>&1 | head -3)\"; exit 1; }; echo \"\$b --help: ok\"; done" "train --help: ok"
step gpu_probe_no_gpu_libraries_from_the_bundle 1 "bin/gpu_probe" "usable: no: no NVIDIA GPU on this host"
step gpu_probe_cudnn_and_nvrtc_load 0 "out=\$(bin/gpu_probe); grep -E '^  (cuDNN|nvrtc|cuBLAS|NCCL|  libcudnn)' <<<\"\$out\"; grep -qE '^  cuDNN +9[.0-9]* /opt/gpu-bundle/(bin/\\.\\./)?lib/libcudnn.so.9' <<<\"\$out\" && grep -qE '^  nvrtc .* /opt/gpu-bundle/(bin/\\.\\./)?lib/libnvrtc.so.[0-9]+, compiles a kernel: yes' <<<\"\$out\" && ! grep -q 'NOT' <<<\"\$out\"" "compiles a kernel: yes"
step info_all 0 "bin/info --all | grep -E 'preset|boost-1b '" "boost-1b "
step train_cpu_without_mpirun 0 "bin/train /opt/tiny.yaml --no-db 2>&1 | grep -E '^(data|run|step|val) '" "step +3/3 \\| loss"
step mpirun_comm_device_2_ranks 0 "bin/mpirun -np 2 bin/test_comm_device 2 1 1 | tail -3" "PASS nccl_switch_refuses_cleanly"
step mpirun_train_tp2_2_ranks 0 "bin/mpirun -np 2 bin/train /opt/tiny.yaml --no-db --set parallel.tp=2 2>&1 | grep -E '^(run|step|val) '" "step +3/3 \\| loss"
step h5compare_without_python 0 "bin/train /opt/tiny.yaml --no-db --set run.dump_steps=1 --set run.dump_dir=/tmp/d1 >/dev/null 2>&1 && bin/train /opt/tiny.yaml --no-db --set run.dump_steps=1 --set run.dump_dir=/tmp/d2 >/dev/null 2>&1 && bin/h5compare /tmp/d1/step_1.h5 /tmp/d2/step_1.h5 --exact" "beyond tolerance"
step selftest_stops_at_no_gpu 0 "bin/selftest --out /tmp/selftest | tail -9" "no NVIDIA GPU on this host"
step gpu_check_stops_at_no_gpu 0 "bin/gpu-check --out /tmp/gpu-check | grep -E '^(gpu-check|SKIP)'" "nothing to measure: no NVIDIA GPU"
step selftest_fails_loudly_without_a_driver 1 "BOOST_GPU_ASSUME_DEVICE=1 bin/selftest --out /tmp/selftest2 | tail -9" "FAILED .*libcuda.so.1 cannot be loaded"
step gpu_check_fails_loudly_with_cublaslt_hidden 1 "cp -al /opt/gpu-bundle /tmp/broken && rm /tmp/broken/lib/libcublasLt.so.* && mkdir -p /tmp/empty && LD_LIBRARY_PATH=/tmp/empty /tmp/broken/bin/gpu-check --out /tmp/gc-broken | grep -E '^(FAIL|gpu-check)'" "FAIL gpu_check_device: the binaries cannot start: libcublasLt.so.13 is missing"

echo
echo "bundle-check: $n_pass passed, $n_fail failed"
[ "$n_fail" -eq 0 ]
