// step_record.c — one rank's training steps with every op recorded (step_record.h).
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

#include "../core/check.h"
#include "optimizer.h"
#include "step_loop.h"
#include "step_record.h"

typedef struct { Model *m; int32_t *tokens; float scale; } RecordMb;
static void record_forward(void *ctx, int slot, int mb) {
    RecordMb *x = ctx;
    (void)mb;
    model_stage_forward(x->m, slot, x->tokens, x->tokens);
}
static void record_backward(void *ctx, int slot, int mb) {
    RecordMb *x = ctx;
    (void)mb;
    model_stage_backward(x->m, slot, x->scale);
}

double step_record(const Config *cfg, Backend *bk, Comm *comm, int steps, int timed, OpProfile *prof) {
    const TrainConfig *tc = &cfg->train;
    CHECK(steps >= 1, "step_record: %d steps", steps);
    Comm own, *c = comm ? comm : &own;
    if (!comm) comm_init_virtual_at(&own, 1, 1, 1, 0);
    CHECK(c->pp == 1, "step_record: a pipeline (pp %d) is not one rank's step", c->pp);
    Model m;
    Optimizer o;
    model_init_parallel(&m, &cfg->model, tc->batch_size, cfg->model.seq_len, tc->seed, c, &cfg->boost, 1, bk, 1);
    optimizer_init(&o, &m, 0);
    int32_t *tokens = xcalloc((size_t)m.N, sizeof(int32_t));
    for (int i = 0; i < m.N; i++) tokens[i] = (int32_t)((i * 7919L) % cfg->model.vocab_size);
    int K = tc->grad_accum;
    RecordMb x = { &m, tokens, (float)(1.0 / ((double)K * tc->batch_size * m.T)) };
    StepHooks h = { record_forward, record_backward, NULL, &x };
    double wall = 0;
    for (int step = 0; step <= steps; step++) {
        if (step == 1 && prof) op_profile_attach(prof, bk, timed, 1);
        if (step == 1) comm_stats_reset(c);
        double t0 = omp_get_wtime();
        model_step_begin(&m, x.scale);               // as trainer_step
        step_micro_batches(&m, c, K, NULL, 0, &h);   // the trainer's micro-batch loop (pp 1)
        step_reduce_and_read_loss(&m, &o, c, 0);
        optimizer_clip(&o, &m, tc->grad_clip);
        optimizer_step(&o, &m, tc, optimizer_lr_at(tc, step), step + 1);
        if (step >= 1) wall += omp_get_wtime() - t0;
    }
    if (prof) {
        bk_observe(bk, NULL, NULL);   // the trace stays in prof, detached (the back end is freed first)
        prof->bk = NULL;
    }
    free(tokens);
    optimizer_free(&o);
    model_free(&m);
    if (!comm) comm_free(&own);
    return wall;
}
