// profile.c — see profile.h.
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "ops.h"
#include "../core/check.h"
#include "../core/timer.h"

static void on_begin(void *ctx, const OpInfo *op) {
    OpProfile *p = ctx;
    (void)op;
    if (p->timed) { op_sync(p->bk); p->t_begin = now_seconds(); }
}

static OpAggregate *find(OpProfile *p, const char *name, Phase phase) {
    for (int i = 0; i < p->n_agg; i++)   // names are string literals of ops.c: compare by content
        if (p->agg[i].phase == phase && !strcmp(p->agg[i].name, name)) return &p->agg[i];
    p->agg = vec_grow(p->agg, &p->n_agg, &p->cap_agg, sizeof *p->agg);
    OpAggregate *a = &p->agg[p->n_agg - 1];
    memset(a, 0, sizeof *a);
    a->name = name; a->phase = phase;
    return a;
}

static void on_end(void *ctx, const OpInfo *op) {
    OpProfile *p = ctx;
    double dt = 0;
    if (p->timed) { op_sync(p->bk); dt = now_seconds() - p->t_begin; }
    OpAggregate *a = find(p, op->name, op->phase);
    a->calls++; a->flops += op->flops; a->bytes += op->bytes; a->seconds += dt;
    if (p->keep_trace) {
        if (p->n_trace == p->cap_trace) {
            p->cap_trace = p->cap_trace ? 2 * p->cap_trace : 1024;
            p->trace = xrealloc(p->trace, p->cap_trace * sizeof *p->trace);
        }
        p->trace[p->n_trace].op = *op;
        p->trace[p->n_trace++].seconds = dt;
    }
}

static const OpObserver profile_observer = { on_begin, on_end };

void op_profile_attach(OpProfile *p, Backend *b, int timed, int keep_trace) {
    memset(p, 0, sizeof *p);
    p->bk = b; p->timed = timed; p->keep_trace = keep_trace;
    bk_observe(b, &profile_observer, p);
}
void op_profile_detach(OpProfile *p) {
    if (p->bk && p->bk->obs_ctx == p) bk_observe(p->bk, NULL, NULL);   // bk NULL: detached already
    free(p->trace); free(p->agg);
    memset(p, 0, sizeof *p);
}
void op_profile_reset(OpProfile *p) { p->n_trace = 0; p->n_agg = 0; }

OpAggregate op_profile_total(const OpProfile *p, int phase) {
    OpAggregate t = { .name = "total", .phase = phase < 0 ? PHASE_COUNT : (Phase)phase };
    for (int i = 0; i < p->n_agg; i++) {
        if (phase >= 0 && p->agg[i].phase != (Phase)phase) continue;
        t.calls += p->agg[i].calls; t.flops += p->agg[i].flops; t.bytes += p->agg[i].bytes; t.seconds += p->agg[i].seconds;
    }
    return t;
}

static const OpProfile *g_sort;
static int cmp_agg(const void *a, const void *b) {
    const OpAggregate *x = a, *y = b;
    double kx = g_sort->timed ? x->seconds : x->flops, ky = g_sort->timed ? y->seconds : y->flops;
    return kx < ky ? 1 : kx > ky ? -1 : strcmp(x->name, y->name);
}

void op_profile_print(const OpProfile *p, FILE *f, double peak_gflops) {
    OpAggregate *rows = xmalloc(((size_t)p->n_agg + 1) * sizeof *rows);
    memcpy(rows, p->agg, (size_t)p->n_agg * sizeof *rows);
    g_sort = p;
    qsort(rows, (size_t)p->n_agg, sizeof *rows, cmp_agg);
    OpAggregate tot = op_profile_total(p, -1);
    fprintf(f, "%-26s %-10s %7s %10s %10s %10s %7s %9s\n", "op", "phase", "calls", "GFLOP", "MB", "ms", "share", "GFLOP/s");
    for (int i = 0; i < p->n_agg; i++) {
        const OpAggregate *a = &rows[i];
        double gf = a->flops / 1e9, ms = a->seconds * 1e3;
        fprintf(f, "%-26s %-10s %7ld %10.3f %10.1f %10.2f %6.1f%% ", a->name,
                phase_name(a->phase), a->calls, gf, a->bytes / 1e6, ms,
                p->timed && tot.seconds > 0 ? 100.0 * a->seconds / tot.seconds : 100.0 * a->flops / (tot.flops > 0 ? tot.flops : 1));
        if (p->timed && a->seconds > 0 && a->flops > 0) {
            fprintf(f, "%9.1f", gf / a->seconds);
            if (peak_gflops > 0 && (!strncmp(a->name, "gemm", 4) || !strncmp(a->name, "attention", 9)))
                fprintf(f, " (%.0f%% of peak)", 100.0 * gf / a->seconds / peak_gflops);
        }
        fputc('\n', f);
    }
    fprintf(f, "%-26s %-10s %7ld %10.3f %10.1f %10.2f\n", "total", "", tot.calls, tot.flops / 1e9, tot.bytes / 1e6, tot.seconds * 1e3);
    free(rows);
}
