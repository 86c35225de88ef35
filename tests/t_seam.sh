#!/usr/bin/env bash
# The back-end seam: the model drivers in src/model/ read as ops plus named
# collectives. They call no BLAS, open no OpenMP region and include neither header; the math
# lives in the back ends (src/backend/cpu, src/backend/cuda) behind src/backend/ops.h.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
check() {   # NAME PATTERN WHAT
    local hits; hits=$(grep -nE "$2" src/model/*.c src/model/*.h 2>/dev/null | head -5)
    if [ -z "$hits" ]; then pass "$1"; else fail "$1" "$3 in src/model: $(tr '\n' ' ' <<<"$hits")"; fi
}
check model_calls_no_blas 'cblas_[a-z]+\(|#include *<cblas\.h>' "a BLAS call"
check model_opens_no_openmp_region '#pragma +omp|#include *<omp\.h>|omp_get_' "OpenMP"
check model_calls_no_cuda 'cuda[A-Z][A-Za-z]*\(|cublas|#include *<cuda' "a CUDA call"
# ... and the drivers do reach the back ends through the op table
n=$(grep -ohE '\bop_[a-z0-9_]+\(' src/model/*.c | sort -u | wc -l)
[ "$n" -ge 20 ] && pass "model_uses_the_op_table ($n distinct ops)" || fail model_uses_the_op_table "only $n distinct op_ calls in src/model"
