// profile.h — an op observer (backend.h) that aggregates what a back end ran: per op name and
// phase the calls, FLOPs, bytes and — when timed — seconds, and optionally the whole trace in
// order. Timed, it is the timing wrapper around any back end: it synchronises the back end
// before and after each op (so a GPU op's time is its own) and reads the wall clock. On the dry
// back end it records the trace that the performance model turns into time.
#pragma once
#include <stdio.h>
#include "backend.h"

typedef struct { OpInfo op; double seconds; } OpEvent;
typedef struct {
    const char *name; Phase phase;
    long calls;
    double flops, bytes, seconds;
} OpAggregate;

typedef struct {
    Backend *bk;
    int timed, keep_trace;
    OpEvent *trace; size_t n_trace, cap_trace;
    OpAggregate *agg; int n_agg, cap_agg;
    double t_begin;
} OpProfile;

void op_profile_attach(OpProfile *p, Backend *b, int timed, int keep_trace);
void op_profile_detach(OpProfile *p);          // frees everything and detaches
void op_profile_reset(OpProfile *p);           // forget what was recorded
// Totals over the aggregates whose phase matches (phase < 0: all phases).
OpAggregate op_profile_total(const OpProfile *p, int phase);
// The aggregates as a table, largest time (or FLOPs when untimed) first; peak_gflops > 0
// adds each GEMM/attention row's share of that peak.
void op_profile_print(const OpProfile *p, FILE *f, double peak_gflops);
