// pipeline.c — one training step of a P-stage pipeline in time: the trainer's fused 1F1B
// action lists (parallel/schedule.h) played with per-action durations. A compute action
// takes its duration; a communication action has one or two ends (a send and/or a receive,
// each with a peer stage, a direction and a micro-batch) and completes when every end has
// met the matching end of its peer — at the later of the two posting times plus the
// transfer's duration (blocking rendezvous, as MPI_Sendrecv of large messages). After the
// actions, the stages' tails meet at their blocking calls over stages (the loss's and the
// gradient norm's sums): each leaves such a call at the last stage's entry plus the call
// (MPI-4.0 §6.9.6; docs/performance-model.md §21).
#include <string.h>

#include "../core/check.h"
#include "../parallel/schedule.h"
#include "sim.h"

typedef struct { int send, peer, bwd, mb; } End;   // bwd: gradient (towards stage p−1)

static int action_ends(const PipeAction *a, int p, End e[2]) {
    int n = 0;
    switch (a->kind) {
    case PA_SEND_FWD:          e[n++] = (End){ 1, p + 1, 0, a->mb }; break;
    case PA_RECV_FWD:          e[n++] = (End){ 0, p - 1, 0, a->mb }; break;
    case PA_SEND_BWD:          e[n++] = (End){ 1, p - 1, 1, a->mb }; break;
    case PA_RECV_BWD:          e[n++] = (End){ 0, p + 1, 1, a->mb }; break;
    case PA_SEND_FWD_RECV_BWD: e[n++] = (End){ 1, p + 1, 0, a->mb }; e[n++] = (End){ 0, p + 1, 1, a->mb_recv }; break;
    case PA_SEND_BWD_RECV_FWD: e[n++] = (End){ 1, p - 1, 1, a->mb }; e[n++] = (End){ 0, p - 1, 0, a->mb_recv }; break;
    default: break;
    }
    return n;
}

typedef struct {
    PipeAction *acts;
    int n_acts, idx;
    double clock;            // when the current action was posted
    int done[2];
    double t_done[2];
} Stage;

double sim_pipeline_uniform(int n_stages, int n_micro, double f, double b) {
    return (n_micro + n_stages - 1) * (f + b);
}

double sim_pipeline(const SimPipeIn *in, SimStageTime *out, char *msg, size_t msg_n) {
    int P = in->n_stages, M = in->n_micro;
    CHECK(P >= 1 && M >= 1, "sim_pipeline: %d stages, %d micro-batches", P, M);
    if (msg && msg_n) msg[0] = 0;
    Stage *st = xcalloc((size_t)P, sizeof *st);
    PipeStep *steps = xcalloc((size_t)(2 * M), sizeof *steps);
    for (int p = 0; p < P; p++) {
        int n = schedule_steps(SCHED_1F1B, p, P, M, steps);
        st[p].acts = xcalloc((size_t)SCHEDULE_MAX_ACTIONS(n), sizeof(PipeAction));
        st[p].n_acts = schedule_actions(steps, n, p, P, 1, st[p].acts);
        memset(&out[p], 0, sizeof out[p]);
        st[p].clock = in->head ? in->head[p] : 0;
        out[p].busy_s = st[p].clock;
    }
    free(steps);
    double result = -1;
    for (int progress = 1; progress;) {
        progress = 0;
        for (int p = 0; p < P; p++) {
            Stage *s = &st[p];
            while (s->idx < s->n_acts) {
                const PipeAction *a = &s->acts[s->idx];
                if (a->kind == PA_FORWARD || a->kind == PA_BACKWARD) {
                    double d = a->kind == PA_FORWARD ? in->fwd[p][a->mb] : in->bwd[p][a->mb];
                    s->clock += d;
                    out[p].busy_s += d;
                    s->idx++;
                    s->done[0] = s->done[1] = 0;
                    progress = 1;
                    continue;
                }
                End e[2];
                int ne = action_ends(a, p, e);
                for (int i = 0; i < ne; i++) {
                    if (s->done[i]) continue;
                    CHECK(e[i].peer >= 0 && e[i].peer < P, "sim_pipeline: stage %d talks to stage %d of %d", p, e[i].peer, P);
                    Stage *q = &st[e[i].peer];
                    if (q->idx >= q->n_acts) continue;
                    End f[2];
                    int nf = action_ends(&q->acts[q->idx], e[i].peer, f);
                    for (int j = 0; j < nf; j++) {
                        if (q->done[j] || f[j].peer != p || f[j].send == e[i].send || f[j].bwd != e[i].bwd) continue;
                        if (f[j].mb != e[i].mb) {
                            if (msg) snprintf(msg, msg_n, "stage %d and stage %d disagree on the micro-batch (%d vs %d)",
                                              p, e[i].peer, e[i].mb, f[j].mb);
                            goto out;
                        }
                        int boundary = p < e[i].peer ? p : e[i].peer;   // transfer between boundary and boundary+1
                        double x = e[i].bwd ? in->xfer_bwd[boundary] : in->xfer_fwd[boundary];
                        double t = (s->clock > q->clock ? s->clock : q->clock) + x;
                        s->done[i] = q->done[j] = 1;
                        s->t_done[i] = q->t_done[j] = t;
                        progress = 1;
                        break;
                    }
                }
                int all = 1;
                double end = s->clock, lo[2] = { 0, 0 }, hi[2] = { 0, 0 };
                for (int i = 0; i < ne; i++) {
                    all &= s->done[i];
                    if (!s->done[i]) continue;
                    if (s->t_done[i] > end) end = s->t_done[i];
                    int boundary = p < e[i].peer ? p : e[i].peer;
                    double x = e[i].bwd ? in->xfer_bwd[boundary] : in->xfer_fwd[boundary];
                    // the transfer occupied [t_done − x, t_done], within this action's span
                    hi[i] = s->t_done[i];
                    lo[i] = hi[i] - x > s->clock ? hi[i] - x : s->clock;
                }
                if (!all) break;   // wait for the peer; other stages move first
                // transfer time of the action: the union of its ends' transfer intervals (the
                // two halves of an exchange may run together or at different times)
                double busy = hi[0] - lo[0];
                if (ne == 2) {
                    double ov = (hi[0] < hi[1] ? hi[0] : hi[1]) - (lo[0] > lo[1] ? lo[0] : lo[1]);
                    busy += hi[1] - lo[1] - (ov > 0 ? ov : 0);
                }
                out[p].xfer_s += busy;
                s->clock = end;
                s->idx++;
                s->done[0] = s->done[1] = 0;
                progress = 1;
            }
        }
    }
    for (int p = 0; p < P; p++)
        if (st[p].idx < st[p].n_acts) {
            if (msg) {
                char a[64];
                schedule_action_str(&st[p].acts[st[p].idx], a, sizeof a);
                snprintf(msg, msg_n, "deadlock: stage %d blocked at %s", p, a);
            }
            goto out;
        }
    // The tails, joined at their blocking calls (§21): `pos` is how far into its tail a stage is.
    double *pos = xcalloc((size_t)P, sizeof *pos);
    for (int j = 0; j < in->n_sync; j++) {
        double last = 0;
        for (int p = 0; p < P; p++) {
            const SimSync *y = &in->sync[p][j], *y0 = &in->sync[0][j];
            CHECK(y->kind == y0->kind && y->group == y0->group && y->at_s >= pos[p] - 1e-12 * (1 + pos[p]),
                  "sim_pipeline: stage %d's joining call %d is not stage 0's, or comes before the one ahead of it", p, j);
            double enter = st[p].clock + (y->at_s - pos[p]);
            if (p == 0 || enter > last) last = enter;
        }
        for (int p = 0; p < P; p++) {
            const SimSync *y = &in->sync[p][j];
            double w = last - (st[p].clock + (y->at_s - pos[p]));
            if (in->sync_wait) in->sync_wait[p][j] = w;
            out[p].sync_wait_s += w;
            st[p].clock = last + y->call_s;
            pos[p] = y->at_s + y->call_s;
        }
    }
    double step = 0;
    for (int p = 0; p < P; p++) {
        double tail = in->tail ? in->tail[p] : 0;
        CHECK(tail >= pos[p] - 1e-12 * (1 + tail), "sim_pipeline: stage %d's joining calls end %g s into a tail of %g s", p, pos[p], tail);
        out[p].end_s = st[p].clock + (tail - pos[p]);
        out[p].busy_s += tail;
        if (out[p].end_s > step) step = out[p].end_s;
    }
    free(pos);
    for (int p = 0; p < P; p++) out[p].wait_s = step - out[p].busy_s - out[p].xfer_s - out[p].sync_wait_s;
    result = step;
out:
    for (int p = 0; p < P; p++) free(st[p].acts);
    free(st);
    return result;
}

double sim_pipeline_interleaved(double step_s, double idle_s, double xfer_s, int v) {
    CHECK(v >= 1 && idle_s >= 0 && xfer_s >= 0 && idle_s <= step_s, "sim_pipeline_interleaved: v %d, idle %g s, xfer %g s, step %g s",
          v, idle_s, xfer_s, step_s);
    return step_s - (1.0 - 1.0 / v) * idle_s + (v - 1) * xfer_s;
}
