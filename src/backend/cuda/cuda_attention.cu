// cuda_attention.cu — causal GQA flash attention, forward and backward (FlashAttention-2's
// algorithm, the CPU back end's algorithm): tiles of queries against tiles of keys with an
// online softmax; only the fp32 row log-sum-exp is saved; the backward recomputes the
// probabilities tile by tile from it, with D = rowsum(dout ⊙ out).
//
// Layouts: q, out [B,T,H,hd]; k, v [B,T,Hkv,hd]; lse [B,H,T]; head h reads kv head
// h / (H/Hkv); scores are scaled by 1/sqrt(hd).
//
// Structure. A block holds its tiles in shared memory, zero-padded to HDP columns (hd
// rounded up to 16, HDP <= 128) and to whole tiles of rows, so padded entries add exact
// zeros. Each warp owns a strip of 16 rows and does all of that strip's work, so warps
// synchronise only to refill the shared K/V (or Q/dO) tiles. The two tile products a warp
// needs are WarpMM::nt (C = A·B^T) and WarpMM::nn (C += A·B), with fp32 results in shared
// memory:
//   bf16: wmma 16x16x16 with fp32 accumulators (tensor cores, sm_80+); P and dS are
//         rounded to bf16 before their products, as in FlashAttention-2;
//   fp32: plain fp32 FMAs (no TF32), so the fp32 path matches the CPU to fp32 rounding.
// The running output, dK, dV and dQ accumulate in fp32 in shared memory.
//
// Backward without atomics (deterministic): one kernel per key tile accumulates dK and dV
// over every query tile and every query head of its GQA group; a second kernel per query
// tile accumulates dQ over the key tiles. That recomputes S and dP once more (7 tile
// products per tile pair instead of FlashAttention-2's 5 with atomic dQ).
//
// Selection (the end of this file): with train.attention auto (the default) a bf16 back end
// first offers each call to cuDNN's fused attention (cudnn_attention.h); these kernels run
// when the mode is flash, the back end computes in fp32, cuDNN is missing, or cuDNN refuses
// the shape, and a note says which and why, once.
#include "cuda_common.cuh"
#include "cudnn_attention.h"
#include <mma.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

using namespace nvcuda;

// ---- tile geometry -----------------------------------------------------------------------------
// Row pads: bf16 tiles +8 elements (wmma needs ldm % 8 == 0; 16 bytes staggers the banks);
// fp32 T tiles +1 (an odd stride: the SIMT product walks B's rows across lanes without bank
// conflicts); fp32 accumulators +4 (wmma's float ldm % 4 == 0).
template <typename T> struct Pad { static constexpr int v = 8; };
template <> struct Pad<float> { static constexpr int v = 1; };
constexpr int FPAD = 4;
constexpr size_t al128(size_t x) { return (x + 127) / 128 * 128; }

// ---- warp tile products (shared memory in, shared memory out) ------------------------------------
//   nt: C[16,N]  = A[16,K]·B[N,K]^T      (C fp32, overwritten)
//   nn: C[16,N] += A[16,K]·B[K,N]        (C fp32, accumulated)
// N, K multiples of 16; row strides in elements.
template <typename T, int N, int K> struct WarpMM;

template <int N, int K> struct WarpMM<bf16, N, K> {
    typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> FragA;
    typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> FragC;
    static __device__ __forceinline__ void nt(float *C, int ldc, const bf16 *A, int lda, const bf16 *B, int ldb) {
        FragA a[K / 16];                                   // A's strip, reused for every column block
#pragma unroll
        for (int kk = 0; kk < K / 16; kk++) wmma::load_matrix_sync(a[kk], A + kk * 16, lda);
#pragma unroll 1
        for (int j = 0; j < N; j += 16) {
            FragC c;
            wmma::fill_fragment(c, 0.0f);
#pragma unroll
            for (int kk = 0; kk < K / 16; kk++) {
                // B^T's [16 x 16] block (k rows kk.., columns j..) is B stored column-major
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> bt;
                wmma::load_matrix_sync(bt, B + (size_t)j * ldb + kk * 16, ldb);
                wmma::mma_sync(c, a[kk], bt, c);
            }
            wmma::store_matrix_sync(C + j, c, ldc, wmma::mem_row_major);
        }
    }
    static __device__ __forceinline__ void nn(float *C, int ldc, const bf16 *A, int lda, const bf16 *B, int ldb) {
        FragA a[K / 16];
#pragma unroll
        for (int kk = 0; kk < K / 16; kk++) wmma::load_matrix_sync(a[kk], A + kk * 16, lda);
#pragma unroll 1
        for (int j = 0; j < N; j += 16) {
            FragC c;
            wmma::load_matrix_sync(c, C + j, ldc, wmma::mem_row_major);
#pragma unroll
            for (int kk = 0; kk < K / 16; kk++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> bm;
                wmma::load_matrix_sync(bm, B + (size_t)kk * 16 * ldb + j, ldb);
                wmma::mma_sync(c, a[kk], bm, c);
            }
            wmma::store_matrix_sync(C + j, c, ldc, wmma::mem_row_major);
        }
    }
};

// fp32: lane l owns columns l, l+32, ... of the strip (all 16 rows); A's entries are
// broadcast reads, B's rows (nt: B_ROWS) or columns (nn) are spread over the lanes.
template <int N, int K, bool B_ROWS, bool ACCUMULATE>
static __device__ __forceinline__ void simt_mm(float *C, int ldc, const float *A, int lda, const float *B, int ldb) {
    constexpr int NC = (N + 31) / 32;
    const int lane = threadIdx.x & 31;
    float acc[16][NC];
#pragma unroll
    for (int i = 0; i < 16; i++)
#pragma unroll
        for (int t = 0; t < NC; t++) { int j = lane + 32 * t; acc[i][t] = (ACCUMULATE && j < N) ? C[i * ldc + j] : 0.0f; }
#pragma unroll 4
    for (int kk = 0; kk < K; kk++) {
        float bv[NC];
#pragma unroll
        for (int t = 0; t < NC; t++) {
            int j = lane + 32 * t;
            bv[t] = j < N ? (B_ROWS ? B[(size_t)j * ldb + kk] : B[(size_t)kk * ldb + j]) : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < 16; i++) {
            float a = A[i * lda + kk];
#pragma unroll
            for (int t = 0; t < NC; t++) acc[i][t] = fmaf(a, bv[t], acc[i][t]);
        }
    }
#pragma unroll
    for (int i = 0; i < 16; i++)
#pragma unroll
        for (int t = 0; t < NC; t++) { int j = lane + 32 * t; if (j < N) C[i * ldc + j] = acc[i][t]; }
}
template <int N, int K> struct WarpMM<float, N, K> {
    static __device__ __forceinline__ void nt(float *C, int ldc, const float *A, int lda, const float *B, int ldb) {
        simt_mm<N, K, true, false>(C, ldc, A, lda, B, ldb);
    }
    static __device__ __forceinline__ void nn(float *C, int ldc, const float *A, int lda, const float *B, int ldb) {
        simt_mm<N, K, false, true>(C, ldc, A, lda, B, ldb);
    }
};

// dst[rows, ld] (shared) = rows t0 .. t0+rows-1 of a [T, *] operand whose row t starts at
// src + t·stride; rows >= T and columns >= hd are zero (HDP columns written).
template <typename T, int HDP>
__device__ __forceinline__ void load_tile(T *dst, int ld, const T *src, size_t stride, int t0, int rows, int T_, int hd) {
    for (int idx = threadIdx.x; idx < rows * HDP; idx += blockDim.x) {
        int rr = idx / HDP, c = idx % HDP, t = t0 + rr;
        dst[rr * ld + c] = (t < T_ && c < hd) ? src[(size_t)t * stride + c] : stf<T>(0.0f);
    }
}

// ---- forward -------------------------------------------------------------------------------------
template <typename T, int HDP> struct FwdCfg {
    static constexpr int NW = 4;                             // warps; 16 query rows each
    static constexpr int BR = 16 * NW;                       // query rows per block
    static constexpr int BC = sizeof(T) == 2 ? 64 : 32;      // keys per tile
    static constexpr int LDT = HDP + Pad<T>::v;              // Q, K, V
    static constexpr int LDS = BC + FPAD;                    // S (fp32)
    static constexpr int LDP = BC + Pad<T>::v;               // P (T)
    static constexpr int LDO = HDP + FPAD;                   // O (fp32)
    static constexpr size_t OFF_Q = 0;
    static constexpr size_t OFF_K = al128(OFF_Q + sizeof(T) * BR * LDT);
    static constexpr size_t OFF_V = al128(OFF_K + sizeof(T) * BC * LDT);
    static constexpr size_t OFF_S = al128(OFF_V + sizeof(T) * BC * LDT);
    static constexpr size_t OFF_P = al128(OFF_S + sizeof(float) * BR * LDS);
    static constexpr size_t OFF_O = al128(OFF_P + sizeof(T) * BR * LDP);
    static constexpr size_t SMEM = al128(OFF_O + sizeof(float) * BR * LDO);
};

// grid (query tiles, B·H), 32·NW threads. Query tiles are taken last-first: the causal
// tiles near the end of the sequence have the most keys, so they start first.
template <typename T, int HDP>
__global__ void __launch_bounds__(128) attn_fwd_kernel(T *out, float *lse, const T *q, const T *k, const T *v,
                                                       int T_, int H, int Hkv, int hd, float scale) {
    typedef FwdCfg<T, HDP> C;
    DYN_SMEM(smem);
    T *Qs = (T *)(smem + C::OFF_Q), *Ks = (T *)(smem + C::OFF_K), *Vs = (T *)(smem + C::OFF_V);
    float *S = (float *)(smem + C::OFF_S), *O = (float *)(smem + C::OFF_O);
    T *P = (T *)(smem + C::OFF_P);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int b = blockIdx.y / H, h = blockIdx.y % H, hk = h / (H / Hkv);
    const int i0 = (gridDim.x - 1 - blockIdx.x) * C::BR;
    const size_t qs = (size_t)H * hd, ks = (size_t)Hkv * hd;          // stride between positions
    const T *qb = q + ((size_t)b * T_ * H + h) * hd;
    const T *kb = k + ((size_t)b * T_ * Hkv + hk) * hd, *vb = v + ((size_t)b * T_ * Hkv + hk) * hd;

    load_tile<T, HDP>(Qs, C::LDT, qb, qs, i0, C::BR, T_, hd);
    for (int idx = threadIdx.x; idx < C::BR * C::LDO; idx += blockDim.x) O[idx] = 0.0f;

    // This lane's row of the warp's strip (two lanes per row: even / odd columns).
    const int r = lane & 15, half = lane >> 4;
    const int qi = i0 + warp * 16 + r;
    const int warp_last_q = i0 + warp * 16 + 15;
    float *Sw = S + warp * 16 * C::LDS, *Ow = O + warp * 16 * C::LDO;
    T *Pw = P + warp * 16 * C::LDP;
    const T *Qw = Qs + warp * 16 * C::LDT;
    float m_run = -INFINITY, l_run = 0.0f;                 // running max and sum of row qi

    const int kv_end = min(T_, i0 + C::BR);                // causal: no key after the tile's last query
    for (int j0 = 0; j0 < kv_end; j0 += C::BC) {
        __syncthreads();                                   // all warps done with the last K, V
        load_tile<T, HDP>(Ks, C::LDT, kb, ks, j0, C::BC, T_, hd);
        load_tile<T, HDP>(Vs, C::LDT, vb, ks, j0, C::BC, T_, hd);
        __syncthreads();
        if (j0 > warp_last_q) continue;                    // every key after every query of the strip
        WarpMM<T, C::BC, HDP>::nt(Sw, C::LDS, Qw, C::LDT, Ks, C::LDT);   // S = Q·K^T
        __syncwarp();
        // online softmax of row qi over this tile's keys j0 + c (masked: c > qi − j0, or past T)
        float mx = -INFINITY;
        for (int c = half; c < C::BC; c += 2) {
            int kj = j0 + c;
            if (kj <= qi && kj < T_) mx = fmaxf(mx, Sw[r * C::LDS + c] * scale);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
        float m_new = fmaxf(m_run, mx);
        float m_use = m_new == -INFINITY ? 0.0f : m_new;   // a row with nothing yet: p = 0, no NaN
        float alpha = expf(m_run - m_use);                 // 0 on the first tile (m_run = −inf)
        float rs = 0.0f;
        for (int c = half; c < C::BC; c += 2) {
            int kj = j0 + c;
            float p = (kj <= qi && kj < T_) ? expf(Sw[r * C::LDS + c] * scale - m_use) : 0.0f;
            Pw[r * C::LDP + c] = stf<T>(p);
            rs += p;
        }
        rs += __shfl_xor_sync(0xffffffffu, rs, 16);
        l_run = l_run * alpha + rs;
        m_run = m_new;
        for (int c = half; c < HDP; c += 2) Ow[r * C::LDO + c] *= alpha;
        __syncwarp();
        WarpMM<T, HDP, C::BC>::nn(Ow, C::LDO, Pw, C::LDP, Vs, C::LDT);   // O += P·V
    }
    __syncwarp();
    if (qi < T_) {
        float inv = 1.0f / l_run;
        T *orow = out + (((size_t)b * T_ + qi) * H + h) * hd;
        for (int c = half; c < hd; c += 2) orow[c] = stf<T>(Ow[r * C::LDO + c] * inv);
        if (half == 0) lse[((size_t)b * H + h) * T_ + qi] = m_run + logf(l_run);
    }
}

// ---- backward: D = rowsum(dout ⊙ out) ---------------------------------------------------------------
// One warp per (b, t, h) row; D[b, h, t] (fp32).
template <typename T>
__global__ void attn_bwd_dot_kernel(float *D, const T *dout, const T *out, int B, int T_, int H, int hd) {
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= (size_t)B * T_ * H) return;
    const T *o = out + row * hd, *g = dout + row * hd;
    float s = 0.0f;
    for (int c = lane; c < hd; c += 32) s += ldf(g[c]) * ldf(o[c]);
    s = warp_sum(s);
    int h = (int)(row % H);
    size_t bt = row / H;
    int t = (int)(bt % T_), b = (int)(bt / T_);
    if (lane == 0) D[((size_t)b * H + h) * T_ + t] = s;
}

// ---- backward: dK, dV per key tile -------------------------------------------------------------------
template <typename T, int HDP> struct BwdKVCfg {
    static constexpr int NW = (sizeof(T) == 4 && HDP > 64) ? 2 : 4;   // fp32 tiles: half the keys (shared memory)
    static constexpr int BK = 16 * NW;                       // keys per block (16 per warp)
    static constexpr int BQ = 32;                            // queries per tile
    static constexpr int LDT = HDP + Pad<T>::v;              // K, V, Q, dO
    static constexpr int LDA = HDP + FPAD;                   // dK, dV accumulators (fp32)
    static constexpr int LDQ = BQ + FPAD;                    // S^T, dP^T strips (fp32)
    static constexpr int LDQT = BQ + Pad<T>::v;              // P^T, dS^T strips (T)
    static constexpr size_t OFF_K = 0;
    static constexpr size_t OFF_V = al128(OFF_K + sizeof(T) * BK * LDT);
    static constexpr size_t OFF_DK = al128(OFF_V + sizeof(T) * BK * LDT);
    static constexpr size_t OFF_DV = al128(OFF_DK + sizeof(float) * BK * LDA);
    static constexpr size_t OFF_Q = al128(OFF_DV + sizeof(float) * BK * LDA);
    static constexpr size_t OFF_DO = al128(OFF_Q + sizeof(T) * BQ * LDT);
    static constexpr size_t OFF_LSE = al128(OFF_DO + sizeof(T) * BQ * LDT);
    static constexpr size_t OFF_D = al128(OFF_LSE + sizeof(float) * BQ);
    static constexpr size_t OFF_W = al128(OFF_D + sizeof(float) * BQ);
    // per warp: St, dPt [16][LDQ] fp32, Pt, dSt [16][LDQT] T
    static constexpr size_t W_ST = 0;
    static constexpr size_t W_DPT = al128(W_ST + sizeof(float) * 16 * LDQ);
    static constexpr size_t W_PT = al128(W_DPT + sizeof(float) * 16 * LDQ);
    static constexpr size_t W_DST = al128(W_PT + sizeof(T) * 16 * LDQT);
    static constexpr size_t W_SIZE = al128(W_DST + sizeof(T) * 16 * LDQT);
    static constexpr size_t SMEM = OFF_W + NW * W_SIZE;
};

// grid (key tiles, B·Hkv). For each query head of the GQA group and each query tile at or
// after the key tile (causal), a warp with keys kj = j0 + 16w + rr computes
//   S^T = K_w·Q^T, P^T = exp(scale·S^T − lse), dP^T = V_w·dO^T, dS^T = P^T ⊙ (dP^T − D),
//   dV_w += P^T·dO, dK_w += dS^T·Q;  then dv = dV, dk = scale·dK (stored: the op's contract).
template <typename T, int HDP>
__global__ void __launch_bounds__(128) attn_bwd_kv_kernel(T *dk, T *dv, const T *q, const T *k, const T *v,
                                                          const T *dout, const float *lse, const float *D,
                                                          int T_, int H, int Hkv, int hd, float scale) {
    typedef BwdKVCfg<T, HDP> C;
    DYN_SMEM(smem);
    T *Ks = (T *)(smem + C::OFF_K), *Vs = (T *)(smem + C::OFF_V);
    float *dK = (float *)(smem + C::OFF_DK), *dV = (float *)(smem + C::OFF_DV);
    T *Qs = (T *)(smem + C::OFF_Q), *dOs = (T *)(smem + C::OFF_DO);
    float *lse_s = (float *)(smem + C::OFF_LSE), *D_s = (float *)(smem + C::OFF_D);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    unsigned char *wbase = smem + C::OFF_W + warp * C::W_SIZE;
    float *St = (float *)(wbase + C::W_ST), *dPt = (float *)(wbase + C::W_DPT);
    T *Pt = (T *)(wbase + C::W_PT), *dSt = (T *)(wbase + C::W_DST);

    const int b = blockIdx.y / Hkv, hk = blockIdx.y % Hkv, rep = H / Hkv;
    const int j0 = blockIdx.x * C::BK;
    const size_t qs = (size_t)H * hd, ks = (size_t)Hkv * hd;
    const T *kb = k + ((size_t)b * T_ * Hkv + hk) * hd, *vb = v + ((size_t)b * T_ * Hkv + hk) * hd;
    load_tile<T, HDP>(Ks, C::LDT, kb, ks, j0, C::BK, T_, hd);
    load_tile<T, HDP>(Vs, C::LDT, vb, ks, j0, C::BK, T_, hd);
    for (int idx = threadIdx.x; idx < C::BK * C::LDA; idx += blockDim.x) { dK[idx] = 0.0f; dV[idx] = 0.0f; }

    const int k_first = j0 + warp * 16;                    // this warp's first key
    const T *Kw = Ks + warp * 16 * C::LDT, *Vw = Vs + warp * 16 * C::LDT;
    float *dKw = dK + warp * 16 * C::LDA, *dVw = dV + warp * 16 * C::LDA;

    for (int g = 0; g < rep; g++) {
        const int h = hk * rep + g;
        const T *qb = q + ((size_t)b * T_ * H + h) * hd, *gb = dout + ((size_t)b * T_ * H + h) * hd;
        const float *lse_h = lse + ((size_t)b * H + h) * T_, *D_h = D + ((size_t)b * H + h) * T_;
        for (int i0 = (j0 / C::BQ) * C::BQ; i0 < T_; i0 += C::BQ) {
            __syncthreads();                               // all warps done with the last Q, dO
            load_tile<T, HDP>(Qs, C::LDT, qb, qs, i0, C::BQ, T_, hd);
            load_tile<T, HDP>(dOs, C::LDT, gb, qs, i0, C::BQ, T_, hd);
            for (int idx = threadIdx.x; idx < C::BQ; idx += blockDim.x) {
                int t = i0 + idx;
                lse_s[idx] = t < T_ ? lse_h[t] : 0.0f;
                D_s[idx] = t < T_ ? D_h[t] : 0.0f;
            }
            __syncthreads();
            if (k_first >= T_ || k_first > i0 + C::BQ - 1) continue;    // no (key <= query) pair here
            WarpMM<T, C::BQ, HDP>::nt(St, C::LDQ, Kw, C::LDT, Qs, C::LDT);    // S^T
            WarpMM<T, C::BQ, HDP>::nt(dPt, C::LDQ, Vw, C::LDT, dOs, C::LDT);  // dP^T
            __syncwarp();
            for (int e = lane; e < 16 * C::BQ; e += 32) {
                int rr = e / C::BQ, ci = e % C::BQ, kj = k_first + rr, qi = i0 + ci;
                float p = (qi < T_ && kj <= qi) ? expf(St[rr * C::LDQ + ci] * scale - lse_s[ci]) : 0.0f;
                Pt[rr * C::LDQT + ci] = stf<T>(p);
                dSt[rr * C::LDQT + ci] = stf<T>(p * (dPt[rr * C::LDQ + ci] - D_s[ci]));
            }
            __syncwarp();
            WarpMM<T, HDP, C::BQ>::nn(dVw, C::LDA, Pt, C::LDQT, dOs, C::LDT);   // dV += P^T·dO
            WarpMM<T, HDP, C::BQ>::nn(dKw, C::LDA, dSt, C::LDQT, Qs, C::LDT);   // dK += dS^T·Q
        }
    }
    __syncwarp();
    for (int e = lane; e < 16 * HDP; e += 32) {
        int rr = e / HDP, c = e % HDP, kj = k_first + rr;
        if (kj < T_ && c < hd) {
            size_t o = (((size_t)b * T_ + kj) * Hkv + hk) * hd + c;
            dk[o] = stf<T>(scale * dKw[rr * C::LDA + c]);
            dv[o] = stf<T>(dVw[rr * C::LDA + c]);
        }
    }
}

// ---- backward: dQ per query tile -------------------------------------------------------------------------
template <typename T, int HDP> struct BwdQCfg {
    static constexpr int NW = (sizeof(T) == 4 && HDP > 64) ? 2 : 4;
    static constexpr int BQ = 16 * NW;                       // queries per block (16 per warp)
    static constexpr int BK = sizeof(T) == 2 ? 64 : 32;      // keys per tile
    static constexpr int LDT = HDP + Pad<T>::v;              // Q, dO, K, V
    static constexpr int LDA = HDP + FPAD;                   // dQ accumulator (fp32)
    static constexpr int LDK = BK + FPAD;                    // S, dP strips (fp32)
    static constexpr int LDKT = BK + Pad<T>::v;              // dS strip (T)
    static constexpr size_t OFF_Q = 0;
    static constexpr size_t OFF_DO = al128(OFF_Q + sizeof(T) * BQ * LDT);
    static constexpr size_t OFF_DQ = al128(OFF_DO + sizeof(T) * BQ * LDT);
    static constexpr size_t OFF_K = al128(OFF_DQ + sizeof(float) * BQ * LDA);
    static constexpr size_t OFF_V = al128(OFF_K + sizeof(T) * BK * LDT);
    static constexpr size_t OFF_LSE = al128(OFF_V + sizeof(T) * BK * LDT);
    static constexpr size_t OFF_D = al128(OFF_LSE + sizeof(float) * BQ);
    static constexpr size_t OFF_W = al128(OFF_D + sizeof(float) * BQ);
    static constexpr size_t W_S = 0;
    static constexpr size_t W_DP = al128(W_S + sizeof(float) * 16 * LDK);
    static constexpr size_t W_DS = al128(W_DP + sizeof(float) * 16 * LDK);
    static constexpr size_t W_SIZE = al128(W_DS + sizeof(T) * 16 * LDKT);
    static constexpr size_t SMEM = OFF_W + NW * W_SIZE;
};

// grid (query tiles, B·H), last-first as in the forward. A warp with queries
// qi = i0 + 16w + rr computes per key tile S = Q_w·K^T, P = exp(scale·S − lse),
// dP = dO_w·V^T, dS = P ⊙ (dP − D), dQ_w += dS·K; then dq = scale·dQ (stored).
template <typename T, int HDP>
__global__ void __launch_bounds__(128) attn_bwd_q_kernel(T *dq, const T *q, const T *k, const T *v, const T *dout,
                                                         const float *lse, const float *D,
                                                         int T_, int H, int Hkv, int hd, float scale) {
    typedef BwdQCfg<T, HDP> C;
    DYN_SMEM(smem);
    T *Qs = (T *)(smem + C::OFF_Q), *dOs = (T *)(smem + C::OFF_DO);
    float *dQ = (float *)(smem + C::OFF_DQ);
    T *Ks = (T *)(smem + C::OFF_K), *Vs = (T *)(smem + C::OFF_V);
    float *lse_s = (float *)(smem + C::OFF_LSE), *D_s = (float *)(smem + C::OFF_D);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    unsigned char *wbase = smem + C::OFF_W + warp * C::W_SIZE;
    float *Sw = (float *)(wbase + C::W_S), *dPw = (float *)(wbase + C::W_DP);
    T *dSw = (T *)(wbase + C::W_DS);

    const int b = blockIdx.y / H, h = blockIdx.y % H, hk = h / (H / Hkv);
    const int i0 = (gridDim.x - 1 - blockIdx.x) * C::BQ;
    const size_t qs = (size_t)H * hd, ks = (size_t)Hkv * hd;
    const T *qb = q + ((size_t)b * T_ * H + h) * hd, *gb = dout + ((size_t)b * T_ * H + h) * hd;
    const T *kb = k + ((size_t)b * T_ * Hkv + hk) * hd, *vb = v + ((size_t)b * T_ * Hkv + hk) * hd;
    const float *lse_h = lse + ((size_t)b * H + h) * T_, *D_h = D + ((size_t)b * H + h) * T_;

    load_tile<T, HDP>(Qs, C::LDT, qb, qs, i0, C::BQ, T_, hd);
    load_tile<T, HDP>(dOs, C::LDT, gb, qs, i0, C::BQ, T_, hd);
    for (int idx = threadIdx.x; idx < C::BQ * C::LDA; idx += blockDim.x) dQ[idx] = 0.0f;
    for (int idx = threadIdx.x; idx < C::BQ; idx += blockDim.x) {
        int t = i0 + idx;
        lse_s[idx] = t < T_ ? lse_h[t] : 0.0f;
        D_s[idx] = t < T_ ? D_h[t] : 0.0f;
    }

    const int q_first = i0 + warp * 16, q_last = q_first + 15;
    const T *Qw = Qs + warp * 16 * C::LDT, *dOw = dOs + warp * 16 * C::LDT;
    float *dQw = dQ + warp * 16 * C::LDA;
    const float *lse_w = lse_s + warp * 16, *D_w = D_s + warp * 16;

    const int kv_end = min(T_, i0 + C::BQ);
    for (int j0 = 0; j0 < kv_end; j0 += C::BK) {
        __syncthreads();                                   // all warps done with the last K, V
        load_tile<T, HDP>(Ks, C::LDT, kb, ks, j0, C::BK, T_, hd);
        load_tile<T, HDP>(Vs, C::LDT, vb, ks, j0, C::BK, T_, hd);
        __syncthreads();
        if (j0 > q_last || q_first >= T_) continue;        // no (key <= query) pair here
        WarpMM<T, C::BK, HDP>::nt(Sw, C::LDK, Qw, C::LDT, Ks, C::LDT);     // S
        WarpMM<T, C::BK, HDP>::nt(dPw, C::LDK, dOw, C::LDT, Vs, C::LDT);   // dP
        __syncwarp();
        for (int e = lane; e < 16 * C::BK; e += 32) {
            int rr = e / C::BK, c = e % C::BK, qi = q_first + rr, kj = j0 + c;
            float p = (qi < T_ && kj <= qi) ? expf(Sw[rr * C::LDK + c] * scale - lse_w[rr]) : 0.0f;
            dSw[rr * C::LDKT + c] = stf<T>(p * (dPw[rr * C::LDK + c] - D_w[rr]));
        }
        __syncwarp();
        WarpMM<T, HDP, C::BK>::nn(dQw, C::LDA, dSw, C::LDKT, Ks, C::LDT);   // dQ += dS·K
    }
    __syncwarp();
    for (int e = lane; e < 16 * HDP; e += 32) {
        int rr = e / HDP, c = e % HDP, qi = q_first + rr;
        if (qi < T_ && c < hd) {
            size_t o = (((size_t)b * T_ + qi) * H + h) * hd + c;
            dq[o] = stf<T>(scale * dQw[rr * C::LDA + c]);
        }
    }
}

// The most dynamic shared memory one block may have on sm_80 (A100: 163 KiB); sm_90 allows
// 227 KiB. Every tile configuration must fit the smaller.
constexpr size_t A100_SMEM_MAX = 166912;

// ---- launchers -----------------------------------------------------------------------------------------
template <typename T, int HDP>
static void fwd_launch(Backend *b, T *out, float *lse, const T *q, const T *k, const T *v,
                       int B, int T_, int H, int Hkv, int hd, float scale) {
    typedef FwdCfg<T, HDP> C;
    static_assert(C::SMEM <= A100_SMEM_MAX, "attention forward tiles exceed an A100's shared memory");
    cuda_set_smem(b, attn_fwd_kernel<T, HDP>, C::SMEM, "attention_forward");
    dim3 grid((unsigned)((T_ + C::BR - 1) / C::BR), (unsigned)(B * H));
    LAUNCH(grid, 32 * C::NW, C::SMEM, stream_of(b), attn_fwd_kernel<T, HDP>)(out, lse, q, k, v, T_, H, Hkv, hd, scale);
    LAUNCH_CHECK();
}

template <typename T, int HDP>
static void bwd_launch(Backend *b, T *dq, T *dk, T *dv, const T *dout, const T *q, const T *k, const T *v,
                       const float *lse, const float *D, int B, int T_, int H, int Hkv, int hd, float scale) {
    typedef BwdKVCfg<T, HDP> CKV;
    typedef BwdQCfg<T, HDP> CQ;
    static_assert(CKV::SMEM <= A100_SMEM_MAX, "attention dK/dV tiles exceed an A100's shared memory");
    static_assert(CQ::SMEM <= A100_SMEM_MAX, "attention dQ tiles exceed an A100's shared memory");
    cuda_set_smem(b, attn_bwd_kv_kernel<T, HDP>, CKV::SMEM, "attention_backward (dK, dV)");
    cuda_set_smem(b, attn_bwd_q_kernel<T, HDP>, CQ::SMEM, "attention_backward (dQ)");
    dim3 gkv((unsigned)((T_ + CKV::BK - 1) / CKV::BK), (unsigned)(B * Hkv));
    LAUNCH(gkv, 32 * CKV::NW, CKV::SMEM, stream_of(b), attn_bwd_kv_kernel<T, HDP>)(dk, dv, q, k, v, dout, lse, D, T_, H, Hkv, hd, scale);
    LAUNCH_CHECK();
    dim3 gq((unsigned)((T_ + CQ::BQ - 1) / CQ::BQ), (unsigned)(B * H));
    LAUNCH(gq, 32 * CQ::NW, CQ::SMEM, stream_of(b), attn_bwd_q_kernel<T, HDP>)(dq, q, k, v, dout, lse, D, T_, H, Hkv, hd, scale);
    LAUNCH_CHECK();
}

// The padded head dimension: hd rounded up to 16, 32, 64 or 128.
static int padded_hd(int hd) {
    CHECK(hd >= 1 && hd <= 128, "attention: head_dim %d not supported by the CUDA kernels (1..128)", hd);
    return hd <= 16 ? 16 : hd <= 32 ? 32 : hd <= 64 ? 64 : 128;
}
static void check_shape(int B, int T, int H, int Hkv, int hd) {
    CHECK(B >= 0 && T >= 0 && H >= 1 && Hkv >= 1 && H % Hkv == 0,
          "attention: bad shape B=%d T=%d H=%d Hkv=%d (H must be a multiple of Hkv)", B, T, H, Hkv);
    CHECK((long)B * H <= 65535, "attention: B·H = %ld exceeds the grid's 65535", (long)B * H);
    (void)padded_hd(hd);
}

#define HDP_SWITCH(hd, HDP, ...) do { switch (padded_hd(hd)) { \
    case 16: { constexpr int HDP = 16; __VA_ARGS__; } break; \
    case 32: { constexpr int HDP = 32; __VA_ARGS__; } break; \
    case 64: { constexpr int HDP = 64; __VA_ARGS__; } break; \
    default: { constexpr int HDP = 128; __VA_ARGS__; } break; } } while (0)

// ---- which attention runs: cuDNN's fused SDPA or the kernels above ------------------------------------
static const char *const ATTN_MODES[] = { "auto", "cudnn", "flash" };

// The launcher's rank of this process (Open MPI, MPICH / Intel MPI, Slurm); 0 when alone.
static int world_rank(void) {
    static const char *vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *s = getenv(vars[i]);
        if (s && *s) return atoi(s);
    }
    return 0;
}

// What ran for this call, the first time its direction and shape occur on b: one line on stderr
// (rank 0) "attention: forward B 4 T 2048 H 16 Hkv 16 hd 64: <what and why>", kept for the run's
// record (cu_take_note). Later calls of a shape already seen return at the scan.
__attribute__((format(printf, 8, 9)))
static void decided(Backend *b, int backward, int B, int T, int H, int Hkv, int hd, const char *fmt, ...) {
    CudaImpl *im = impl_of(b);
    for (int i = 0; i < im->n_attn_seen; i++) {
        const auto &s = im->attn_seen[i];
        if (s.backward == backward && s.B == B && s.T == T && s.H == H && s.Hkv == Hkv && s.hd == hd) return;
    }
    if (im->n_attn_seen == ATTN_SHAPES_MAX) {
        if (im->n_attn_notes == ATTN_SHAPES_MAX)   // once: the record says it stops here
            im->attn_notes[im->n_attn_notes++] = xstrdup("attention: more shapes than the record keeps; the later ones are not listed");
        return;
    }
    im->attn_seen[im->n_attn_seen++] = { backward, B, T, H, Hkv, hd };
    char what[640], line[800];
    va_list ap; va_start(ap, fmt); vsnprintf(what, sizeof what, fmt, ap); va_end(ap);
    snprintf(line, sizeof line, "attention %s B %d T %d H %d Hkv %d hd %d: %s", backward ? "backward" : "forward", B, T, H, Hkv, hd, what);
    im->attn_notes[im->n_attn_notes++] = xstrdup(line);
    if (world_rank() == 0) fprintf(stderr, "attention: %s\n", line + strlen("attention "));
}
// Backend.take_note: the next recorded decision, or NULL
static const char *cu_take_note(Backend *b) {
    CudaImpl *im = impl_of(b);
    return im->n_attn_taken < im->n_attn_notes ? im->attn_notes[im->n_attn_taken++] : NULL;
}

// Is cuDNN usable by b at all (asked once; the answer includes why not)?
static int cudnn_usable(Backend *b) {
    CudaImpl *im = impl_of(b);
    if (im->attn_cudnn_ok < 0) {
        if (b->dtype != DT_BF16) {
            im->attn_cudnn_ok = 0;
            snprintf(im->attn_cudnn_why, sizeof im->attn_cudnn_why, "this back end computes in %s; cuDNN's fused attention is used for bf16", dtype_name(b->dtype));
        } else {
            CUDA_CHECK(cudaSetDevice(im->device));
            im->attn_cudnn_ok = cudnn_att_available(im->attn_cudnn_why, sizeof im->attn_cudnn_why);
        }
    }
    return im->attn_cudnn_ok;
}

void cuda_attention_init(Backend *b) {
    CudaImpl *im = impl_of(b);
    im->attn_mode = CUDA_ATTN_AUTO;
    im->attn_cudnn_ok = -1;
    im->attn_used = "";
    b->take_note = cu_take_note;
    const char *env = getenv("BOOST_CUDA_ATTENTION");
    if (!env || !*env) return;
    for (int m = 0; m < 3; m++)
        if (!strcmp(env, ATTN_MODES[m])) {
            char why[512];
            if (backend_cuda_set_attention(b, m, why, sizeof why))
                die_input_hint("unset it, or BOOST_CUDA_ATTENTION=auto", "BOOST_CUDA_ATTENTION is cudnn but %s", why);
            return;
        }
    die_input_hint("BOOST_CUDA_ATTENTION=auto (cuDNN where it can, else the flash kernel), cudnn or flash",
                   "BOOST_CUDA_ATTENTION is '%s'; expected auto, cudnn or flash", env);
}
// The notes' memory (cu_destroy)
void cuda_attention_free(Backend *b) {
    CudaImpl *im = impl_of(b);
    for (int i = 0; i < im->n_attn_notes; i++) free(im->attn_notes[i]);
    im->n_attn_notes = im->n_attn_taken = 0;
}

extern "C" int backend_cuda_set_attention(Backend *b, int mode, char *why, size_t why_len) {
    CHECK(mode >= CUDA_ATTN_AUTO && mode <= CUDA_ATTN_FLASH, "backend_cuda_set_attention: mode %d", mode);
    CudaImpl *im = impl_of(b);
    if (mode == CUDA_ATTN_CUDNN && !cudnn_usable(b)) {
        snprintf(why, why_len, "%s", im->attn_cudnn_why);
        return 1;
    }
    im->attn_mode = mode;
    return 0;
}
extern "C" const char *backend_cuda_attention_used(const Backend *b) { return ((const CudaImpl *)b->impl)->attn_used; }

// 1: offer this call to cuDNN first; 0: the flash kernel, and why (recorded for the shape)
static int try_cudnn(Backend *b, int backward, int B, int T, int H, int Hkv, int hd) {
    CudaImpl *im = impl_of(b);
    if (im->attn_mode != CUDA_ATTN_FLASH && cudnn_usable(b)) return 1;
    if (im->attn_mode == CUDA_ATTN_FLASH) decided(b, backward, B, T, H, Hkv, hd, "the flash kernel (train.attention flash)");
    else decided(b, backward, B, T, H, Hkv, hd, "the flash kernel: %s", im->attn_cudnn_why);
    return 0;
}
// cuDNN refused a shape: an error when it was asked for, else the flash kernel, recorded with why
static void cudnn_refused(Backend *b, int backward, const char *why, int B, int T, int H, int Hkv, int hd) {
    CudaImpl *im = impl_of(b);
    const char *dir = backward ? "backward" : "forward";
    if (im->attn_mode == CUDA_ATTN_CUDNN)
        die_input_hint("set train.attention: auto (the flash kernel where cuDNN refuses) or flash",
                       "train.attention is cudnn but cuDNN refuses the attention %s at B %d T %d H %d Hkv %d hd %d: %s",
                       dir, B, T, H, Hkv, hd, why);
    decided(b, backward, B, T, H, Hkv, hd, "the flash kernel: cuDNN %s refuses it: %s", cudnn_att_version(), why);
}
static void ran_cudnn(Backend *b, int backward, int B, int T, int H, int Hkv, int hd) {
    CudaImpl *im = impl_of(b);
    im->attn_used = "cudnn";
    decided(b, backward, B, T, H, Hkv, hd, "cuDNN %s fused attention (train.attention %s)", cudnn_att_version(), ATTN_MODES[im->attn_mode]);
}

void cuda_attention_forward(Backend *b, void *out, float *lse, const void *q, const void *k, const void *v,
                            int B, int T, int H, int Hkv, int hd) {
    check_shape(B, T, H, Hkv, hd);
    if (B == 0 || T == 0) return;
    if (try_cudnn(b, 0, B, T, H, Hkv, hd)) {
        char why[512];
        if (!cudnn_att_forward(stream_of(b), out, lse, q, k, v, B, T, H, Hkv, hd, why, sizeof why)) {
            LAUNCH_CHECK();                        // BOOST_CUDA_DEBUG=1: a fault in cuDNN's kernel, named here
            ran_cudnn(b, 0, B, T, H, Hkv, hd);
            return;
        }
        cudnn_refused(b, 0, why, B, T, H, Hkv, hd);
    }
    impl_of(b)->attn_used = "flash";
    float scale = (float)(1.0 / sqrt((double)hd));
    if (b->dtype == DT_BF16)
        HDP_SWITCH(hd, HDP, (fwd_launch<bf16, HDP>(b, (bf16 *)out, lse, (const bf16 *)q, (const bf16 *)k, (const bf16 *)v, B, T, H, Hkv, hd, scale)));
    else
        HDP_SWITCH(hd, HDP, (fwd_launch<float, HDP>(b, (float *)out, lse, (const float *)q, (const float *)k, (const float *)v, B, T, H, Hkv, hd, scale)));
}

void cuda_attention_backward(Backend *b, void *dq, void *dk, void *dv, const void *dout, const void *out,
                             const void *q, const void *k, const void *v, const float *lse,
                             int B, int T, int H, int Hkv, int hd) {
    check_shape(B, T, H, Hkv, hd);
    if (B == 0 || T == 0) return;
    if (try_cudnn(b, 1, B, T, H, Hkv, hd)) {
        // cuDNN stores dq, dk, dv (the op's contract: they are not read) straight into the
        // outputs; a refusal comes before anything is written, so the flash kernel then
        // starts from untouched outputs (cudnn_attention.h)
        char why[512];
        if (!cudnn_att_backward(stream_of(b), dq, dk, dv, dout, out, q, k, v, lse, B, T, H, Hkv, hd, why, sizeof why)) {
            LAUNCH_CHECK();                        // BOOST_CUDA_DEBUG=1: a fault in cuDNN's kernel, named here
            ran_cudnn(b, 1, B, T, H, Hkv, hd);
            return;
        }
        cudnn_refused(b, 1, why, B, T, H, Hkv, hd);
    }
    impl_of(b)->attn_used = "flash";
    float scale = (float)(1.0 / sqrt((double)hd));
    float *D = (float *)cuda_scratch(b, SCR_ATT_D, sizeof(float) * (size_t)B * H * T);
    size_t rows = (size_t)B * T * H;
    unsigned grid = (unsigned)((rows + 7) / 8);
    DISPATCH(b->dtype, Td, (LAUNCH(grid, 256, 0, stream_of(b), attn_bwd_dot_kernel<Td>)(D, (const Td *)dout, (const Td *)out, B, T, H, hd)));
    if (b->dtype == DT_BF16)
        HDP_SWITCH(hd, HDP, (bwd_launch<bf16, HDP>(b, (bf16 *)dq, (bf16 *)dk, (bf16 *)dv, (const bf16 *)dout, (const bf16 *)q,
                                                   (const bf16 *)k, (const bf16 *)v, lse, D, B, T, H, Hkv, hd, scale)));
    else
        HDP_SWITCH(hd, HDP, (bwd_launch<float, HDP>(b, (float *)dq, (float *)dk, (float *)dv, (const float *)dout, (const float *)q,
                                                    (const float *)k, (const float *)v, lse, D, B, T, H, Hkv, hd, scale)));
}
