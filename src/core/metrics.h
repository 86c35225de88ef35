// metrics.h — what one optimizer step measured. A neutral type: the trainer produces it,
// the run loop prints it and the run database (store/) records it, without store/
// depending on train/.
#pragma once
#include <stdint.h>

typedef struct {
    int step;                  // 1-based optimizer step just completed
    double loss;               // mean training loss over the step's tokens (all ranks)
    double lr;
    double grad_norm;          // global norm before clipping
    double seconds;            // wall time of the step (forward, backward, optimizer)
    double tokens_per_s;       // the step's tokens / seconds
    double mfu;                // achieved FLOP/s / (sgemm peak per process x ranks)
    int64_t tokens_seen;       // after this step
} StepMetrics;
