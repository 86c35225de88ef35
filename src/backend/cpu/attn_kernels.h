// attn_kernels.h — the tile micro-kernels of the CPU flash attention (attention.c), one set
// per instruction set: AVX-512 (attn_avx512.c), AVX2+FMA (attn_avx2.c), both compiled from
// the template attn_simd.h where the compiler targets them, and a portable scalar set
// (attn_scalar.c) that is always there. attention.c picks the widest one this build has;
// cpu_attention_use_isa() forces another (the tests compare them with each other).
//
// The tiles (row-major, every pointer a float buffer):
//  * qk:  C[r][j] = Σ_c A[r][c] · Bt[c][j]   r < m, j < n, c < k     A: lda, Bt: ldb, C: ldc
//         — S = Q Kᵀ and dP = dO Vᵀ. A is row-major (lda; a contiguous copy of the query
//         block: its ATT_PANEL rows of one register block stay in L1); Bt is Kᵀ/Vᵀ of the
//         head (rows = the head dim), zero-padded to a multiple of 32 columns. C needs room
//         for m rows and round_up(n, 32) columns. Causal: only the columns j ≤ r + off are
//         needed; column blocks past every row of a register block are skipped, and the
//         entries past a row's last visible key are left undefined.
//  * acc: C[r][:hd] (∘)= Σ_k X[r·xr + k·xk] · Y[k][:hd]   r < rows, k < kn   Y: ldy, C: ldc
//         — O = P V and dQ = dS K (xr = ldP, xk = 1; causal: k ≤ r + off), dV = Pᵀ dO and
//         dK = dSᵀ Q (xr = 1, xk = ldP; causal: k ≥ r − off). Entries of X that the causal
//         range keeps but that are masked must be 0 (the row kernels write those zeros).
//         The sum over k starts from 0 in registers and is then combined with C:
//         ACC_SET C = Σ, ACC_ADD C += Σ, ACC_RESCALE C = alpha[r]·C + Σ.
//  * rowmax: max of s[0..n) (n ≥ 1).
//  * softmax_row: p[j] = 2^(s[j]·c − mx) for j < nv, 0 for nv ≤ j < n, in place; returns Σ p.
//  * dsoftmax_row: p = 2^(s·c − l), ds = scale · p · (dp − D) for j < nv (s → p, dp → ds in
//         place), both 0 for nv ≤ j < n.
//  * pack_t: Xt[c][t] = X[t·ld + c] for t < n, 0 for n ≤ t < ldt (c < hd): keys or values
//         transposed into a tile (an exact copy: which set packs does not change any result).
#pragma once

#define ATT_PANEL 8   // rows of one qk register block

enum { ACC_SET, ACC_ADD, ACC_RESCALE };
enum { CAUSAL_NONE, CAUSAL_ROWS, CAUSAL_COLS };   // acc's causal range: k ≤ r+off / k ≥ r−off

typedef struct {
    const char *name;
    void (*qk)(float *C, int ldc, const float *A, int lda, const float *Bt, int ldb, int m, int n, int k, int off);
    void (*acc)(float *C, int ldc, const float *X, int xr, int xk, const float *Y, int ldy, int rows, int kn, int hd,
                int causal, int off, int mode, const float *alpha);
    float (*rowmax)(const float *s, int n);
    float (*softmax_row)(float *s, int nv, int n, float c, float mx);
    void (*dsoftmax_row)(float *s, float *dp, int nv, int n, float c, float l, float D, float scale);
    void (*pack_t)(float *Xt, int ldt, const float *X, int ld, int n, int hd);
} AttnIsa;

extern const AttnIsa attn_isa_scalar;
extern const AttnIsa *const attn_isa_avx2;     // NULL where the build does not target AVX2+FMA
extern const AttnIsa *const attn_isa_avx512;   // NULL where the build does not target AVX-512F

// The kernels attention_forward/backward use: "avx512", "avx2" or "scalar". Returns the name
// of the set used before the call, or NULL (and changes nothing) when this build lacks the
// one asked for. Not thread-safe: call it between attention calls (tests, the benchmark).
const char *cpu_attention_use_isa(const char *name);
// The name of the set in use.
const char *cpu_attention_isa(void);
