// roofline.c — see roofline.h.
#include "roofline.h"

#include <math.h>

double hw_wave_fill(int sm_count, int tile_m, int tile_n, double M, double N, int count) {
    if (sm_count <= 0 || tile_m <= 0 || tile_n <= 0 || M <= 0 || N <= 0) return 1.0;
    double tiles = (count > 1 ? count : 1) * ceil(M / tile_m) * ceil(N / tile_n);
    return tiles / (ceil(tiles / sm_count) * sm_count);
}

double hw_wave_quantization(int sm_count, int tile_m, int tile_n, double M, double N, int count) {
    if (sm_count <= 0 || tile_m <= 0 || tile_n <= 0 || M <= 0 || N <= 0) return 1.0;
    double n = count > 1 ? count : 1;
    double tiles = n * ceil(M / tile_m) * ceil(N / tile_n);
    double waves = ceil(tiles / sm_count);
    // useful work over the work of `waves` full waves of whole tiles
    return n * M * N / (waves * sm_count * (double)tile_m * tile_n);
}

// A batched group fills the processors with count × s × the tiles of one GEMM; a serial
// epilogue then stores each slice's useful outputs (elem_bytes each) at the memory bandwidth
// over the waves' tiles; s > 1 writes and reads back s fp32 partial outputs (sim.h).
double sim_roofline_seconds(const HwProfile *hw, SimPrecision p, double M, double N, double K, int count, int s) {
    const HwGemm *g = &hw->gemm[p];
    double bw = hw_memory_rate(hw), flops = 2 * M * N * K * count;
    double t = flops / (hw->peak_flops[p] * g->eff_core * hw_wave_quantization(hw->sm_count, g->tile_m, g->tile_n, M, N, count * s));
    if (g->epilogue_serial)
        t += s * M * N * count * (p == SP_BF16 ? 2.0 : 4.0) / (bw * hw_wave_fill(hw->sm_count, g->tile_m, g->tile_n, M, N, count * s));
    if (s > 1) t += 2.0 * s * M * N * count * 4 / bw;
    return t;
}

int sim_gemm_split(const HwProfile *hw, SimPrecision p, double M, double N, double K, int count) {
    const HwGemm *g = &hw->gemm[p];
    if (g->model != GEMM_ROOFLINE || !g->split_k) return 1;
    int smax = (int)(K / HW_SPLIT_K_MIN);
    if (smax > hw->sm_count) smax = hw->sm_count;
    int best = 1;
    double tb = sim_roofline_seconds(hw, p, M, N, K, count, 1);
    for (int s = 2; s <= smax; s++) {
        double t = sim_roofline_seconds(hw, p, M, N, K, count, s);
        if (t < tb) { tb = t; best = s; }
    }
    return best;
}
