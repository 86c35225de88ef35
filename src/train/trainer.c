#include <omp.h>
#include "trainer.h"
#include "optim.h"
#include "../core/check.h"
#include "../core/timer.h"

extern void openblas_set_num_threads(int);

int set_threads(int threads) {
    if (threads <= 0) threads = omp_get_num_procs();
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    return threads;
}

void trainer_init(Trainer *tr, const Config *cfg) {
    memset(tr, 0, sizeof *tr);
    tr->cfg = *cfg;
    const ModelConfig *mc = &tr->cfg.model;
    const TrainConfig *tc = &tr->cfg.train;
    set_threads(tc->threads);
    dataset_prepare(&tr->cfg.data, mc->vocab_size, tc->seed, &tr->data);
    loader_open(&tr->loader, &tr->data, mc->seq_len, mc->vocab_size, tc->seed);
    model_init(&tr->model, mc, tc->batch_size, mc->seq_len, tc->seed);
    size_t n = (size_t)tc->grad_accum * tc->batch_size * mc->seq_len;
    tr->inputs = xmalloc(n * sizeof(int32_t));
    tr->targets = xmalloc(n * sizeof(int32_t));
    tr->peak_gflops = measure_sgemm_peak_gflops();
    tr->flops_per_token = model_train_flops_per_token(mc);
}

void trainer_free(Trainer *tr) {
    model_free(&tr->model);
    loader_close(&tr->loader);
    free(tr->inputs); free(tr->targets);
}

StepMetrics trainer_step(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg.train;
    Model *mdl = &tr->model;
    int B = tc->batch_size, K = tc->grad_accum;
    double t0 = now_seconds();
    model_zero_grads(mdl);
    double loss = 0;
    for (int k = 0; k < K; k++) {
        int32_t *in = tr->inputs + (size_t)k * mdl->N, *tg = tr->targets + (size_t)k * mdl->N;
        loader_train_batch(&tr->loader, tr->samples_seen, B, in, tg);
        tr->samples_seen += (uint64_t)B;
        loss += model_forward(mdl, in, tg);
        model_backward(mdl, 1.0f / (float)(K * mdl->N));   // gradient of the step's mean loss
    }
    StepMetrics sm = {0};
    sm.loss = loss / K;
    if (tr->before_update) tr->before_update(tr->hook_ctx, tr, sm.loss);
    sm.grad_norm = clip_grad_norm(mdl, tc->grad_clip);
    sm.lr = lr_at(tc, tr->step);
    tr->step++;
    adamw_step(mdl, tc, sm.lr, tr->step);
    sm.seconds = now_seconds() - t0;
    int64_t tokens = (int64_t)K * mdl->N;
    tr->tokens_seen += tokens;
    sm.step = tr->step;
    sm.tokens_seen = tr->tokens_seen;
    sm.tokens_per_s = tokens / sm.seconds;
    sm.mfu = sm.tokens_per_s * tr->flops_per_token / (tr->peak_gflops * 1e9);
    return sm;
}

double trainer_validate(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg.train;
    double sum = 0;
    for (int i = 0; i < tc->val_batches; i++) {
        loader_val_batch(&tr->loader, (uint64_t)i * tc->batch_size, tc->batch_size, tr->inputs, tr->targets);
        sum += model_forward(&tr->model, tr->inputs, tr->targets);
    }
    return sum / tc->val_batches;
}
