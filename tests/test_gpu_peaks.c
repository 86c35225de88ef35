// test_gpu_peaks.c — the GPU parts' peaks for MFU (src/backend/cuda/cuda_peaks.c) over device
// names generated the way NVIDIA's drivers spell them (family, a separator, the variant's
// token, a memory size) and over the SM counts and clocks of every part of the table:
//   - a part's own name, SMs and clock find that part; so does its name alone where the name
//     says the variant, and the family's bare name with the part's SMs and clock (the SXM and
//     NVL parts of a family have the same SM count: the clock decides);
//   - a name whose variant disagrees with the SM count, an SM count of no part, or a family
//     token inside a longer word ("GH200" is not an H200, "A1000" not an A100) find nothing;
//   - a MIG instance gets its share of the SMs' peak; the dtypes pick their columns.
// Needs no GPU: the table is plain C in every build.
#include <ctype.h>
#include "testlib.h"
#include "../src/backend/cuda/cuda_peaks.h"
TL_MAIN_DEFS

// The name forms of a variant, as the drivers report them ("NVIDIA A100-SXM4-80GB",
// "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA A100-PCIE-40GB", "NVIDIA H200 NVL").
static const char *const SXM_FORMS[] = { "-SXM4-80GB", "-SXM4-40GB", " SXM5", " 80GB HBM3", " SXM 141GB" };
static const char *const PCIE_FORMS[] = { " PCIe", "-PCIE-40GB", " 80GB PCIe", " PCIe 80GB" };
static const char *const NVL_FORMS[] = { " NVL", " NVL 94GB", " 94GB NVL" };
static const char *const PLAIN_FORMS[] = { "", " 480GB", " 144G HBM3e", " 48GB" };
static const char *const PREFIXES[] = { "NVIDIA ", "", "Tesla " };

static int forms_of(const char *variant, const char *const **out) {
    if (!strcmp(variant, "SXM")) { *out = SXM_FORMS; return sizeof SXM_FORMS / sizeof *SXM_FORMS; }
    if (!strcmp(variant, "PCIe")) { *out = PCIE_FORMS; return sizeof PCIE_FORMS / sizeof *PCIE_FORMS; }
    if (!strcmp(variant, "NVL")) { *out = NVL_FORMS; return sizeof NVL_FORMS / sizeof *NVL_FORMS; }
    *out = PLAIN_FORMS; return sizeof PLAIN_FORMS / sizeof *PLAIN_FORMS;
}
// Two parts with the same numbers (A100 SXM4 and PCIe) are the same answer for MFU.
static int same_peaks(const CudaPart *a, const CudaPart *b) {
    return a && b && a->bf16 == b->bf16 && a->tf32 == b->tf32 && a->fp32 == b->fp32;
}
// Does another part of the family share this one's SMs and clock (then the bare name cannot tell)?
static int twin(const CudaPart *parts, int n, const CudaPart *p) {
    for (int i = 0; i < n; i++)
        if (&parts[i] != p && !strcmp(parts[i].family, p->family) && parts[i].sms == p->sms && parts[i].max_mhz == p->max_mhz) return 1;
    return 0;
}

TEST(every_generated_name_finds_its_part) {
    int n, cases = 0;
    const CudaPart *parts = backend_cuda_parts(&n);
    for (int i = 0; i < n; i++) {
        const CudaPart *p = &parts[i];
        const char *const *forms;
        int nf = forms_of(p->variant, &forms);
        for (int pre = 0; pre < 3; pre++)
            for (int f = 0; f < nf; f++) {
                char name[128];
                snprintf(name, sizeof name, "%s%s%s", PREFIXES[pre], p->family, forms[f]);
                const CudaPart *got = backend_cuda_part(name, p->sms, p->max_mhz, NULL);
                EXPECT(got == p || (twin(parts, n, p) && same_peaks(got, p)), "'%s' (%d SMs, %d MHz) found %s, not %s",
                       name, p->sms, p->max_mhz, got ? got->part : "nothing", p->part);
                // the name alone, where it says the variant (or the family has one form)
                got = backend_cuda_part(name, 0, 0, NULL);
                EXPECT(same_peaks(got, p), "'%s' without SMs and clock found %s, not %s", name, got ? got->part : "nothing", p->part);
                cases += 2;
            }
    }
    EXPECT(cases > 60, "only %d generated cases", cases);
}

TEST(the_bare_family_name_is_told_apart_by_sms_and_clock) {
    int n;
    const CudaPart *parts = backend_cuda_parts(&n);
    for (int i = 0; i < n; i++) {
        const CudaPart *p = &parts[i];
        char name[64];
        snprintf(name, sizeof name, "NVIDIA %s", p->family);
        const CudaPart *got = backend_cuda_part(name, p->sms, p->max_mhz, NULL);
        EXPECT(same_peaks(got, p), "'%s' with %d SMs at %d MHz found %s, not %s", name, p->sms, p->max_mhz, got ? got->part : "nothing", p->part);
        // a clock a little off the datasheet's (a power cap, a driver's rounding) still finds it
        for (int d = -60; d <= 60; d += 30) {
            got = backend_cuda_part(name, p->sms, p->max_mhz + d, NULL);
            EXPECT(same_peaks(got, p), "'%s' at %d MHz found %s, not %s", name, p->max_mhz + d, got ? got->part : "nothing", p->part);
        }
    }
    // the case that understated MFU on NVL parts: their names used to match the SXM rows
    const CudaPart *nvl = NULL;
    double peak = backend_cuda_part_peak("NVIDIA H100 NVL", 132, 1785, DT_BF16, 0, &nvl);
    EXPECT(nvl && !strcmp(nvl->variant, "NVL") && peak == 835.5, "H100 NVL: %s %.1f", nvl ? nvl->part : "nothing", peak);
    peak = backend_cuda_part_peak("NVIDIA H200 NVL", 132, 1785, DT_BF16, 0, &nvl);
    EXPECT(nvl && !strcmp(nvl->variant, "NVL") && peak == 835.5, "H200 NVL: %s %.1f", nvl ? nvl->part : "nothing", peak);
}

TEST(disagreeing_or_unknown_parts_find_nothing) {
    int n;
    const CudaPart *parts = backend_cuda_parts(&n);
    for (int i = 0; i < n; i++) {
        const CudaPart *p = &parts[i];
        char name[64];
        snprintf(name, sizeof name, "NVIDIA %s", p->family);
        for (int d = 1; d <= 13; d += 4) {   // SM counts of no part of the family
            int bad = 1;
            for (int j = 0; j < n; j++)
                if (!strcmp(parts[j].family, p->family) && (parts[j].sms == p->sms + d)) bad = 0;
            if (!bad) continue;
            const CudaPart *got = backend_cuda_part(name, p->sms + d, p->max_mhz, NULL);
            EXPECT(!got, "'%s' with %d SMs found %s", name, p->sms + d, got->part);
        }
        // the variant's name with another variant's SM count
        for (int j = 0; j < n; j++) {
            const CudaPart *q = &parts[j];
            if (strcmp(q->family, p->family) || !p->variant[0] || !strcmp(q->variant, p->variant) || q->sms == p->sms) continue;
            const char *const *forms;
            forms_of(p->variant, &forms);
            snprintf(name, sizeof name, "NVIDIA %s%s", p->family, forms[0]);
            const CudaPart *got = backend_cuda_part(name, q->sms, q->max_mhz, NULL);
            EXPECT(!got, "'%s' with %s's %d SMs found %s", name, q->part, q->sms, got->part);
        }
        // the family's token inside a longer word
        const char *wrap[] = { "G%s", "X%s", "%s0", "NVIDIA RTX%s" };
        for (int w = 0; w < 4; w++) {
            snprintf(name, sizeof name, wrap[w], p->family);
            int is_family = 0;   // (unless the longer word is itself a family of the table: GH200)
            for (int j = 0; j < n; j++) if (!strcmp(name, parts[j].family)) is_family = 1;
            if (is_family) continue;
            const CudaPart *got = backend_cuda_part(name, 0, 0, NULL);
            EXPECT(!got || strcmp(got->family, p->family), "'%s' found %s", name, got->part);
        }
    }
    EXPECT(!backend_cuda_part(NULL, 132, 1980, NULL), "NULL name");
    EXPECT(!backend_cuda_part("CPU emulator (src/backend/cuda/emu)", 2, 1000, NULL), "the emulator");
    const CudaPart *gh = backend_cuda_part("NVIDIA GH200 480GB", 132, 1980, NULL);
    EXPECT(gh && !strcmp(gh->family, "GH200"), "GH200 found %s", gh ? gh->part : "nothing");
}

TEST(mig_instances_and_dtypes) {
    int n;
    const CudaPart *parts = backend_cuda_parts(&n);
    for (int i = 0; i < n; i++) {
        const CudaPart *p = &parts[i];
        const char *const *forms;
        forms_of(p->variant, &forms);
        char name[96];
        snprintf(name, sizeof name, "NVIDIA %s%s MIG 1g.10gb", p->family, forms[0]);
        for (int k = 1; k <= p->sms; k += p->sms / 7 + 1) {
            double peak = backend_cuda_part_peak(name, k, p->max_mhz, DT_BF16, 0, NULL);
            EXPECT(fabs(peak - p->bf16 * k / p->sms) < 1e-9 * p->bf16, "'%s' with %d SMs: %.4f, want %.4f", name, k, peak, p->bf16 * k / p->sms);
        }
        snprintf(name, sizeof name, "NVIDIA %s%s", p->family, forms[0]);
        EXPECT(backend_cuda_part_peak(name, p->sms, p->max_mhz, DT_F32, 1, NULL) == p->tf32 &&
               backend_cuda_part_peak(name, p->sms, p->max_mhz, DT_F32, 0, NULL) == p->fp32, "%s: tf32/fp32 columns", p->part);
        EXPECT(p->bf16 > p->tf32 && p->tf32 > p->fp32 && p->source && (strstr(p->source, "datasheet") || strstr(p->source, "brief")),
               "%s: peaks %.1f %.1f %.1f, source '%s'", p->part, p->bf16, p->tf32, p->fp32, p->source);
    }
}

int main(void) {
    RUN(every_generated_name_finds_its_part);
    RUN(the_bare_family_name_is_told_apart_by_sms_and_clock);
    RUN(disagreeing_or_unknown_parts_find_nothing);
    RUN(mig_instances_and_dtypes);
    TL_EXIT();
}
