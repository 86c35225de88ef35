// hardware_write.c — a profile back to YAML (build/calibrate writes cpu-local.yaml with it).
// The output reads back with hw_load to the same numbers (to the 6 significant digits
// written; tests/test_sim.c checks the round trip).
#include <string.h>

#include "hardware.h"

static void comment_lines(FILE *f, const char *text, const char *indent) {
    if (!text) return;
    for (const char *s = text; *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        fprintf(f, "%s# %.*s\n", indent, (int)n, s);
        s += n + (e ? 1 : 0);
    }
}

static void quoted(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if (*s == '\n') { fputs("\\n", f); continue; }
        fputc(*s, f);
    }
    fputc('"', f);
}

static const char *section(const char *const *comments, int k) { return comments ? comments[k] : NULL; }

// "PREFIX{n: v, ...}END" for a table with entries; nothing for an absent one. %.9g: a factor
// or a latency reads back within 1e-9.
static void write_rank_table(FILE *f, const char *prefix, const HwRankTable *t, const char *end) {
    for (int i = 0; i < t->n; i++) fprintf(f, "%s%s%d: %.9g%s", i ? "" : prefix, i ? ", " : "{", t->at[i], t->v[i], i + 1 == t->n ? "}" : "");
    if (t->n) fputs(end, f);
}

// "{base_s: .., hop_s: .., busbw: ..}" (busbw a number or {n: bw, ...}).
static void write_cost(FILE *f, const HwCollCost *cc) {
    fprintf(f, "{base_s: %.6g, hop_s: %.6g, busbw: ", cc->base_s, cc->hop_s);
    if (cc->n_bw == 1 && cc->bw_n[0] == 0) fprintf(f, "%.6g}", cc->bw[0]);
    else {
        for (int i = 0; i < cc->n_bw; i++) fprintf(f, "%s%d: %.6g", i ? ", " : "{", cc->bw_n[i], cc->bw[i]);
        fprintf(f, "}}");
    }
}

void hw_write_yaml(FILE *f, const HwProfile *p, const char *header, const char *const *comments) {
    static const char *const links[HW_LINK_COUNT] = { "intra_node", "inter_node" };
    static const char *const algos[] = { "ring", "tree", "auto" };
    comment_lines(f, header, "");
    fprintf(f, "profile_version: %d\nname: %s\ndescription: ", HW_PROFILE_VERSION, p->name);
    quoted(f, p->description);
    fprintf(f, "\ndevice: ");
    quoted(f, p->device);
    fprintf(f, "\nranks_per_node: %d\n", p->ranks_per_node);
    comment_lines(f, section(comments, HW_SEC_MEMORY), "");
    fprintf(f, "memory_bytes: %.6g\nmemory_bandwidth: %.6g\nmemory_efficiency: %.6g\nhost_bandwidth: %.6g\n"
               "op_overhead_s: %.6g\nsm_count: %d\n",
            p->memory_bytes, p->memory_bandwidth, p->memory_efficiency, p->host_bandwidth, p->op_overhead_s, p->sm_count);
    if (p->launch_s > 0) fprintf(f, "launch_s: %.6g\n", p->launch_s);
    if (p->launch_python_s != p->launch_s) fprintf(f, "launch_python_s: %.6g\n", p->launch_python_s);
    if (p->clock_sustained_mhz > 0)
        fprintf(f, "clock: {boost_mhz: %.6g, sustained_mhz: %.6g}\n", p->clock_boost_mhz, p->clock_sustained_mhz);
    comment_lines(f, section(comments, HW_SEC_PEAK), "");
    fprintf(f, "peak_flops:\n");
    for (int i = 0; i < SP_COUNT; i++)
        if (p->peak_flops[i] > 0) fprintf(f, "  %s: %.6g\n", sim_precision_name((SimPrecision)i), p->peak_flops[i]);
    comment_lines(f, section(comments, HW_SEC_GEMM), "");
    fprintf(f, "gemm:\n");
    for (int i = 0; i < SP_COUNT; i++) {
        const HwGemm *g = &p->gemm[i];
        if (!g->present) continue;
        fprintf(f, "  %s:\n", sim_precision_name((SimPrecision)i));
        if (g->model == GEMM_ROOFLINE) {
            fprintf(f, "    model: roofline\n    tile: [%d, %d]\n    mamf: %.6g\n    mamf_shape: [%d, %d, %d]\n",
                    g->tile_m, g->tile_n, g->mamf, g->mamf_M, g->mamf_N, g->mamf_K);
            if (g->epilogue_serial) fprintf(f, "    epilogue: serial\n");
            if (g->split_k) fprintf(f, "    split_k: true\n");
            continue;
        }
        fprintf(f, "    model: table\n");
        if (g->in_step > 0) fprintf(f, "    in_step: %.6g\n", g->in_step);
        fprintf(f, "    points:   # [M, N, K, FLOP/s]\n");
        for (int a = 0; a < g->nM; a++)
            for (int b = 0; b < g->nN; b++)
                for (int k = 0; k < g->nK; k++)
                    fprintf(f, "      - [%d, %d, %d, %.6g]\n", g->Ms[a], g->Ns[b], g->Ks[k],
                            g->rate[((size_t)a * g->nN + b) * g->nK + k]);
    }
    comment_lines(f, section(comments, HW_SEC_ATTENTION), "");
    fprintf(f, "attention:\n");
    for (int i = 0; i < SP_COUNT; i++)
        if (p->attention[i].present)
            fprintf(f, "  %s: {forward: %.6g, backward: %.6g}\n", sim_precision_name((SimPrecision)i),
                    p->attention[i].forward, p->attention[i].backward);
    fprintf(f, "all_reduce_algorithm: %s\n", algos[p->all_reduce_algorithm]);
    comment_lines(f, section(comments, HW_SEC_LINKS), "");
    fprintf(f, "links:%s\n", p->link[HW_INTRA].present || p->link[HW_INTER].present ? "" : " {}");
    for (int l = 0; l < HW_LINK_COUNT; l++) {
        const HwLink *k = &p->link[l];
        if (!k->present) continue;
        fprintf(f, "  %s:\n", links[l]);
        for (int c = 0; c < HW_COLL_COUNT; c++) {
            fprintf(f, "    %s: ", hw_coll_name((HwColl)c));
            write_cost(f, &k->coll[c]);
            fprintf(f, "\n");
        }
        int any_ordered = 0;
        for (int c = 0; c < HW_COLL_COUNT; c++)
            if (k->has_ordered[c]) {
                fprintf(f, "%s%s: ", any_ordered++ ? ", " : "    ordered: {", hw_coll_name((HwColl)c));
                write_cost(f, &k->ordered[c]);
            }
        if (any_ordered) fprintf(f, "}\n");
        if (k->has_ll)
            fprintf(f, "    ll: {base_s: %.6g, hop_s: %.6g, bw_fraction: %.6g}\n", k->ll_base_s, k->ll_hop_s, k->ll_bw_fraction);
        if (k->curve.n) {   // the shape, written as busbw fractions of the largest message (it reads back the same)
            fprintf(f, "    size_curve: {ranks: %d, points: [", k->curve.ranks);
            for (int i = 0; i < k->curve.n; i++) fprintf(f, "%s[%.17g, %.17g]", i ? ", " : "", k->curve.bytes[i], k->curve.frac[i]);
            fprintf(f, "]}\n");
        }
        if (k->nics_per_node) fprintf(f, "    nics_per_node: %d\n", k->nics_per_node);
        write_rank_table(f, "    in_step: ", &k->in_step, "\n");
        int any_by = 0;
        for (int g = 0; g < GROUP_COUNT; g++)
            for (int c = 0; c < HW_P2P; c++)
                if (k->in_step_by[g][c].n) {
                    char key[64];
                    snprintf(key, sizeof key, "%s%s_%s: ", any_by++ ? ", " : "    in_step_by: {", comm_group_name((CommGroup)g),
                             hw_coll_name((HwColl)c));
                    write_rank_table(f, key, &k->in_step_by[g][c], "");
                }
        if (any_by) fprintf(f, "}\n");
        write_rank_table(f, "    in_step_call_s: ", &k->in_step_call_s, "\n");
    }
    int any_rates = 0;
    for (int i = 0; i < SP_COUNT; i++) any_rates |= p->n_op_rates[i] > 0;
    if (any_rates) {
        comment_lines(f, section(comments, HW_SEC_OP_RATES), "");
        fprintf(f, "op_rates:\n");
        for (int i = 0; i < SP_COUNT; i++) {
            if (!p->n_op_rates[i]) continue;
            fprintf(f, "  %s:\n", sim_precision_name((SimPrecision)i));
            for (int k = 0; k < p->n_op_rates[i]; k++)
                fprintf(f, "    %s: {%s: %.6g}\n", p->op_rates[i][k].name, p->op_rates[i][k].per_byte ? "byte_per_s" : "flop_per_s",
                        p->op_rates[i][k].rate);
        }
    }
    if (p->rank_share.n) {
        comment_lines(f, section(comments, HW_SEC_SHARE), "");
        write_rank_table(f, "rank_share: ", &p->rank_share, "\n");
    }
}
