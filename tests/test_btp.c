// test_btp.c — bottleneck-aware tensor parallelism and the BOOST techniques on top of it
// (docs/boost.md): for cola and svd, every combination of (btp, online_rmsnorm,
// grouping, lowrank_ckpt), and full_recompute with btp on and off, the loss and every
// gradient equal those of the single-process model (model_init, same seed, computed on
// rank 0 — the model test_model checks against finite differences), and the per-layer
// collectives are exactly the ones docs/boost.md tabulates. Also: GQA, CoLA's SiLU gate,
// tied embeddings, the activation memory formulas, and the checkpointing fall-backs.
// LaX (docs/lax.md §6, §9) on both bases with the default kron gate and LayerNorm, in the same
// matrix, and with the identity gate and no norm (Vanilla-TP case (a)): parity; exact
// per-layer collectives (BTP: unchanged; Vanilla-TP case (b): +7 all-gathers of N·(4r_a+3r_m)
// forward and in layers ≥ 1 backward; case (a): none); 0 recompute collectives under
// low-rank checkpointing; the pipeline message = residual + latents.
//
// Run directly (a 1-rank grid) or under mpirun with the grid as arguments:
//   mpirun -np 4 --oversubscribe build/test_btp 2 2      (tp pp; default: world 1)
// Every rank checks its own results; after each test rank 0 prints the AND over all ranks
// ("PASS name" / "FAIL name: ...") and failing ranks print details ("  rank r: ...") to
// stderr. tests/t_btp.sh runs the grids 1×1, 2×1, 4×1 and 2×2 (tp×pp).
//
// Tolerance, per tensor: max|a − b| ≤ 1e-5 + 1e-4·max|b| (b = single process); loss:
// |a − b| ≤ 1e-5·|b|. The parallel layouts add the same fp32 terms in a different order
// (partial sums over d/tp rows reduced by the all-reduce, the online norm's local rescale
// and its undoing, Σ dP·P in place of Σ da·a), each a few ulp (~1e-7 relative) per op,
// compounded over ~10 ops per layer; scaling by the tensor's largest entry keeps entries
// that are themselves near zero (sums of cancelling terms) from failing on absolute noise.
// Measured worst case is printed by t_btp.sh's verbose mode (BTP_VERBOSE=1).
#include <math.h>
#define TL_USAGE "the BTP layer at tp x pp against the single process: test_btp [tp pp] under mpirun -np tp*pp (default: the world size, pp 1)\n"
#include "testlib.h"
#include "mpitestlib.h"
#include "../src/config/config.h"
#include "../src/core/rng.h"
#include "../src/model/model.h"
#include "../src/parallel/comm.h"
#include "../src/train/state_io.h"
TL_MAIN_DEFS

static Comm G;
int my_rank, n_ranks, n_details;
static int verbose;
static double worst_ratio;   // largest tolerance ratio seen (1 = at the limit)


enum { B_ = 2, T_ = 8, N_ = B_ * T_ };
static const uint64_t SEED = 11;

static ModelConfig tiny_cfg(LinearKind kind, int kv_heads) {
    ModelConfig c = {0};
    c.linear = kind;
    c.lax_gate = LAX_GATE_KRON;   // LaX defaults: cola base, kron gate, LayerNorm
    c.vocab_size = 64; c.n_layers = 2; c.d_model = 32; c.n_heads = 4; c.n_kv_heads = kv_heads;
    c.d_ff = 48; c.rank_attn = 8; c.rank_mlp = 8; c.seq_len = T_;
    c.only_lr_act = 1; c.norm_eps = 1e-6f; c.rope_theta = 10000.0f; c.embed_std = 0.02f;
    return c;
}

// Non-trivial norm gains, a pure function of (name, index in the full tensor), so every
// layout holds the same values: γ = 1 + 0.3·N(0,1); LaX's zero-initialised β and b likewise
// 0.3·N(0,1).
static void perturb_norms(Model *m) {
    for (int i = 0; i < m->table.n_specs; i++) {
        const ParamSpec *s = &m->table.specs[i];
        if (s->init != INIT_ONES && s->init != INIT_ZEROS) continue;
        float *p = (float *)m->params + s->offset;
        rng_fill_normal(p, s->numel, rng_seed_for_name(99, s->name), (uint64_t)s->col0, 0.3f);
        if (s->init == INIT_ONES) for (size_t j = 0; j < s->numel; j++) p[j] += 1.0f;
    }
}
// A short name of the model kind for labels: "cola", "lax-svd", "lax-cola identity/none".
static const char *kind_label(const ModelConfig *c, char *buf, size_t n) {
    static const char *const gate[] = { "identity", "dense", "kron" }, *const norm[] = { "layernorm", "none" };
    if (c->linear != LINEAR_LAX) snprintf(buf, n, "%s", linear_kind_name(c->linear));
    else if (c->lax_gate == LAX_GATE_KRON && c->lax_norm == LAX_NORM_LAYERNORM)
        snprintf(buf, n, "lax-%s", c->lax_base ? "svd" : "cola");
    else snprintf(buf, n, "lax-%s %s/%s", c->lax_base ? "svd" : "cola", gate[c->lax_gate], norm[c->lax_norm]);
    return buf;
}

static void batch(int32_t *in, int32_t *tg) {
    Rng r = { 3 };
    for (int i = 0; i < N_; i++) { in[i] = (int32_t)(rng_next(&r) % 64); tg[i] = (int32_t)(rng_next(&r) % 64); }
}

// The single-process reference (rank 0 only): loss and gradients of the mean token loss.
typedef struct { ModelConfig cfg; double loss; float *grads; size_t n; Model m; } Ref;
static void ref_make(Ref *r, const ModelConfig *cfg) {
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    if (my_rank != 0) return;
    int32_t in[N_], tg[N_]; batch(in, tg);
    model_init(&r->m, cfg, B_, T_, SEED);
    perturb_norms(&r->m);
    model_zero_grads(&r->m);
    r->loss = model_forward(&r->m, in, tg);
    model_backward(&r->m, 1.0f / N_);
}
static void ref_free(Ref *r) { if (my_rank == 0) model_free(&r->m); }

// One forward + backward of the parallel model (pp stages driven in sequence with raw
// MPI so the accounting only holds the model's own collectives). Returns the mean loss
// (on every rank). As a training step runs it: no zero pass (model_grads_overwrite; the
// gradient family is filled with NaN first, so a gradient that no op of this layout writes
// shows in the parity check) and, at tp = 1, the loss gradient fused into the forward.
static double run_parallel(Model *m) {
    int32_t in[N_], tg[N_]; batch(in, tg);
    size_t n_act = model_stage_elems(m);   // residual (+ LaX latents / their gradient)
    MPI_Comm pp = G.mpi[GROUP_PP];
    double loss = 0;
    for (int i = 0; i < m->table.n_specs; i++) {
        const ParamSpec *s = &m->table.specs[i];
        for (size_t j = 0; j < s->numel; j++) ((float *)m->grads)[s->offset + j] = NAN;
    }
    model_grads_overwrite(m);
    model_fuse_loss_grad(m, 1.0f / N_);
    if (!m->lay.first_stage)
        CHECK_MPI(MPI_Recv(model_stage_input(m, 0), (int)n_act, MPI_FLOAT, G.pp_rank - 1, 1, pp, MPI_STATUS_IGNORE));
    model_loss_begin(m);
    model_stage_forward(m, 0, in, tg);
    loss = model_loss_read(m);
    if (!m->lay.last_stage) {
        CHECK_MPI(MPI_Send(model_stage_output(m, 0), (int)n_act, MPI_FLOAT, G.pp_rank + 1, 1, pp));
        CHECK_MPI(MPI_Recv(model_stage_grad(m), (int)n_act, MPI_FLOAT, G.pp_rank + 1, 2, pp, MPI_STATUS_IGNORE));
    }
    model_stage_backward(m, 0, 1.0f / N_);
    model_finish_grads(m);   // sequence parallelism: the norm gains' gradients summed over TP
    if (!m->lay.first_stage)
        CHECK_MPI(MPI_Send(model_stage_grad(m), (int)n_act, MPI_FLOAT, G.pp_rank - 1, 2, pp));
    double mine = (m->lay.last_stage && G.tp_rank == 0) ? loss / N_ : 0.0, sum = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    return sum;
}

// Per-layer expectations of docs/boost.md (TP all-reduces; tp > 1).
static void check_comm(const Model *m, const char *label) {
    const ModelConfig *c = &m->cfg;
    const Layout *L = &m->lay;
    const BoostConfig *b = &m->boost;
    uint64_t N = (uint64_t)m->N, d = c->d_model, kvd = (uint64_t)c->n_kv_heads * (d / c->n_heads);
    uint64_t ra = c->rank_attn, rm = c->rank_mlp;
    if (L->tp == 1) {
        CommStat t = comm_stats_sum(&G, COMM_ANY, COMM_ANY, GROUP_TP, COMM_ANY);
        CK(t.calls == 0, "%s: %llu TP calls at tp = 1", label, (unsigned long long)t.calls);
        return;
    }
    // Per layer, each (calls, elements): all-reduces, all-gathers and reduce-scatters forward and
    // backward; the recompute's collectives of every kind.
    typedef struct { uint64_t c, e; } CE;
    CE arf = {0}, arb = {0}, agf = {0}, agb = {0}, rsf = {0}, rsb = {0}, rec = {0};
    uint64_t r7 = 4 * N * ra + 3 * N * rm;        // the seven bottlenecks, N·(4r_a + 3r_m)
    int per = b->grouping ? 4 : 7;                  // bottleneck collectives per direction (BTP)
    if (L->scheme == TP_BTP) {
        // SyncRMSNorm: an AR of Σx² [N] before each norm; in the authors' backward form also of
        // Σ da·a [N] before each norm's backward; the authors' 7B form (shard_local): neither
        int local = b->rmsnorm_variant == RMSNORM_SHARD_LOCAL, sync = !b->online_rmsnorm && !local;
        int sync_ar = sync && b->sync_norm_backward == SYNC_NORM_BWD_ALLREDUCE;
        if (!L->sp) {
            arf = (CE){ per + 2 * sync, r7 + (local ? 0 : 2 * N) };
            arb = (CE){ per + 2 * sync_ar, r7 + 2 * N * sync_ar };
        } else {   // docs/boost.md §8: each bottleneck all-reduce → reduce-scatter + all-gather, the
                   // statistic riding both ways with online RMSNorm; backward the c-term's Σ dP·P
                   // rides the gather unless the authors' SyncRMSNorm all-reduces Σ da·a
            int dot = !local && !sync_ar, two = b->rmsnorm_variant == RMSNORM_TWO_CALL;   // (two: its own calls)
            arf = (CE){ 2 * sync, 2 * N * sync };
            rsf = (CE){ per + 2 * two, r7 + 2 * N * b->online_rmsnorm };
            agf = rsf;
            rsb = (CE){ per, r7 };
            agb = (CE){ per, r7 + 2 * N * dot };
            arb = (CE){ 2 * sync_ar, 2 * N * sync_ar };
            if (m->ckpt == CKPT_LOWRANK) rec = (CE){ per, r7 };   // each Z of every token gathered again
        }
    } else if (c->linear == LINEAR_DENSE) {   // FullRank-TP: after o and down; q/k/v and gate/up input gradients
        arf = (CE){ L->sp ? 0 : 2, L->sp ? 0 : 2 * N * d };
        arb = arf;
    } else {   // Vanilla-TP (sequence parallelism: the o, down outputs and the 2 fused input gradients leave)
        arf = (CE){ L->sp ? 5 : 7, N * ((L->sp ? 1 : 3) * d + 2 * kvd + 2 * (uint64_t)c->d_ff) };
        arb = (CE){ L->sp ? 2 : 4, N * ((L->sp ? 1 : 3) * d + (uint64_t)c->d_ff) };
    }
    if (L->sp && L->scheme == TP_MEGATRON) {
        // sequence parallelism (docs/parallelism.md §8): forward 2 all-gathers (a, m) and 2
        // reduce-scatters (o, down outputs) of N·d; backward 4 all-gathers (2 output gradients, a
        // and m again) and 2 reduce-scatters (the q/k/v and gate/up input gradients), which replace
        // the block-boundary all-reduces
        agf = (CE){ 2, 2 * N * d }; rsf = agf;
        agb = (CE){ 4, 4 * N * d }; rsb = (CE){ 2, 2 * N * d };
    }
    // LaX under Vanilla-TP case (b) (docs/lax.md §6.2): all-gathers of the latents' full width,
    // 7 forward in every layer (L ≥ 2), 7 backward in layers ≥ 1; under BTP and case (a) none.
    uint64_t lat = N * (4 * ra + 3 * rm);
    for (int l = L->layer_begin; l < L->layer_end; l++) {
        uint64_t gfc = L->lax_gathered ? 7 : 0, gbc = L->lax_gathered && l >= 1 ? 7 : 0;
        CE gF = { agf.c + gfc, agf.e + gfc * lat / 7 }, gB = { agb.c + gbc, agb.e + gbc * lat / 7 };
        CE rc = m->ckpt == CKPT_FULL ? (CE){ arf.c + gF.c + rsf.c, arf.e + gF.e + rsf.e } : rec;
        CommStat f = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_FORWARD, GROUP_TP, l);
        CommStat k = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_BACKWARD, GROUP_TP, l);
        CommStat gf = comm_stats_sum(&G, COMM_ALL_GATHER, PHASE_FORWARD, GROUP_TP, l);
        CommStat gb = comm_stats_sum(&G, COMM_ALL_GATHER, PHASE_BACKWARD, GROUP_TP, l);
        CommStat sf = comm_stats_sum(&G, COMM_REDUCE_SCATTER, PHASE_FORWARD, GROUP_TP, l);
        CommStat sb = comm_stats_sum(&G, COMM_REDUCE_SCATTER, PHASE_BACKWARD, GROUP_TP, l);
        CommStat r = comm_stats_sum(&G, COMM_ANY, PHASE_RECOMPUTE, COMM_ANY, l);
        CommStat any = comm_stats_sum(&G, COMM_ANY, COMM_ANY, COMM_ANY, l);
        const CommStat got[7] = { f, k, gf, gb, sf, sb, r };
        const CE want[7] = { arf, arb, gF, gB, rsf, rsb, rc };
        static const char *const what[7] = { "all-reduce forward", "all-reduce backward", "all-gather forward",
                                              "all-gather backward", "reduce-scatter forward", "reduce-scatter backward",
                                              "recompute" };
        for (int i = 0; i < 7; i++)
            CK(got[i].calls == want[i].c && got[i].elements == want[i].e, "%s layer %d %s: %llu calls %llu elements, "
               "expected %llu %llu", label, l, what[i], (unsigned long long)got[i].calls,
               (unsigned long long)got[i].elements, (unsigned long long)want[i].c, (unsigned long long)want[i].e);
        CK(any.calls == f.calls + k.calls + gf.calls + gb.calls + sf.calls + sb.calls + r.calls,
           "%s layer %d: other collectives (%llu calls in all)", label, l, (unsigned long long)any.calls);
    }
    // layer -1: embedding, final-norm gather, vocab-parallel head and loss. Sequence parallelism:
    // the embedding's all-reduce becomes a reduce-scatter (backward: an all-gather), the head
    // all-gathers the final norm's output (forward, and again backward) and reduce-scatters its
    // input gradient in place of the all-reduce; the gains' gradients: one all-reduce of
    // (2·layers + last stage)·d in the optimizer phase.
    int g = L->scheme == TP_BTP || L->sp, sp = L->sp && L->scheme == TP_MEGATRON;
    uint64_t want_fc = 0, want_fe = 0, want_bc = 0, want_be = 0, gfc = 0, gbc = 0, hrsf = 0, hrsb = 0;
    if (L->first_stage) { want_fc += !sp; want_fe += sp ? 0 : N * d; gbc += g; hrsf += sp; }
    if (L->last_stage) {
        want_fc += 3; want_fe += 3 * N; want_bc += !sp; want_be += sp ? 0 : N * d; gfc += g; gbc += sp; hrsb += sp;
    }
    CommStat f = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_FORWARD, GROUP_TP, -1);
    CommStat k = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_BACKWARD, GROUP_TP, -1);
    CommStat gf = comm_stats_sum(&G, COMM_ALL_GATHER, PHASE_FORWARD, GROUP_TP, -1);
    CommStat gb = comm_stats_sum(&G, COMM_ALL_GATHER, PHASE_BACKWARD, GROUP_TP, -1);
    CommStat sf = comm_stats_sum(&G, COMM_REDUCE_SCATTER, PHASE_FORWARD, GROUP_TP, -1);
    CommStat sb = comm_stats_sum(&G, COMM_REDUCE_SCATTER, PHASE_BACKWARD, GROUP_TP, -1);
    CommStat go = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_OPTIMIZER, GROUP_TP, -1);
    uint64_t gains = sp ? (uint64_t)(2 * (L->layer_end - L->layer_begin) + L->last_stage) * d : 0;
    CK(sf.calls == hrsf && sf.elements == hrsf * N * d && sb.calls == hrsb && sb.elements == hrsb * N * d,
       "%s layer -1 reduce-scatter: fwd %llu bwd %llu calls, expected %llu %llu", label,
       (unsigned long long)sf.calls, (unsigned long long)sb.calls, (unsigned long long)hrsf, (unsigned long long)hrsb);
    CK(go.calls == (gains > 0) && go.elements == gains, "%s: gains' gradients %llu calls %llu elements, expected %d %llu",
       label, (unsigned long long)go.calls, (unsigned long long)go.elements, gains > 0, (unsigned long long)gains);
    CK(f.calls == want_fc && f.elements == want_fe && k.calls == want_bc && k.elements == want_be,
       "%s layer -1 all-reduce: fwd %llu/%llu bwd %llu/%llu, expected %llu/%llu %llu/%llu", label,
       (unsigned long long)f.calls, (unsigned long long)f.elements, (unsigned long long)k.calls,
       (unsigned long long)k.elements, (unsigned long long)want_fc, (unsigned long long)want_fe,
       (unsigned long long)want_bc, (unsigned long long)want_be);
    CK(gf.calls == gfc && gf.elements == gfc * N * d && gb.calls == gbc && gb.elements == gbc * N * d,
       "%s layer -1 all-gather: fwd %llu bwd %llu calls, expected %llu %llu", label,
       (unsigned long long)gf.calls, (unsigned long long)gb.calls, (unsigned long long)gfc, (unsigned long long)gbc);
}

// The same step of this rank on the dry back end over a virtual grid counts every cell of the
// communication table (kind, phase, group, layer: calls and elements) as the run did: a driver
// that chose a collective by testing a buffer pointer (all NULL on dry) would have the simulator,
// bench_comm and the memory report price communication the engine never does.
static void check_dry_comm(const ModelConfig *cfg, BoostConfig bc, const char *label) {
    Comm V;
    comm_init_virtual_at(&V, G.tp, G.pp, 1, my_rank);
    comm_set_n_layers(&V, cfg->n_layers);
    Backend *dry = backend_dry(DT_F32);
    Model dm;
    model_init_parallel(&dm, cfg, B_, T_, SEED, &V, &bc, 1, dry, 1);
    comm_stats_reset(&V);
    model_grads_overwrite(&dm);
    model_fuse_loss_grad(&dm, 1.0f / N_);
    model_loss_begin(&dm);
    model_stage_forward(&dm, 0, NULL, NULL);
    model_stage_backward(&dm, 0, 1.0f / N_);
    model_finish_grads(&dm);
    int bad = 0;
    for (int k = 0; k < COMM_KIND_COUNT; k++)
        for (int ph = 0; ph < PHASE_COUNT; ph++)
            for (int l = -1; l < cfg->n_layers; l++) {
                CommStat a = comm_stats_sum(&G, k, ph, GROUP_TP, l), b = comm_stats_sum(&V, k, ph, GROUP_TP, l);
                if ((a.calls != b.calls || a.elements != b.elements) && bad++ < 3)
                    CK(0, "%s: %s %s layer %d: %llu calls %llu elements run, %llu %llu on dry", label,
                       comm_kind_name((CommKind)k), comm_phase_name((CommPhase)ph), l, (unsigned long long)a.calls,
                       (unsigned long long)a.elements, (unsigned long long)b.calls, (unsigned long long)b.elements);
            }
    model_free(&dm);
    backend_free(dry);
    comm_free(&V);
}

// Build the parallel model for `bc`, run it, compare with the reference, check the comm.
static void run_case(const Ref *ref, BoostConfig bc, const char *label) {
    Model m;
    model_init_parallel(&m, &ref->cfg, B_, T_, SEED, &G, &bc, 1, NULL, 1);
    perturb_norms(&m);
    comm_stats_reset(&G);
    double loss = run_parallel(&m);
    check_comm(&m, label);
    check_dry_comm(&ref->cfg, bc, label);
    if (ref->cfg.linear == LINEAR_LAX) {   // the pipeline message: residual slice + latents (docs/lax.md §6.6)
        const Layout *L = &m.lay;
        int sliced = !L->lax_gathered && L->scheme == TP_MEGATRON;
        size_t want = (size_t)m.N_res * L->d_res + (size_t)N_ * (4 * 8 + 3 * 8) / (sliced ? L->tp : 1);
        CK(model_stage_elems(&m) == want, "%s: pipeline message %zu elements, expected %zu", label, model_stage_elems(&m), want);
    }
    if (verbose && my_rank == 0) {   // layer 0's TP all-reduces: calls/elements per phase
        CommStat f = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_FORWARD, GROUP_TP, 0);
        CommStat k = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_BACKWARD, GROUP_TP, 0);
        CommStat r = comm_stats_sum(&G, COMM_ALL_REDUCE, PHASE_RECOMPUTE, GROUP_TP, 0);
        fprintf(stderr, "  %-62s fwd %2llu/%5llu bwd %2llu/%5llu recompute %2llu/%5llu\n", label,
                (unsigned long long)f.calls, (unsigned long long)f.elements, (unsigned long long)k.calls,
                (unsigned long long)k.elements, (unsigned long long)r.calls, (unsigned long long)r.elements);
    }
    ModelState full; memset(&full, 0, sizeof full);
    if (my_rank == 0) model_state_init(&full, &ref->cfg, STATE_GRADS);
    state_gather_model(&m, my_rank == 0 ? &full : NULL, STATE_GRADS);
    if (my_rank == 0) {
        CK(fabs(loss - ref->loss) <= 1e-5 * fabs(ref->loss), "%s: loss %.9g vs %.9g", label, loss, ref->loss);
        int bad = 0;
        for (int i = 0; i < full.table.n_specs; i++) {
            const ParamSpec *s = &full.table.specs[i];
            const ParamSpec *rs = param_find(&ref->m.table, s->name);
            const float *a = full.grads + s->offset, *b = (const float *)ref->m.grads + rs->offset;
            double mx = 0; for (size_t j = 0; j < s->numel; j++) mx = fmax(mx, fabs(b[j]));
            size_t w;
            double ratio = tl_close_ratio(a, b, s->numel, 1e-5 + 1e-4 * mx, 0.0, &w);
            if (ratio > worst_ratio) worst_ratio = ratio;
            if (!(ratio <= 1.0) && bad++ < 4)
                CK(0, "%s: %s[%zu] = %.8g vs %.8g (max|ref| %.3g)", label, s->name, w, a[w], b[w], mx);
        }
        model_state_free(&full);
    }
    comm_stats_reset(&G);
    model_free(&m);
}

static BoostConfig boost_of(int btp, int online, int grouping, int lowrank, int full) {
    BoostConfig b = { .btp = btp, .online_rmsnorm = online, .grouping = grouping,
                      .lowrank_ckpt = lowrank, .full_recompute = full };
    return b;
}
static void label_of(char *buf, size_t n, const char *kind, BoostConfig b) {   // kind: kind_label()
    snprintf(buf, n, "%s btp=%d online=%d grouping=%d lowrank=%d full=%d%s%s%s%s tp=%d pp=%d", kind, b.btp,
             b.online_rmsnorm, b.grouping, b.lowrank_ckpt, b.full_recompute,
             b.sync_norm_backward == SYNC_NORM_BWD_BOTTLENECK ? " sync-bwd=bottleneck" : "",
             b.rmsnorm_variant == RMSNORM_TWO_CALL ? " two_call" : "",
             b.selective_recompute ? " selective=1" : "", b.sequence_parallel ? " sp=1" : "", G.tp, G.pp);
}

// All 16 combinations of the four BOOST switches (the model ignores the three that need BTP
// when it is off; config_finalize refuses them in manifests), and SyncRMSNorm's two
// backward forms (the authors' all-reduce, the default, and the bottleneck's Σ dP·P).
static void matrix_cfg(ModelConfig c) {
    Ref ref; ref_make(&ref, &c);
    char kind[64]; kind_label(&c, kind, sizeof kind);
    for (int mask = 0; mask < 16; mask++) {
        BoostConfig b = boost_of(mask & 1, (mask >> 1) & 1, (mask >> 2) & 1, (mask >> 3) & 1, 0);
        char label[256]; label_of(label, sizeof label, kind, b);
        run_case(&ref, b, label);
        if (b.btp && !b.online_rmsnorm) {
            b.sync_norm_backward = SYNC_NORM_BWD_BOTTLENECK;
            label_of(label, sizeof label, kind, b);
            run_case(&ref, b, label);
        }
    }
    ref_free(&ref);
}
static void matrix(LinearKind kind) { matrix_cfg(tiny_cfg(kind, 4)); }
TEST(cola_all_combinations) { matrix(LINEAR_COLA); }
TEST(svd_all_combinations) { matrix(LINEAR_SVD); }
// LaX on both bases with the defaults (kron gate, LayerNorm): every combination as for cola
TEST(lax_all_combinations) {
    ModelConfig c = tiny_cfg(LINEAR_LAX, 4);
    matrix_cfg(c);
    c.lax_base = LAX_BASE_SVD;
    matrix_cfg(c);
}
// The slice-local crossing of Vanilla-TP case (a) (identity gate, no norm), the dense gate, and
// the mixed forms, under Vanilla-TP and BTP with and without full recompute and low-rank
// checkpointing.
TEST(lax_gate_norm_forms) {
    int forms[][3] = { {LAX_BASE_COLA, LAX_GATE_IDENTITY, LAX_NORM_NONE}, {LAX_BASE_SVD, LAX_GATE_IDENTITY, LAX_NORM_NONE},
                       {LAX_BASE_SVD, LAX_GATE_DENSE, LAX_NORM_NONE}, {LAX_BASE_COLA, LAX_GATE_IDENTITY, LAX_NORM_LAYERNORM} };
    BoostConfig cases[5] = { boost_of(0, 0, 0, 0, 0), boost_of(0, 0, 0, 0, 1), boost_of(1, 1, 1, 1, 0),
                             boost_of(1, 0, 0, 0, 1), boost_of(1, 1, 0, 0, 0) };
    for (int f = 0; f < 4; f++) {
        ModelConfig c = tiny_cfg(LINEAR_LAX, 4);
        c.lax_base = forms[f][0]; c.lax_gate = forms[f][1]; c.lax_norm = forms[f][2];
        Ref ref; ref_make(&ref, &c);
        char kind[64]; kind_label(&c, kind, sizeof kind);
        for (int i = 0; i < 5; i++) {
            char label[256]; label_of(label, sizeof label, kind, cases[i]);
            run_case(&ref, cases[i], label);
        }
        ref_free(&ref);
    }
}

// The baseline full-layer recompute under BTP (grouped online and plain sync) and under
// Vanilla-TP: same gradients; its recompute replays exactly the forward's collectives.
TEST(full_recompute) {
    for (int k = 1; k <= 3; k++) {   // cola, svd, LaX (defaults): LinearKind 1, 2, 3
        Ref ref; ModelConfig c = tiny_cfg((LinearKind)k, 4); ref_make(&ref, &c);
        BoostConfig cases[4] = { boost_of(1, 1, 1, 0, 1), boost_of(1, 0, 0, 0, 1), boost_of(0, 0, 0, 0, 1),
                                 boost_of(1, 1, 1, 1, 1) };   // both switches: full_recompute wins
        char kind[64]; kind_label(&c, kind, sizeof kind);
        for (int i = 0; i < 4; i++) {
            char label[256]; label_of(label, sizeof label, kind, cases[i]);
            run_case(&ref, cases[i], label);
        }
        ref_free(&ref);
    }
}

// GQA (2 kv heads: one per rank at tp = 2), CoLA's SiLU gate (only_lr_act = 0), tied
// embeddings (pp = 1 only), each with BTP and every technique on and off.
TEST(gqa_silu_gate_tied) {
    for (int v = 0; v < 3; v++) {
        ModelConfig c = tiny_cfg(LINEAR_COLA, v == 0 ? 2 : 4);
        if (v == 0 && c.n_kv_heads % G.tp) continue;
        if (v == 1) c.only_lr_act = 0;
        if (v == 2) { if (G.pp > 1) continue; c.tie_embeddings = 1; }
        Ref ref; ref_make(&ref, &c);
        const char *name = v == 0 ? "cola gqa" : v == 1 ? "cola silu-gate" : "cola tied";
        BoostConfig cases[3] = { boost_of(1, 1, 1, 1, 0), boost_of(1, 0, 0, 0, 0), boost_of(1, 1, 0, 1, 0) };
        for (int i = 0; i < 3; i++) {
            char label[256]; label_of(label, sizeof label, name, cases[i]);
            run_case(&ref, cases[i], label);
        }
        ref_free(&ref);
    }
}

// Sequence parallelism under FullRank-TP and Vanilla-TP (docs/parallelism.md §8) and selective
// recomputation under every scheme (docs/boost.md §4), for every kind: the same loss and
// gradients, the collectives of check_comm (sequence parallelism's all-gathers and
// reduce-scatters; nothing more for the selective replay). With full recompute the replay
// repeats the sequence collectives; GQA and tied embeddings too.
TEST(sequence_parallel_selective) {
    for (int k = 0; k <= 3; k++) {   // dense, cola, svd, LaX (defaults): LinearKind 0..3
        for (int v = 0; v < 2; v++) {   // the kind as is; then GQA (2 kv heads) with tied embeddings
            ModelConfig c = tiny_cfg((LinearKind)k, v ? 2 : 4);
            if (v && (c.n_kv_heads % G.tp || G.pp > 1 || k == LINEAR_LAX)) continue;
            c.tie_embeddings = v;
            Ref ref; ref_make(&ref, &c);
            char kind[64]; kind_label(&c, kind, sizeof kind);
            if (v) snprintf(kind + strlen(kind), sizeof kind - strlen(kind), " gqa tied");
            BoostConfig cases[5] = { boost_of(0, 0, 0, 0, 0), boost_of(0, 0, 0, 0, 1), boost_of(0, 0, 0, 0, 0),
                                     boost_of(0, 0, 0, 0, 0), boost_of(k != LINEAR_DENSE, 1, 1, 0, 0) };
            cases[0].sequence_parallel = cases[1].sequence_parallel = cases[2].sequence_parallel = 1;
            cases[2].selective_recompute = cases[3].selective_recompute = cases[4].selective_recompute = 1;
            for (int i = 0; i < 5; i++) {
                if (i == 4 && k == LINEAR_DENSE) continue;   // BTP needs a low-rank model
                char label[256]; label_of(label, sizeof label, kind, cases[i]);
                run_case(&ref, cases[i], label);
            }
            ref_free(&ref);
        }
    }
}

// BTP with sequence parallelism (docs/boost.md §8), cola and svd: every combination of online
// RMSNorm, grouping and low-rank checkpointing; SyncRMSNorm's two backward forms; the authors'
// two-call online RMSNorm; full and selective recomputation; GQA. Parity and the exact collectives of
// check_comm (each bottleneck all-reduce a reduce-scatter + an all-gather, the statistic and the
// c-term riding; the low-rank recompute's all-gathers).
TEST(btp_sequence_parallel) {
    for (int k = 1; k <= 2; k++) {
        for (int v = 0; v < 2; v++) {
            ModelConfig c = tiny_cfg((LinearKind)k, v ? 2 : 4);
            if (v && c.n_kv_heads % G.tp) continue;
            Ref ref; ref_make(&ref, &c);
            char kind[64]; kind_label(&c, kind, sizeof kind);
            if (v) snprintf(kind + strlen(kind), sizeof kind - strlen(kind), " gqa");
            BoostConfig cases[16]; int n = 0;
            for (int mask = 0; mask < 8 && !v; mask++) {
                cases[n++] = boost_of(1, mask & 1, (mask >> 1) & 1, (mask >> 2) & 1, 0);
                if (!(mask & 1)) { cases[n] = cases[n - 1]; cases[n++].sync_norm_backward = SYNC_NORM_BWD_BOTTLENECK; }
            }
            cases[n++] = boost_of(1, 1, 1, 0, 1);
            cases[n] = boost_of(1, 1, 1, 0, 0); cases[n++].selective_recompute = 1;
            cases[n] = boost_of(1, 1, 1, 1, 0); cases[n++].rmsnorm_variant = RMSNORM_TWO_CALL;   // the authors' online form
            for (int i = 0; i < n; i++) {
                cases[i].sequence_parallel = 1;
                char label[256]; label_of(label, sizeof label, kind, cases[i]);
                run_case(&ref, cases[i], label);
            }
            ref_free(&ref);
        }
    }
}

// The activation family of sequence parallelism and of selective recomputation against the
// plain model of the same kind (docs/parallelism.md §8, docs/boost.md §6): sequence parallelism
// keeps each layer's x, a, x_mid, m and both rstd, the stage output and the final norm's output
// and rstd for N_res = N/tp tokens instead of N; selective recomputation keeps the attention
// output y and lse once (the working set) instead of once per layer.
static size_t R16(size_t n);
static size_t acts_floats(const ModelConfig *c, BoostConfig b, Model *m) {
    model_init_parallel(m, c, B_, T_, SEED, &G, &b, 1, NULL, 1);
    return m->act_bytes / 4;
}
TEST(sequence_parallel_selective_memory) {
    for (int k = 0; k <= 3; k++) {
        ModelConfig c = tiny_cfg((LinearKind)k, 4);
        Model m0, msp, msel, mbsel, mb0;
        BoostConfig b0 = boost_of(0, 0, 0, 0, 0), bsp = b0, bsel = b0, bb = boost_of(k != 0, 1, 1, 0, 0), bbsel = bb;
        bsp.sequence_parallel = 1; bsel.selective_recompute = 1; bbsel.selective_recompute = 1;
        size_t f0 = acts_floats(&c, b0, &m0), fsp = acts_floats(&c, bsp, &msp), fsel = acts_floats(&c, bsel, &msel);
        size_t fb0 = acts_floats(&c, bb, &mb0), fbsel = acts_floats(&c, bbsel, &mbsel);
        const Layout *L = &msp.lay;
        size_t N = N_, Nr = (size_t)msp.N_res, d = c.d_model, nl = (size_t)(L->layer_end - L->layer_begin);
        CK(Nr * (size_t)(L->sp ? G.tp : 1) == N && L->sp == (G.tp > 1), "N_res %zu, sp %d at tp %d", Nr, L->sp, G.tp);
        size_t lat = k == LINEAR_LAX && L->pp > 1 ? (size_t)m0.N * (4 * (size_t)L->lra + 3 * (size_t)L->lrm) : 0;
        size_t e0 = L->first_stage ? 0 : lat, eo = L->last_stage ? 0 : lat;
        size_t want = R16(N * d + e0) - R16(Nr * d + e0) + (nl - 1) * (R16(N * d) - R16(Nr * d))   // x
                    + nl * (3 * (R16(N * d) - R16(Nr * d)) + 2 * (R16(N) - R16(Nr)))             // a, x_mid, m, rstd1, rstd2
                    + R16(N * d + eo) - R16(Nr * d + eo)                                          // the stage output
                    + (L->last_stage ? R16(N * d) - R16(Nr * d) + R16(N) - R16(Nr) : 0);         // xf, rstdf
        CK(f0 - fsp == want, "%s: sequence parallelism saves %zu floats, formula %zu", linear_kind_name(k), f0 - fsp, want);
        size_t core = R16(N * (size_t)m0.lay.dq) + R16((size_t)B_ * m0.lay.H * T_);
        CK(f0 - fsel == (nl - 1) * core, "%s: selective saves %zu floats, formula %zu", linear_kind_name(k), f0 - fsel,
           (nl - 1) * core);
        size_t bcore = R16(N * (size_t)mb0.lay.dq) + R16((size_t)B_ * mb0.lay.H * T_);
        CK(fb0 - fbsel == (nl - 1) * bcore, "%s btp: selective saves %zu floats, formula %zu", linear_kind_name(k),
           fb0 - fbsel, (nl - 1) * bcore);
        CK(msel.ckpt == CKPT_SELECTIVE && msp.ckpt == CKPT_NONE, "ckpt modes %d %d", msel.ckpt, msp.ckpt);
        model_free(&m0); model_free(&msp); model_free(&msel); model_free(&mb0); model_free(&mbsel);
    }
}

// mdl->ckpt after the fall-backs, and bytes_acts vs the formulas of docs/boost.md; for LaX
// (docs/lax.md §7) those plus: the latents in the stage messages (layer 0's input of a stage
// p > 0, the stage output of p < pp−1), the forward latent buffer of CKPT_LOWRANK, each layer's
// incoming latents under CKPT_FULL, and with no checkpointing exactly cola's bytes per layer
// (U replaces P in place; the LayerNorm statistics are recomputed in the scratch).
static size_t R16(size_t n) { return (n + 15) / 16 * 16; }
TEST(activation_memory) {
    size_t cola_layer = 0;
    for (int k = 1; k <= 3; k++) {   // cola, svd, LaX (cola base, kron, LayerNorm)
        ModelConfig c = tiny_cfg((LinearKind)k, 4);
        int cola = k != LINEAR_SVD, lax = k == LINEAR_LAX;
        Model none, low, full, vlow, vnone;
        BoostConfig bn = boost_of(1, 1, 1, 0, 0), bl = boost_of(1, 1, 1, 1, 0), bf = boost_of(1, 1, 1, 0, 1);
        BoostConfig bv = boost_of(0, 1, 1, 1, 0);   // lowrank_ckpt without BTP: falls back
        model_init_parallel(&none, &c, B_, T_, SEED, &G, &bn, 1, NULL, 1);
        model_init_parallel(&low, &c, B_, T_, SEED, &G, &bl, 1, NULL, 1);
        model_init_parallel(&full, &c, B_, T_, SEED, &G, &bf, 1, NULL, 1);
        model_init_parallel(&vlow, &c, B_, T_, SEED, &G, &bv, 1, NULL, 1);
        BoostConfig b0 = boost_of(0, 0, 0, 0, 0);
        model_init_parallel(&vnone, &c, B_, T_, SEED, &G, &b0, 1, NULL, 1);
        CK(none.ckpt == CKPT_NONE && low.ckpt == CKPT_LOWRANK && full.ckpt == CKPT_FULL && vlow.ckpt == CKPT_NONE,
           "ckpt modes %d %d %d %d", none.ckpt, low.ckpt, full.ckpt, vlow.ckpt);
        const Layout *L = &low.lay;
        size_t N = N_, dr = L->d_res, d = c.d_model, ra = L->ra, rm = L->rm, nl = L->layer_end - L->layer_begin;
        size_t lat = lax ? N * (4 * ra + 3 * rm) : 0, msg = L->pp > 1 ? lat : 0;   // BTP: full-width latents
        size_t io = 2 * R16(N) + R16(N * dr + (L->last_stage ? 0 : msg));   // token ids, stage output (+ latents)
        size_t x0 = L->first_stage ? 0 : R16(N * dr + msg) - R16(N * dr);   // layer 0's input carries latents
        size_t head = L->last_stage ? (L->tp > 1 ? R16(N * d) : 0) + R16(N * d) + 2 * R16(N) + R16(N * L->V) : 0;
        size_t kept = 2 * R16(N * dr) + R16(3 * N * ra + N) + R16(N * ra) + R16(2 * N * rm + N) + R16(N * rm);
        size_t attn = (cola ? R16(3 * N * ra + N) : 0) + 2 * R16(N * L->dq) + 2 * R16(N * L->dkv) + R16((size_t)B_ * L->H * T_);   // lse, not T×T
        size_t mlp = (cola ? R16(2 * N * rm + N) : 0) + 3 * R16(N * L->dff);
        size_t work = (lax ? R16(lat) : 0) + (cola ? R16(N * ra) + R16(N * rm) : 0) + (attn > mlp ? attn : mlp);
        size_t low_f = low.act_bytes / 4, none_f = none.act_bytes / 4, full_f = full.act_bytes / 4;
        const char *kn = linear_kind_name(k);
        CK(low_f == io + head + nl * kept + x0 + work, "%s lowrank: %zu floats, formula %zu", kn, low_f,
           io + head + nl * kept + x0 + work);
        // per layer at most 7·N·r bottleneck + 2·N·d/tp residual + 2·N statistics (+ padding)
        CK(kept <= 4 * N * ra + 3 * N * rm + 2 * N * dr + 2 * N + 6 * 15, "kept per layer %zu", kept);
        size_t layer_full = (none_f - io - head - x0) / nl;   // one whole layer
        CK((none_f - io - head - x0) % nl == 0, "%s none: %zu floats are not %zu equal layers", kn, none_f, nl);
        if (k == LINEAR_COLA) cola_layer = layer_full;
        if (lax) CK(layer_full == cola_layer, "lax none: %zu floats per layer, cola %zu", layer_full, cola_layer);
        size_t zin = lax ? (nl - 1) * R16(lat) : 0;            // CKPT_FULL: layers l ≥ 1 keep their incoming latents
        CK(full_f == io + head + nl * R16(N * dr) + x0 + zin + layer_full, "%s full: %zu floats, formula %zu", kn, full_f,
           io + head + nl * R16(N * dr) + x0 + zin + layer_full);
        CK(low_f < none_f, "lowrank %zu floats not below none %zu", low_f, none_f);
        CK(vlow.act_bytes == vnone.act_bytes, "lowrank_ckpt without BTP: %zu bytes, not those of no checkpointing %zu",
           vlow.act_bytes, vnone.act_bytes);
        if (!lax && G.tp > 1) {   // BTP with sequence parallelism (docs/boost.md §8), low-rank checkpointing: each
            // layer keeps its tokens' N/tp rows of the four bottlenecks and the two norms' statistics
            // of every token [N]; the working set holds every token's Z (its own buffer, svd too)
            BoostConfig bsp = bl; bsp.sequence_parallel = 1;
            Model lsp; model_init_parallel(&lsp, &c, B_, T_, SEED, &G, &bsp, 1, NULL, 1);
            size_t Nr = N / (size_t)G.tp;
            size_t kept_sp = 2 * R16(N * dr) + R16(3 * Nr * ra + Nr) + R16(Nr * ra) + R16(2 * Nr * rm + Nr) + R16(Nr * rm)
                           + 2 * R16(N);
            size_t attn_sp = R16(3 * N * ra + N) + 2 * R16(N * L->dq) + 2 * R16(N * L->dkv) + R16((size_t)B_ * L->H * T_);
            size_t mlp_sp = R16(2 * N * rm + N) + 3 * R16(N * L->dff);
            size_t work_sp = R16(N * ra) + R16(N * rm) + (attn_sp > mlp_sp ? attn_sp : mlp_sp);
            size_t want = io + head + nl * kept_sp + x0 + work_sp;
            CK(lsp.act_bytes / 4 == want, "%s lowrank + sequence parallelism: %zu floats, formula %zu", kn,
               lsp.act_bytes / 4, want);
            model_free(&lsp);
        }
        if (verbose && my_rank == 0)
            fprintf(stderr, "  %s acts floats (tp %d): none %zu lowrank %zu full %zu (scratch %zu)\n", kn,
                    L->tp, none_f, low_f, full_f, low.scratch_bytes / 4);
        model_free(&none); model_free(&low); model_free(&full); model_free(&vlow); model_free(&vnone);
    }
}

int main(int argc, char **argv) {
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &my_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &n_ranks));
    int tp = n_ranks, pp = 1;
    if (argc == 3) { tp = atoi(argv[1]); pp = atoi(argv[2]); }
    else if (argc != 1) die_input("usage: test_btp [tp pp]");
    verbose = getenv("BTP_VERBOSE") != NULL;
    comm_init(&G, tp, pp, 1);
    comm_set_n_layers(&G, 2);
    RUN_ALL(cola_all_combinations);
    RUN_ALL(svd_all_combinations);
    RUN_ALL(lax_all_combinations);
    RUN_ALL(lax_gate_norm_forms);
    RUN_ALL(full_recompute);
    RUN_ALL(gqa_silu_gate_tied);
    RUN_ALL(sequence_parallel_selective);
    RUN_ALL(btp_sequence_parallel);
    RUN_ALL(sequence_parallel_selective_memory);
    RUN_ALL(activation_memory);
    if (verbose && my_rank == 0) fprintf(stderr, "  worst gradient tolerance ratio (tp %d pp %d): %.3g\n", tp, pp, worst_ratio);
    comm_free(&G);
    CHECK_MPI(MPI_Finalize());
    TL_EXIT();
}
