// roofline.h — the GEMM roofline curve of a hardware profile: wave and tile quantization,
// the main loops (and a serial epilogue, and split-K's partials) of one launch, and the
// split-K choice. Below both the profile loader (hardware.c pins the curve at its mamf
// shape with it) and the op pricing (op_time.c): it reads a profile's fields and calls
// neither. sim.h states the equations.
#pragma once
#include "hardware.h"

// Wave-quantization factor of `count` M×N outputs (one launch) in tile_m×tile_n tiles over
// sm_count processors: useful tile area / (waves · sm_count · tile area), in (0, 1]; 1 when
// sm_count is 0 (NVIDIA's "Matrix Multiplication Background" guide: tile and wave quantization).
double hw_wave_quantization(int sm_count, int tile_m, int tile_n, double M, double N, int count);
// The waves' fill alone: tiles / (waves · sm_count), without the tiles' own padding (what the
// stores of a serial epilogue see: only useful outputs are stored).
double hw_wave_fill(int sm_count, int tile_m, int tile_n, double M, double N, int count);

// Seconds of the main loops (and split-K's reduction) of one roofline GEMM launch of
// `count` M×N×K GEMMs split into s slices of K, on gemm[p] of the profile (eff_core and
// epilogue as derived at load time).
double sim_roofline_seconds(const HwProfile *hw, SimPrecision p, double M, double N, double K, int count, int s);
// Split-K (gemm.<p>.split_k: true): the number of K slices s in [1, min(sm_count, K/64)]
// that makes the launch fastest, t(s) = main loops at q(count·s) + (serial epilogue) each
// slice's stores + the s fp32 partial outputs written and read back; 1 without split-K or
// for a table.
int sim_gemm_split(const HwProfile *hw, SimPrecision p, double M, double N, double K, int count);
