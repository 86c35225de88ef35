// schedule.c — 1F1B and GPipe pipeline schedules, their communication actions, and a tiny
// discrete-event simulation that checks them (see schedule.h).
#include <stdio.h>
#include <stdlib.h>
#include "../core/check.h"
#include "schedule.h"

static void check_args(int stage, int n_stages, int n_micro) {
    CHECK(n_stages >= 1 && stage >= 0 && stage < n_stages && n_micro >= 1,
          "schedule: stage %d of %d stages with %d micro-batches", stage, n_stages, n_micro);
}

const char *schedule_name(PipeSchedule kind) { return kind == SCHED_1F1B ? "1f1b" : kind == SCHED_GPIPE ? "gpipe" : "?"; }

int schedule_warmup(PipeSchedule kind, int stage, int n_stages, int n_micro) {
    check_args(stage, n_stages, n_micro);
    if (kind == SCHED_GPIPE) return n_micro;
    CHECK(kind == SCHED_1F1B, "schedule: unknown kind %d", (int)kind);
    int w = n_stages - stage - 1;
    return w < n_micro ? w : n_micro;
}

int schedule_steps(PipeSchedule kind, int stage, int n_stages, int n_micro, PipeStep *out) {
    int w = schedule_warmup(kind, stage, n_stages, n_micro), k = 0;
    int steady = n_micro - w;                        // 0 for GPipe
    for (int m = 0; m < w; m++) out[k++] = (PipeStep){ PIPE_FORWARD, m };
    for (int i = 0; i < steady; i++) {
        out[k++] = (PipeStep){ PIPE_FORWARD, w + i };
        out[k++] = (PipeStep){ PIPE_BACKWARD, i };
    }
    for (int m = steady; m < n_micro; m++) out[k++] = (PipeStep){ PIPE_BACKWARD, m };
    return k;
}

int schedule_max_in_flight(const PipeStep *steps, int n_steps) {
    int cur = 0, mx = 0;
    for (int i = 0; i < n_steps; i++) {
        cur += steps[i].op == PIPE_FORWARD ? 1 : -1;
        if (cur > mx) mx = cur;
    }
    return mx;
}

static const char *const action_names[] = { "forward", "backward", "recv_fwd", "send_fwd", "recv_bwd",
                                            "send_bwd", "send_fwd_recv_bwd", "send_bwd_recv_fwd" };
const char *schedule_action_name(PipeActionKind k) {
    return (unsigned)k < sizeof action_names / sizeof *action_names ? action_names[k] : "?";
}
void schedule_action_str(const PipeAction *a, char *buf, size_t n) {
    if (a->kind == PA_SEND_FWD_RECV_BWD || a->kind == PA_SEND_BWD_RECV_FWD)
        snprintf(buf, n, "%s(%d,%d)", schedule_action_name(a->kind), a->mb, a->mb_recv);
    else
        snprintf(buf, n, "%s(%d)", schedule_action_name(a->kind), a->mb);
}

int schedule_actions(const PipeStep *steps, int n_steps, int stage, int n_stages, int fuse, PipeAction *out) {
    CHECK(n_stages >= 1 && stage >= 0 && stage < n_stages, "schedule_actions: stage %d of %d", stage, n_stages);
    int first = stage == 0, last = stage == n_stages - 1, k = 0;
    for (int i = 0; i < n_steps; i++) {
        int m = steps[i].mb;
        PipeActionKind pre, comp, post;
        int has_pre, has_post;
        if (steps[i].op == PIPE_FORWARD) { pre = PA_RECV_FWD; comp = PA_FORWARD; post = PA_SEND_FWD; has_pre = !first; has_post = !last; }
        else { pre = PA_RECV_BWD; comp = PA_BACKWARD; post = PA_SEND_BWD; has_pre = !last; has_post = !first; }
        if (has_pre) {
            PipeAction *prev = k ? &out[k - 1] : NULL;
            if (fuse && prev && prev->kind == PA_SEND_FWD && pre == PA_RECV_BWD) {
                prev->kind = PA_SEND_FWD_RECV_BWD; prev->mb_recv = m;
            } else if (fuse && prev && prev->kind == PA_SEND_BWD && pre == PA_RECV_FWD) {
                prev->kind = PA_SEND_BWD_RECV_FWD; prev->mb_recv = m;
            } else {
                out[k++] = (PipeAction){ pre, m, -1 };
            }
        }
        out[k++] = (PipeAction){ comp, m, -1 };
        if (has_post) out[k++] = (PipeAction){ post, m, -1 };
    }
    return k;
}

// ---- simulation ----
// The communication halves of one action: direction 0 = forward (activation), 1 = backward.
typedef struct { int has_send, send_to, send_dir, send_mb, has_recv, recv_from, recv_dir, recv_mb; } Halves;

static Halves halves(const PipeAction *a, int p) {
    Halves h = {0};
    int fwd_send = a->kind == PA_SEND_FWD || a->kind == PA_SEND_FWD_RECV_BWD;
    int bwd_send = a->kind == PA_SEND_BWD || a->kind == PA_SEND_BWD_RECV_FWD;
    int fwd_recv = a->kind == PA_RECV_FWD || a->kind == PA_SEND_BWD_RECV_FWD;
    int bwd_recv = a->kind == PA_RECV_BWD || a->kind == PA_SEND_FWD_RECV_BWD;
    int fused = a->kind == PA_SEND_FWD_RECV_BWD || a->kind == PA_SEND_BWD_RECV_FWD;
    if (fwd_send || bwd_send) {
        h.has_send = 1; h.send_to = fwd_send ? p + 1 : p - 1; h.send_dir = bwd_send; h.send_mb = a->mb;
    }
    if (fwd_recv || bwd_recv) {
        h.has_recv = 1; h.recv_from = fwd_recv ? p - 1 : p + 1; h.recv_dir = bwd_recv;
        h.recv_mb = fused ? a->mb_recv : a->mb;
    }
    return h;
}

typedef struct {
    int idx, n_comp;            // current action; compute actions done
    long clock, post;           // time now; time the current action was posted
    int send_done, recv_done;   // halves of the current action completed
    long send_t, recv_t;
} StageState;

long schedule_simulate(int P, const PipeAction *const *acts, const int *n_acts, int t_fwd,
                       int t_bwd, PipeTiming *const *timing, char *msg, size_t n) {
    if (msg && n) msg[0] = 0;
    StageState *st = xcalloc((size_t)P, sizeof *st);
    long result = -1;
    char a1[64], a2[64];
    // Peers outside the pipeline are a malformed schedule.
    for (int p = 0; p < P; p++)
        for (int i = 0; i < n_acts[p]; i++) {
            Halves h = halves(&acts[p][i], p);
            if ((h.has_send && (h.send_to < 0 || h.send_to >= P)) ||
                (h.has_recv && (h.recv_from < 0 || h.recv_from >= P))) {
                schedule_action_str(&acts[p][i], a1, sizeof a1);
                if (msg) snprintf(msg, n, "stage %d action %d %s has no peer stage in a %d-stage pipeline", p, i, a1, P);
                goto out;
            }
        }
    for (int progress = 1; progress;) {
        progress = 0;
        for (int p = 0; p < P; p++) {
            StageState *s = &st[p];
            if (s->idx >= n_acts[p]) continue;
            const PipeAction *a = &acts[p][s->idx];
            if (a->kind == PA_FORWARD || a->kind == PA_BACKWARD) {
                long cost = a->kind == PA_FORWARD ? t_fwd : t_bwd;
                if (timing && timing[p]) timing[p][s->n_comp] = (PipeTiming){ s->clock, s->clock + cost };
                s->clock += cost; s->n_comp++;
                s->idx++; s->post = s->clock; s->send_done = s->recv_done = 0;
                progress = 1;
                continue;
            }
            Halves h = halves(a, p);
            if (h.has_send && !s->send_done) {   // try to complete the send half with the peer's head
                int q = h.send_to;
                StageState *r = &st[q];
                if (r->idx < n_acts[q]) {
                    Halves hq = halves(&acts[q][r->idx], q);
                    if (hq.has_recv && hq.recv_from == p && !r->recv_done && hq.recv_dir == h.send_dir) {
                        if (hq.recv_mb != h.send_mb) {
                            schedule_action_str(a, a1, sizeof a1);
                            schedule_action_str(&acts[q][r->idx], a2, sizeof a2);
                            if (msg) snprintf(msg, n, "out of order: stage %d at %s sends micro-batch %d while "
                                              "stage %d at %s expects micro-batch %d", p, a1, h.send_mb, q, a2, hq.recv_mb);
                            goto out;
                        }
                        long t = s->post > r->post ? s->post : r->post;
                        s->send_done = 1; s->send_t = t;
                        r->recv_done = 1; r->recv_t = t;
                        progress = 1;
                    }
                }
            }
            int done = (!h.has_send || s->send_done) && (!h.has_recv || s->recv_done);
            if (done) {
                long t = s->post;
                if (h.has_send && s->send_t > t) t = s->send_t;
                if (h.has_recv && s->recv_t > t) t = s->recv_t;
                s->clock = t;
                s->idx++; s->post = s->clock; s->send_done = s->recv_done = 0;
                progress = 1;
            }
        }
    }
    long makespan = 0;
    int stuck = 0;
    for (int p = 0; p < P; p++) {
        if (st[p].idx < n_acts[p]) stuck = 1;
        if (st[p].clock > makespan) makespan = st[p].clock;
    }
    if (stuck) {
        if (msg) {
            size_t k = (size_t)snprintf(msg, n, "deadlock:");
            for (int p = 0; p < P && k < n; p++) {
                if (st[p].idx >= n_acts[p]) k += (size_t)snprintf(msg + k, n - k, " stage %d done;", p);
                else {
                    schedule_action_str(&acts[p][st[p].idx], a1, sizeof a1);
                    k += (size_t)snprintf(msg + k, n - k, " stage %d blocked at %s;", p, a1);
                }
            }
        }
        goto out;
    }
    result = makespan;
out:
    free(st);
    return result;
}
