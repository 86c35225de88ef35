// step_record.h — training steps of one rank (tp = pp = dp = 1) on a back end, every op
// recorded in order: the trainer's step (zero, the micro-batch loop, the gradient reduction,
// clipping, AdamW) on synthetic tokens. Two tools read what such a step's ops do: the CPU
// validation's op layer (tools/simulate.c --measure-ops) and the calibration's in-step rates
// (tools/calibrate.c, 4c.).
#ifndef BOOST_STEP_RECORD_H
#define BOOST_STEP_RECORD_H

#include "../backend/profile.h"
#include "../config/config.h"

// 1 + steps steps of cfg's model on bk; the op records of the last `steps` (the first warms the
// caches and the allocator) into prof, each op's seconds too when `timed`. Returns the wall
// seconds of those steps. The caller owns prof's trace (prof->bk is left NULL: bk may be freed).
double step_record(const Config *cfg, Backend *bk, int steps, int timed, OpProfile *prof);

#endif
