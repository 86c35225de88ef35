// op_time.c — seconds of one traced op on a hardware profile (sim.h states the equations).
#include <math.h>
#include <string.h>

#include "../core/check.h"
#include "roofline.h"
#include "sim.h"

// Position of v on an ascending grid axis in log2 space: the bracketing indices and the
// weight of the upper one; outside the grid the nearest edge (no extrapolation).
static void axis_pos(const int *ax, int n, double v, int *i0, int *i1, double *w) {
    *w = 0;
    if (n == 1 || v <= ax[0]) { *i0 = *i1 = 0; return; }
    if (v >= ax[n - 1]) { *i0 = *i1 = n - 1; return; }
    int i = 0;
    while (i + 1 < n && ax[i + 1] <= v) i++;
    *i0 = i;
    *i1 = i + 1;
    *w = (log2(v) - log2(ax[i])) / (log2(ax[i + 1]) - log2(ax[i]));
}

// Trilinear interpolation of log(rate) over (log2 M, log2 N, log2 K).
static double table_rate(const HwGemm *g, double M, double N, double K) {
    int a[2], b[2], k[2];
    double wa, wb, wk;
    axis_pos(g->Ms, g->nM, M, &a[0], &a[1], &wa);
    axis_pos(g->Ns, g->nN, N, &b[0], &b[1], &wb);
    axis_pos(g->Ks, g->nK, K, &k[0], &k[1], &wk);
    double acc = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int l = 0; l < 2; l++) {
                double w = (i ? wa : 1 - wa) * (j ? wb : 1 - wb) * (l ? wk : 1 - wk);
                if (w == 0) continue;
                acc += w * log(g->rate[((size_t)a[i] * g->nN + b[j]) * g->nK + k[l]]);
            }
    return exp(acc);
}

double sim_gemm_rate(const HwProfile *hw, SimPrecision p, double M, double N, double K, int count) {
    const HwGemm *g = &hw->gemm[p];
    CHECK(g->present, "profile %s has no gemm.%s model", hw->name, sim_precision_name(p));
    if (g->model == GEMM_TABLE) return table_rate(g, M, N, K);
    return 2 * M * N * K * count / sim_roofline_seconds(hw, p, M, N, K, count, sim_gemm_split(hw, p, M, N, K, count));
}

double sim_gemm_time(const HwProfile *hw, SimPrecision p, double M, double N, double K, int count,
                     double flops, double bytes) {
    if (!(flops > 0) || M <= 0 || N <= 0 || K <= 0) return hw->op_overhead_s;   // an empty call
    double t = flops / sim_gemm_rate(hw, p, M, N, K, count);
    // a table's rates were timed around whole calls: they hold the call's overhead already;
    // in_step: a call inside a step against the same call alone (calibrate 4c.)
    if (hw->gemm[p].model == GEMM_TABLE) return hw->gemm[p].in_step > 0 ? t * hw->gemm[p].in_step : t;
    t *= hw_clock_factor(hw);   // the compute at the SM clock a step sustains (clock; §19, 1.)
    double t_mem = bytes / hw_memory_rate(hw);
    return (t_mem > t ? t_mem : t) + hw->op_overhead_s;
}

double sim_flash_head_fraction(double head_dim) {
    if (!(head_dim > 0)) return 1.0;   // an op without its shape: the profile's efficiency as it is
    return head_dim / (SIM_FLASH_HEAD_PAD * ceil(head_dim / SIM_FLASH_HEAD_PAD));
}

// A flash-attention kernel at `speed` × the profile's efficiencies (FlashAttention-2's; an op
// whose name contains "backward" uses the backward one) × the useful share of its padded head
// dimension (OpInfo K), at the sustained clock, under the memory roofline.
static double flash_time(const HwProfile *hw, SimPrecision p, const OpInfo *op, double speed) {
    const HwAttention *a = &hw->attention[p];
    CHECK(a->present, "profile %s has no attention.%s efficiency", hw->name, sim_precision_name(p));
    double eff = (op->name && strstr(op->name, "backward") ? a->backward : a->forward) * speed * sim_flash_head_fraction(op->K);
    double t = op->flops / (hw->peak_flops[p] * eff) * hw_clock_factor(hw), mem = op->bytes / hw_memory_rate(hw);
    return (t > mem ? t : mem) + hw->op_overhead_s;
}

double sim_op_time(const HwProfile *hw, SimPrecision p, const OpInfo *op) {
    const HwOpRate *named = hw_op_rate(hw, p, op->name);   // measured as itself: whole calls
    if (named) return (named->per_byte ? op->bytes : op->flops) / named->rate;
    double mem = op->bytes / hw_memory_rate(hw);
    switch (op->cls) {
    case OPC_GEMM:
        return sim_gemm_time(hw, p, op->M, op->N, op->K, op->count, op->flops, op->bytes);
    case OPC_ATTENTION:
        return flash_time(hw, p, op, 1.0);
    case OPC_MEMORY:
        return mem + hw->op_overhead_s;
    case OPC_TRANSFER:
        return op->bytes / hw->host_bandwidth + hw->op_overhead_s;
    default:
        DIE("sim_op_time: op '%s' has unknown class %d", op->name ? op->name : "?", (int)op->cls);
    }
}

const char *sim_attention_kernel_name(SimAttentionKernel k) {
    static const char *const names[SIM_ATT_COUNT] = { "flash", "materialized", "materialized-dropout", "flash1" };
    return (unsigned)k < SIM_ATT_COUNT ? names[k] : "?";
}

double sim_memory_pass_time(const HwProfile *hw, double bytes) { return bytes / hw_memory_rate(hw) + hw->op_overhead_s; }
// One strided-batched GEMM launch of `count` [M, K] x [K, N] products at elem bytes c.
static double bgemm(const HwProfile *hw, SimPrecision p, double M, double N, double K, double count, double c) {
    int n = count > 1 ? (count < 1 << 30 ? (int)count : 1 << 30) : 1;
    return sim_gemm_time(hw, p, M, N, K, n, 2 * M * N * K * count, c * count * (M * K + K * N + M * N));
}

double sim_attention_materialized_time(const HwProfile *hw, SimPrecision p, const OpInfo *op, int dropout) {
    CHECK(op->M > 0 && op->N > 0 && op->K > 0, "sim: attention op '%s' carries no shape (batch x heads, sequence, head dim)",
          op->name ? op->name : "?");
    double BH = op->M, T = op->N, hd = op->K, c = p == SP_BF16 ? 2.0 : 4.0, s2 = BH * T * T;
    if (!(op->name && strstr(op->name, "backward"))) {
        double t = bgemm(hw, p, T, T, hd, BH, c)                           // S = Q·Kᵀ (baddbmm)
                 + sim_memory_pass_time(hw, 2 * c * s2)                    // fused scale-mask-softmax: read S, write P
                 + bgemm(hw, p, T, hd, T, BH, c);                          // O = P·V (bmm)
        if (dropout) t += sim_memory_pass_time(hw, (2 * c + 1) * s2);      // read P, write P', write the mask
        return t;
    }
    double t = bgemm(hw, p, T, T, hd, BH, c)                               // dP = dO·Vᵀ
             + bgemm(hw, p, T, hd, T, BH, c)                               // dV = Pᵀ·dO
             + sim_memory_pass_time(hw, 3 * c * s2)                        // softmax backward: read P, dP, write dS
             + 2 * bgemm(hw, p, T, hd, T, BH, c);                          // dQ = dS·K, dK = dSᵀ·Q
    if (dropout) t += sim_memory_pass_time(hw, (2 * c + 1) * s2);          // read dP', the mask, write dP
    return t;
}

// FlashAttention-2 "is about 2x faster than its previous version" (Dao 2023; FlashAttention v1
// reached "25-40% of the theoretical maximum FLOPs/s"): v1 runs at half the profile's efficiencies
// (docs/performance-model.md §12, 2.).
#define SIM_FLASH1_SPEED 0.5

double sim_attention_kernel_time(const HwProfile *hw, SimPrecision p, const OpInfo *op, SimAttentionKernel k) {
    switch (k) {
    case SIM_ATT_FLASH: return sim_op_time(hw, p, op);
    case SIM_ATT_FLASH1: return flash_time(hw, p, op, SIM_FLASH1_SPEED);
    case SIM_ATT_MATERIALIZED: return sim_attention_materialized_time(hw, p, op, 0);
    case SIM_ATT_MATERIALIZED_DROPOUT: return sim_attention_materialized_time(hw, p, op, 1);
    default: DIE("sim: attention kernel %d", (int)k);
    }
}

// ---- the eager element-wise compositions (docs/performance-model.md §20, 1.) ------------------
// Bytes per element of each kernel of a family's reference composition (bf16 storage 2 B, fp32
// intermediates 4 B; per-row values, cos and sin broadcast and not counted; views free; a framework
// operation reads its inputs and writes its output once), and the FLOPs per element of the engine's
// op (ops.h), which give the element count.
typedef struct { const char *op; SimUnfused family; double flops_per_elem; int n; double bytes[SIM_UNFUSED_MAX_KERNELS]; } Composition;
static const Composition COMPOSITIONS[] = {
    // Hugging Face LlamaRMSNorm: to-fp32, pow, mean, +eps, rsqrt, × rsqrt, to-bf16, × weight
    { "rmsnorm_forward", SIM_UNFUSED_NORM, 4, 8, { 6, 8, 4, 0, 0, 8, 6, 4 } },
    // its autograd: × weight (input gradient; the weight gradient's product and row sum), to-bf16,
    // × rsqrt (input gradient; the rsqrt gradient's product and row sum), rsqrt and +eps, mean, pow,
    // the two fp32 input gradients summed, to-fp32
    { "rmsnorm_backward", SIM_UNFUSED_NORM, 10, 12, { 4, 6, 2, 6, 8, 12, 4, 0, 4, 12, 12, 6 } },
    // apply_rotary_pos_emb per tensor: −x2, cat, × cos, × sin, +
    { "rope_forward", SIM_UNFUSED_ROPE, 3, 5, { 2, 4, 4, 4, 6 } },
    // its autograd: × cos, × sin, the negation, the two slices into full-size gradients, two sums
    { "rope_backward", SIM_UNFUSED_ROPE, 3, 7, { 4, 4, 2, 4, 4, 6, 6 } },
    // act_fn(gate) * up: silu, ×
    { "swiglu_forward", SIM_UNFUSED_SWIGLU, 5, 2, { 4, 6 } },
    // its autograd: up's gradient (× silu(gate)), silu output's gradient (× up), silu's backward
    { "swiglu_backward", SIM_UNFUSED_SWIGLU, 12, 3, { 6, 6, 6 } },
};

const char *sim_unfused_name(SimUnfused f) {
    static const char *const names[SIM_UNFUSED_COUNT] = { "norm", "rope", "swiglu" };
    return (unsigned)f < SIM_UNFUSED_COUNT ? names[f] : "?";
}

int sim_unfused_kernels(const OpInfo *op, unsigned mask, double bytes[SIM_UNFUSED_MAX_KERNELS]) {
    if (!mask || !op->name || op->cls != OPC_MEMORY) return 0;
    for (size_t i = 0; i < sizeof COMPOSITIONS / sizeof COMPOSITIONS[0]; i++) {
        const Composition *c = &COMPOSITIONS[i];
        if (!(mask & 1u << c->family) || strcmp(op->name, c->op)) continue;
        double n = op->flops / c->flops_per_elem;
        for (int k = 0; k < c->n; k++) bytes[k] = c->bytes[k] * n;
        return c->n;
    }
    return 0;
}
