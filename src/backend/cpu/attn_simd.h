// attn_simd.h — the vector tile kernels of the CPU flash attention (contract in
// attn_kernels.h), written once for any vector width. attn_avx512.c and attn_avx2.c include
// it after defining the vector type and operations:
//   VT, VL (lanes), vzero(), vset1(x), vload(p), vstore(p, v), vloadn(p, n) / vstoren(p, v, n)
//   (lanes < n only; the others are not touched in memory, read as 0), vkeep(v, n, fill)
//   (lanes >= n set to fill), vfma(a, b, c) = a·b + c, vadd, vsub, vmul, vmax, vmin, vround (to nearest),
//   vscale2n(p, n) = p·2^n (n integral), vhsum, vhmax; vunpacklo, vunpackhi, vshuffle(a, b, imm)
//   (within 128-bit lanes) and vtranspose_across (the rest of a VL x VL transpose, below);
//   NV_A (vectors per register row of qk), MR_B/NV_B (rows and vectors of acc's register
//   block), ISA_NAME and ISA_TABLE (the AttnIsa it defines).
//
// Register blocks: qk keeps an ATT_PANEL × NV_A·VL block of C in registers (broadcasting
// A from its rows, 8 rows of a contiguous block: L1-resident); acc keeps MR_B rows of
// C × NV_B·VL columns, broadcasting X and loading rows of Y. Each k step of a block is
// register-only except for its loads: 2·8 and 4·6 FMAs per step with AVX-512.
// The loops over rows and vectors have compile-time bounds (the always_inline block
// functions are called with constant MRV / FULL) so GCC unrolls them and keeps the
// accumulator arrays in registers.
#include "attn_kernels.h"

#define AI_ static inline __attribute__((always_inline))
_Static_assert(MR_B <= 8, "acc's remainder rows are split into blocks of 4, 2 and 1");

// 2^x: n = round(x), f = x − n in [−½, ½], 2^f by Cephes exp2f's degree-6 minimax polynomial
// (relative error ~1e-7), times 2^n (vscale2n). Where vscale2n builds 2^n in the exponent
// bits (VEXP2_CLAMP: AVX2) x is clamped to [−126, 127] first; AVX-512's vscalefps takes any n
// (underflow to 0, overflow to inf) and needs no clamp: two operations less per score. A NaN
// passes (max/min return their second operand when one is NaN).
static inline VT vexp2(VT x) {
#ifdef VEXP2_CLAMP
    x = vmin(vset1(127.0f), vmax(vset1(-126.0f), x));
#endif
    VT n = vround(x), f = vsub(x, n);
    VT p = vset1(1.535336188319500e-4f);
    p = vfma(p, f, vset1(1.339887440266574e-3f));
    p = vfma(p, f, vset1(9.618437357674640e-3f));
    p = vfma(p, f, vset1(5.550332471162809e-2f));
    p = vfma(p, f, vset1(2.402264791363012e-1f));
    p = vfma(p, f, vset1(6.931472028550421e-1f));
    p = vfma(p, f, vset1(1.0f));
    return vscale2n(p, n);
}

// ---- qk: C = A·Bt over one tile ------------------------------------------------------
// MRV rows of A (row-major, lda) against columns [0, ncol) (a multiple of NV·VL), NV ≤ NV_A
// vectors of columns at a time.
AI_ void qk_blk(const int MRV, const int NV, float *C, int ldc, const float *A, int lda, const float *Bt, int ldb,
                int k, int ncol) {
    for (int c0 = 0; c0 < ncol; c0 += NV * VL) {
        VT acc[ATT_PANEL][NV_A];
        #pragma GCC unroll 8
        for (int r = 0; r < MRV; r++)
            #pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[r][v] = vzero();
        const float *b = Bt + c0;
        for (int i = 0; i < k; i++, b += ldb) {
            VT bv[NV_A];
            #pragma GCC unroll 4
            for (int v = 0; v < NV; v++) bv[v] = vload(b + v * VL);
            #pragma GCC unroll 8
            for (int r = 0; r < MRV; r++) {
                VT av = vset1(A[(size_t)r * lda + i]);
                #pragma GCC unroll 4
                for (int v = 0; v < NV; v++) acc[r][v] = vfma(av, bv[v], acc[r][v]);
            }
        }
        #pragma GCC unroll 8
        for (int r = 0; r < MRV; r++)
            #pragma GCC unroll 4
            for (int v = 0; v < NV; v++) vstore(C + (size_t)r * ldc + c0 + v * VL, acc[r][v]);
    }
}

// Rows [r0, r0 + MRV): the columns [0, need) hold every visible key of the block; they are
// computed in whole vectors, the last (on a diagonal tile) one vector wide where NV_A·VL
// columns would be more than needed (a 64 x 64 diagonal tile: 2560 products instead of 3072).
_Static_assert(NV_A <= 2, "qk's column tail is one vector");
AI_ void qk_rows(const int MRV, float *C, int ldc, const float *A, int lda, const float *Bt, int ldb, int r0, int n,
                 int k, int off) {
    int need = r0 + MRV + off;
    if (need > n) need = n;
    if (need <= 0) return;
    int nvec = (need + VL - 1) / VL, full = nvec / NV_A * NV_A;
    C += (size_t)r0 * ldc;
    A += (size_t)r0 * lda;
    qk_blk(MRV, NV_A, C, ldc, A, lda, Bt, ldb, k, full * VL);
    if (nvec > full) qk_blk(MRV, 1, C + full * VL, ldc, A, lda, Bt + full * VL, ldb, k, VL);
}

static void qk(float *C, int ldc, const float *A, int lda, const float *Bt, int ldb, int m, int n, int k, int off) {
    int r0 = 0;
    for (; r0 + ATT_PANEL <= m; r0 += ATT_PANEL) qk_rows(ATT_PANEL, C, ldc, A, lda, Bt, ldb, r0, n, k, off);
    int rest = m - r0;   // < 8: blocks of 4, 2 and 1 rows (constant heights)
    if (rest & 4) { qk_rows(4, C, ldc, A, lda, Bt, ldb, r0, n, k, off); r0 += 4; }
    if (rest & 2) { qk_rows(2, C, ldc, A, lda, Bt, ldb, r0, n, k, off); r0 += 2; }
    if (rest & 1) qk_rows(1, C, ldc, A, lda, Bt, ldb, r0, n, k, off);
}

// ---- pack_t: Xt[c][t] = X[t][c] (t < n), 0 (n <= t < ldt) ---------------------------
// A VL x VL block in registers, r[i] = row i → r[c] = column c: within each 128-bit lane the
// 4 x 4 blocks (unpack, shuffle: r[4i + j] lane L = rows 4i..4i+3 of column 4L + j), then
// across the lanes (the ISA's vtranspose_across).
static inline void vtranspose(VT r[VL]) {
    VT t[VL];
    for (int i = 0; i < VL / 2; i++) { t[2 * i] = vunpacklo(r[2 * i], r[2 * i + 1]); t[2 * i + 1] = vunpackhi(r[2 * i], r[2 * i + 1]); }
    for (int i = 0; i < VL / 4; i++) {
        r[4 * i] = vshuffle(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = vshuffle(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = vshuffle(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = vshuffle(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    vtranspose_across(r);
}

// VL x VL blocks transposed in registers (vtranspose); the ragged edges element by element.
static void pack_t(float *Xt, int ldt, const float *X, int ld, int n, int hd) {
    int t0 = 0;
    for (; t0 + VL <= n; t0 += VL) {
        int c0 = 0;
        for (; c0 + VL <= hd; c0 += VL) {
            VT r[VL];
            #pragma GCC unroll 16
            for (int i = 0; i < VL; i++) r[i] = vload(X + (size_t)(t0 + i) * ld + c0);
            vtranspose(r);
            #pragma GCC unroll 16
            for (int i = 0; i < VL; i++) vstore(Xt + (size_t)(c0 + i) * ldt + t0, r[i]);
        }
        for (; c0 < hd; c0++)
            for (int i = 0; i < VL; i++) Xt[(size_t)c0 * ldt + t0 + i] = X[(size_t)(t0 + i) * ld + c0];
    }
    for (int c = 0; c < hd; c++) {
        float *xt = Xt + (size_t)c * ldt;
        for (int t = t0; t < n; t++) xt[t] = X[(size_t)t * ld + c];
        for (int t = n; t < ldt; t++) xt[t] = 0.0f;
    }
}

// ---- acc: C (∘)= X·Y over one tile ---------------------------------------------------
// MRV rows of C, columns [c0, c0 + NV_B·VL) of which the first `cols` are real (FULL: all).
AI_ void acc_blk(const int MRV, const int FULL, float *C, int ldc, const float *X, int xr, int xk,
                 const float *Y, int ldy, int k0, int k1, int cols, int mode, const float *alpha) {
    VT acc[MR_B][NV_B];
    int nl[NV_B];
    #pragma GCC unroll 4
    for (int v = 0; v < NV_B; v++) { int l = cols - v * VL; nl[v] = l < 0 ? 0 : l > VL ? VL : l; }
    #pragma GCC unroll 8
    for (int r = 0; r < MRV; r++)
        #pragma GCC unroll 4
        for (int v = 0; v < NV_B; v++) acc[r][v] = vzero();
    const float *x = X + (size_t)k0 * xk, *y = Y + (size_t)k0 * ldy;
    for (int kk = k0; kk < k1; kk++, x += xk, y += ldy) {
        VT yv[NV_B];
        #pragma GCC unroll 4
        for (int v = 0; v < NV_B; v++) yv[v] = FULL ? vload(y + v * VL) : vloadn(y + v * VL, nl[v]);
        #pragma GCC unroll 8
        for (int r = 0; r < MRV; r++) {
            VT xv = vset1(x[(size_t)r * xr]);
            #pragma GCC unroll 4
            for (int v = 0; v < NV_B; v++) acc[r][v] = vfma(xv, yv[v], acc[r][v]);
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < MRV; r++) {
        float *c = C + (size_t)r * ldc;
        #pragma GCC unroll 4
        for (int v = 0; v < NV_B; v++) {
            VT o = acc[r][v];
            if (mode != ACC_SET) {
                VT old = FULL ? vload(c + v * VL) : vloadn(c + v * VL, nl[v]);
                o = mode == ACC_ADD ? vadd(old, o) : vfma(vset1(alpha[r]), old, o);
            }
            if (FULL) vstore(c + v * VL, o); else vstoren(c + v * VL, o, nl[v]);
        }
    }
}

// Rows [r0, r0 + MRV) of every column chunk; the causal range of k is the block's union
// (the masked entries of X inside it are 0).
AI_ void acc_rows(const int MRV, float *C, int ldc, const float *X, int xr, int xk, const float *Y, int ldy,
                  int r0, int kn, int hd, int causal, int off, int mode, const float *alpha) {
    int k0 = 0, k1 = kn;
    if (causal == CAUSAL_ROWS && r0 + MRV + off < k1) k1 = r0 + MRV + off;
    if (causal == CAUSAL_COLS && r0 - off > 0) k0 = r0 - off;
    if (k1 < k0) k1 = k0;   // nothing visible: C is still combined with a zero sum
    const float *xb = X + (size_t)r0 * xr;
    float *cb = C + (size_t)r0 * ldc;
    const float *al = alpha ? alpha + r0 : alpha;
    const int W = NV_B * VL;
    int c0 = 0;
    for (; c0 + W <= hd; c0 += W) acc_blk(MRV, 1, cb + c0, ldc, xb, xr, xk, Y + c0, ldy, k0, k1, W, mode, al);
    if (c0 < hd) acc_blk(MRV, 0, cb + c0, ldc, xb, xr, xk, Y + c0, ldy, k0, k1, hd - c0, mode, al);
}

static void acc(float *C, int ldc, const float *X, int xr, int xk, const float *Y, int ldy, int rows, int kn, int hd,
                int causal, int off, int mode, const float *alpha) {
    int r0 = 0;
    for (; r0 + MR_B <= rows; r0 += MR_B) acc_rows(MR_B, C, ldc, X, xr, xk, Y, ldy, r0, kn, hd, causal, off, mode, alpha);
    int rest = rows - r0;   // < MR_B ≤ 8: blocks of 4, 2 and 1 rows (constant heights)
    if (rest & 4) { acc_rows(4, C, ldc, X, xr, xk, Y, ldy, r0, kn, hd, causal, off, mode, alpha); r0 += 4; }
    if (rest & 2) { acc_rows(2, C, ldc, X, xr, xk, Y, ldy, r0, kn, hd, causal, off, mode, alpha); r0 += 2; }
    if (rest & 1) acc_rows(1, C, ldc, X, xr, xk, Y, ldy, r0, kn, hd, causal, off, mode, alpha);
}

// ---- row kernels of the softmax ------------------------------------------------------
// Rows live in tile buffers whose ld is a multiple of 32 ≥ n: whole vectors up to
// round_up(n, VL) stay inside the row.
static float rowmax(const float *s, int n) {
    VT mx = vset1(-INFINITY);
    int j = 0;
    for (; j + VL <= n; j += VL) mx = vmax(vload(s + j), mx);
    if (j < n) mx = vmax(vkeep(vload(s + j), n - j, -INFINITY), mx);
    return vhmax(mx);
}

static float softmax_row(float *s, int nv, int n, float c, float mx) {
    VT vc = vset1(c), vm = vset1(-mx), sum = vzero();
    int j = 0;
    for (; j + VL <= nv; j += VL) {
        VT p = vexp2(vfma(vload(s + j), vc, vm));
        vstore(s + j, p);
        sum = vadd(sum, p);
    }
    if (j < nv) {
        VT p = vkeep(vexp2(vfma(vload(s + j), vc, vm)), nv - j, 0.0f);
        vstore(s + j, p);
        sum = vadd(sum, p);
        j += VL;
    }
    for (; j < n; j++) s[j] = 0.0f;
    return vhsum(sum);
}

static void dsoftmax_row(float *s, float *dp, int nv, int n, float c, float l, float D, float scale) {
    VT vc = vset1(c), vl = vset1(-l), vD = vset1(-D), vs = vset1(scale);
    int j = 0;
    for (; j < nv; j += VL) {
        VT p = vexp2(vfma(vload(s + j), vc, vl));
        VT ds = vmul(vmul(vs, p), vadd(vload(dp + j), vD));
        if (nv - j < VL) { p = vkeep(p, nv - j, 0.0f); ds = vkeep(ds, nv - j, 0.0f); }
        vstore(s + j, p);
        vstore(dp + j, ds);
    }
    for (; j < n; j++) { s[j] = 0.0f; dp[j] = 0.0f; }
}

static const AttnIsa ISA_TABLE = { ISA_NAME, qk, acc, rowmax, softmax_row, dsoftmax_row, pack_t };
