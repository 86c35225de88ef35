// cuda_peaks.c — the table of GPU parts and their dense peaks (cuda_peaks.h). Every number is
// the datasheet's; NVIDIA prints the tensor-core rates with 2:4 sparsity, so the dense rate is
// half the printed one. SM counts and maximum clocks tell apart what a device name may not (a
// VM or a container may report "NVIDIA H100" alone): the SXM and NVL parts of the H100 both
// have 132 SMs but boost to 1980 and 1785 MHz; the PCIe part has 114.
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "cuda_peaks.h"

#define A100_SHEET "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/a100): BF16 312, TF32 156, FP32 19.5 TFLOPS, SXM4 and PCIe alike"
#define H100_SHEET "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/h100), H100 SXM column: BF16 1979*, TF32 989*, FP32 67 TFLOPS (* sparse)"
#define H100_PCIE_SHEET "NVIDIA H100 PCIe product brief PB-11133 and the 2022 H100 datasheet, PCIe column: BF16 1513*, TF32 756*, FP32 51 TFLOPS"
#define H100_NVL_SHEET "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/h100), H100 NVL column: BF16 1671*, TF32 835*, FP32 60 TFLOPS"
#define H200_SHEET "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/h200), H200 SXM column: BF16 1979*, TF32 989*, FP32 67 TFLOPS"
#define H200_NVL_SHEET "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/h200), H200 NVL column: BF16 1671*, TF32 835*, FP32 60 TFLOPS"
#define GH200_SHEET "NVIDIA GH200 Grace Hopper Superchip datasheet: the H100 SXM's tensor-core rates, FP32 67 TFLOPS"
#define L40S_SHEET "NVIDIA L40S datasheet: BF16 362.05 (733*), TF32 183 (366*), FP32 91.6 TFLOPS"

// The first row of a family is its default where neither the name nor the SMs and clock decide.
static const CudaPart PARTS[] = {
    { "A100 SXM4", "A100", "SXM", 108, 1410, 312.0, 156.0, 19.5, A100_SHEET },
    { "A100 PCIe", "A100", "PCIe", 108, 1410, 312.0, 156.0, 19.5, A100_SHEET },
    { "H100 SXM5", "H100", "SXM", 132, 1980, 989.4, 494.7, 66.9, H100_SHEET },
    { "H100 NVL", "H100", "NVL", 132, 1785, 835.5, 417.5, 60.0, H100_NVL_SHEET },
    { "H100 PCIe", "H100", "PCIe", 114, 1755, 756.0, 378.0, 51.2, H100_PCIE_SHEET },
    { "H200 SXM", "H200", "SXM", 132, 1980, 989.4, 494.7, 67.0, H200_SHEET },
    { "H200 NVL", "H200", "NVL", 132, 1785, 835.5, 417.5, 60.0, H200_NVL_SHEET },
    { "GH200", "GH200", "", 132, 1980, 989.4, 494.7, 66.9, GH200_SHEET },
    { "L40S", "L40S", "", 142, 2520, 362.05, 183.0, 91.6, L40S_SHEET },
};
enum { N_PARTS = sizeof PARTS / sizeof PARTS[0] };

const CudaPart *backend_cuda_parts(int *n) { *n = N_PARTS; return PARTS; }

// token occurs in s as a word: neither preceded nor followed by a letter or digit ("GH200" is
// not an H200, the RTX "A1000" not an A100)
static int has_token(const char *s, const char *token) {
    size_t n = strlen(token);
    for (const char *p = s; (p = strstr(p, token)); p++)
        if ((p == s || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n])) return 1;
    return 0;
}
static int has_word_nocase(const char *s, const char *w) {
    size_t n = strlen(w);
    for (const char *p = s; *p; p++)
        if (!strncasecmp(p, w, n) && (p == s || !isalnum((unsigned char)p[-1]))) return 1;
    return 0;
}
// The variant a device name states, or "" (NVL first: an NVL name may also say HBM3)
static const char *name_variant(const char *name) {
    if (has_word_nocase(name, "NVL")) return "NVL";
    if (strcasestr(name, "PCIe")) return "PCIe";
    if (strcasestr(name, "SXM") || strcasestr(name, "HBM3")) return "SXM";
    return "";
}

const CudaPart *backend_cuda_part(const char *name, int sms, int max_mhz, double *scale) {
    if (scale) *scale = 1.0;
    if (!name) return NULL;
    const char *family = NULL;
    for (int i = 0; i < N_PARTS && !family; i++)
        if (has_token(name, PARTS[i].family)) family = PARTS[i].family;
    if (!family) return NULL;
    int mig = strstr(name, " MIG ") != NULL;
    const char *variant = name_variant(name);
    const CudaPart *best = NULL;
    int best_dist = 0;
    for (int i = 0; i < N_PARTS; i++) {
        const CudaPart *p = &PARTS[i];
        if (strcmp(p->family, family)) continue;
        if (p->variant[0] && variant[0] && strcmp(p->variant, variant)) continue;   // the name says which
        if (sms > 0 && !mig && sms != p->sms) continue;                             // a part's SMs are fixed
        if (mig && sms > p->sms) continue;
        int dist = max_mhz > 0 ? (max_mhz > p->max_mhz ? max_mhz - p->max_mhz : p->max_mhz - max_mhz) : 0;
        if (!best || dist < best_dist) { best = p; best_dist = dist; }
    }
    if (best && mig && sms > 0 && scale) *scale = (double)sms / best->sms;
    return best;
}

double backend_cuda_part_peak(const char *name, int sms, int max_mhz, DType dtype, int tf32, const CudaPart **part) {
    double scale = 1.0;
    const CudaPart *p = backend_cuda_part(name, sms, max_mhz, &scale);
    if (part) *part = p;
    if (!p) return 0.0;
    return scale * (dtype == DT_BF16 ? p->bf16 : tf32 ? p->tf32 : p->fp32);
}
