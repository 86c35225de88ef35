// cuda_peaks.h — the dense tensor-core peaks of the GPUs MFU is measured against, by part
// (SXM, PCIe and NVL variants apart), from NVIDIA's datasheets (cuda_peaks.c cites each). Plain
// C, no CUDA: the table and its matching are compiled into every build and unit-tested over
// generated device names (tests/test_gpu_peaks.c).
#pragma once
#include "../backend.h"

typedef struct {
    const char *part;       // "H100 NVL"
    const char *family;     // the token in the device name: "H100"
    const char *variant;    // "SXM", "PCIe", "NVL", "" (one form only)
    int sms;                // streaming multiprocessors of the full part
    int max_mhz;            // maximum SM clock (nvidia-smi clocks.max.sm)
    double bf16, tf32, fp32;   // dense TFLOP/s: bf16 and TF32 tensor cores, fp32 without TF32
    const char *source;     // the datasheet
} CudaPart;

// The part a device is, from its name (cudaDeviceProp.name: "NVIDIA H100 NVL", "NVIDIA
// A100-SXM4-80GB", ...), its SM count and its maximum SM clock in MHz (0: unknown, not used).
// The family is the name's token (GH200 is not H200); the variant is the name's (NVL, PCIe,
// SXM or HBM3) or, where the name does not say, the one whose SM count matches and whose clock
// is nearest. A name with a variant must agree with the SM count; a MIG instance ("... MIG
// 1g.10gb") has a share of the SMs and gets that share of the peak (*scale). NULL: no part of
// the table fits (MFU is then not measured, said once, unless BOOST_GPU_PEAK_TFLOPS is set).
const CudaPart *backend_cuda_part(const char *name, int sms, int max_mhz, double *scale);
// The part's dense peak in TFLOP/s for the compute dtype (bf16; fp32 with or without TF32),
// times the MIG share; 0 for an unknown part. *part (may be NULL) gets the part.
double backend_cuda_part_peak(const char *name, int sms, int max_mhz, DType dtype, int tf32, const CudaPart **part);
// The table itself (for the tests and the docs): n rows.
const CudaPart *backend_cuda_parts(int *n);
