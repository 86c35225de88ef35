// train — train a model from a configuration file.
//   build/train CONFIG.yaml [--set key=value]... [--steps N]
// Prints the resolved configuration, one line per step, periodic validation loss.
#include <math.h>
#include <stdio.h>
#include "../config/config.h"
#include "../core/check.h"
#include "../train/trainer.h"

static void usage(void) {
    fprintf(stderr, "usage: train CONFIG.yaml [--set key=value]...\n");
    exit(EXIT_BAD_INPUT);
}

int main(int argc, char **argv) {
    Config cfg;
    config_defaults(&cfg);
    const char *path = NULL;
    // overrides apply after the file whatever their position on the command line
    const char **sets = xcalloc((size_t)argc, sizeof(char *)); int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0) {
            if (i + 1 >= argc) die_input("--set needs key=value");
            sets[n_sets++] = argv[++i];
        } else if (strncmp(argv[i], "--set=", 6) == 0) {
            sets[n_sets++] = argv[i] + 6;
        } else if (argv[i][0] == '-') {
            die_input("unknown option '%s' (expected --set key=value)", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else usage();
    }
    if (!path) usage();
    config_load_file(&cfg, path);
    for (int i = 0; i < n_sets; i++) config_set_override(&cfg, sets[i]);
    config_finalize(&cfg);
    free(sets);
    config_print_table(&cfg, stdout);

    Trainer tr;
    trainer_init(&tr, &cfg);
    const Model *m = &tr.model;
    printf("parameters %.3fM | train FLOPs/token %.4g | sgemm peak %.1f GFLOP/s | data %s (vocab %d)\n",
           m->table.n_params / 1e6, tr.flops_per_token, tr.peak_gflops, tr.data.dir, tr.data.vocab_size);
    const TrainConfig *tc = &cfg.train;
    for (int s = 0; s < tc->steps; s++) {
        StepMetrics sm = trainer_step(&tr);
        if (!isfinite(sm.loss)) die_input("loss is %f at step %d: training diverged (lower train.lr?)", sm.loss, sm.step);
        if (sm.step % tc->log_every == 0 || sm.step == 1 || sm.step == tc->steps)
            printf("step %5d/%d | loss %.4f | lr %.3e | norm %7.3f | %8.1f ms | %9.0f tok/s | MFU %5.1f%%\n",
                   sm.step, tc->steps, sm.loss, sm.lr, sm.grad_norm, sm.seconds * 1e3, sm.tokens_per_s, 100 * sm.mfu);
        if ((tc->val_every > 0 && sm.step % tc->val_every == 0) || sm.step == tc->steps)
            printf("val   %5d | loss %.4f\n", sm.step, trainer_validate(&tr));
        fflush(stdout);
    }
    trainer_free(&tr);
    return 0;
}
