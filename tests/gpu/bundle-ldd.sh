#!/usr/bin/env bash
# bundle-ldd.sh BUNDLE_DIR — does every program and library of the GPU bundle find its shared
# libraries inside the bundle, with no LD_LIBRARY_PATH? Runs ldd on every ELF file under bin/,
# lib/, ompi/ and sanitizer/ and accepts, from outside the bundle, only what the bundle leaves to
# the node on purpose: glibc, libstdc++ and libgcc_s, and the NVIDIA driver — "not found" where no
# driver is installed (tests/gpu/bundle-lib.sh, the one list).
# Prints "bundle-ldd: N files, every library resolves inside the bundle" and exits 0, or lists
# each offending file and library and exits 1. make-bundle.sh runs it on the build host;
# bundle-check.sh in a bare Debian 12 root.
set -uo pipefail
B=$(cd "${1:?usage: bundle-ldd.sh BUNDLE_DIR}" && pwd -P)
source "$(dirname "${BASH_SOURCE[0]}")/bundle-lib.sh"
grep -q '^slim:' "$B/BUNDLE" 2>/dev/null && BUNDLE_SLIM=1   # CUDA's libraries are the node's too
n=0; bad=0
while IFS= read -r -d '' f; do
    head -c 4 "$f" 2>/dev/null | grep -q 'ELF' || continue
    n=$((n + 1))
    out=$(env -u LD_LIBRARY_PATH -u LD_PRELOAD ldd "$f" 2>&1)
    grep -q 'not a dynamic executable\|statically linked' <<<"$out" && continue
    while read -r line; do
        name=$(awk '{print $1}' <<<"$line"); path=$(awk '$2 == "=>" {print $3} $2 != "=>" && $1 ~ /^\// {print $1}' <<<"$line")
        [ -n "$name" ] || continue
        base=$(basename "$name")
        node_lib "$base" && continue
        if [ -z "$path" ] || [ "$path" = not ]; then
            echo "bundle-ldd: $f: $base not found"; bad=$((bad + 1)); continue
        fi
        real=$(readlink -f "$path")
        case "$real" in "$B"/*) ;; *) echo "bundle-ldd: $f: $base resolves outside the bundle: $path"; bad=$((bad + 1)) ;; esac
    done <<<"$out"
done < <(find "$B/bin" "$B/lib" "$B/ompi" "$B/sanitizer" -type f -print0 2>/dev/null)
if [ "$bad" -gt 0 ]; then echo "bundle-ldd: $bad libraries of $n files not inside the bundle"; exit 1; fi
echo "bundle-ldd: $n files, every library resolves inside the bundle (glibc, libstdc++, libgcc_s$([ "${BUNDLE_SLIM:-0}" = 1 ] && echo ", CUDA's libraries (slim)") and the NVIDIA driver left to the node)"
