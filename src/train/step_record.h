// step_record.h — training steps of one rank (tp = pp = dp = 1, or one rank of a tp × dp grid) on
// a back end, every op recorded in order: the trainer's step (zero, the micro-batch loop, the gradient reduction,
// clipping, AdamW) on synthetic tokens. Two tools read what such a step's ops do: the CPU
// validation's op layer (tools/simulate.c --measure-ops) and the calibration's in-step rates
// (tools/calibrate.c, 4c.).
#ifndef BOOST_STEP_RECORD_H
#define BOOST_STEP_RECORD_H

#include "../backend/profile.h"
#include "../config/config.h"
#include "../parallel/comm.h"

// 1 + steps steps of cfg's model on bk; the op records of the last `steps` (the first warms the
// caches and the allocator) into prof when given, each op's seconds too when `timed`. Returns
// the wall seconds of those steps. The caller owns prof's trace (prof->bk is left NULL: bk may
// be freed). comm NULL: one rank alone (a 1×1×1 grid of its own); else the caller's grid
// (pp 1), every rank of it calling with the same cfg, and comm's table holds the collectives
// of the last `steps` steps (reset after the first).
double step_record(const Config *cfg, Backend *bk, Comm *comm, int steps, int timed, OpProfile *prof);

#endif
