// phase.h — the phase of a training step that a collective or an op serves. One enum for
// the communication accounting (parallel/comm.h) and the op records of the back ends
// (backend/backend.h), so that a profile and a communication table label alike.
#pragma once

typedef enum {
    PHASE_FORWARD,     // a block's (or the head's) forward
    PHASE_BACKWARD,    // its backward
    PHASE_RECOMPUTE,   // activation checkpointing replaying forward work inside backward
    PHASE_OPTIMIZER,   // gradient reduction, clipping, the update, ZeRO-1 gathers
    PHASE_PIPELINE,    // 1F1B sends and receives between stages
    PHASE_OTHER,       // validation, checkpoints, set-up
    PHASE_COUNT
} Phase;

// The one spelling of each phase: communication tables, op profiles, the run database's
// comm rows ("forward", "backward", "recompute", "optimizer", "pipeline", "other").
static inline const char *phase_name(Phase p) {
    static const char *const names[PHASE_COUNT] = {
        "forward", "backward", "recompute", "optimizer", "pipeline", "other" };
    return (unsigned)p < PHASE_COUNT ? names[p] : "?";
}
