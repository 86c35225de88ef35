// sim.h — the performance model: op and collective traces of the real drivers (OpInfo,
// CommRecord) turned into time with a hardware profile (hardware.h), and the 1F1B pipeline
// schedule turned into a step time. docs/performance-model.md states every equation and
// where each profile number comes from. In short:
//
//   GEMM        roofline: max(flops / (peak · eff_core · q), bytes / (bw · mem_eff)), q the
//               wave quantization of the output tiles; eff_core pinned by a published
//               maximum-achievable-matmul measurement (mamf). Optional: a serial epilogue
//               (+ M·N·elem_bytes / (bw · q_w): the stores after the main loops; × (K + k0)/K
//               for full tiles) and split-K (K in s slices, the fastest s, + 2·s·M·N·4 B of
//               fp32 partials through memory). Table profiles (cpu-local):
//               flops / rate(M, N, K), rate interpolated in log2(M, N, K) on a measured grid.
//   attention   max(flops / (peak · eff_fwd|bwd), bytes / (bw · mem_eff))
//   memory ops  bytes / (bw · mem_eff);  host transfers  bytes / host_bandwidth
//   named ops   an op listed in the profile's op_rates: flops / flop_per_s (or bytes / byte_per_s)
//   every op    + op_overhead_s (not a table GEMM nor a named op: their timings hold the call)
//   launches    (profiles with launch_s > 0) the host issues each op and collective in launch_s;
//               within one action (a micro-batch's forward or backward, the head, the tail) a
//               host and a device clock: host += launch_s; wait = max(0, host − device);
//               device += wait + t. The op is priced t + wait (the GPU waited for the host).
//   shared node ops / rank_share(R) with R ranks on the rank's node (a CPU host's cores)
//   collectives α-β on the link the group's placement uses (intra-node when all its ranks
//               share a node, else inter-node), S = the record's bytes, n = group size:
//                 all-reduce ring   base + 2(n−1)·hop + S·2(n−1)/n / busbw
//                 all-reduce tree   base + 2·((n/nodes − 1)·hop_intra + ⌈log2 nodes⌉·hop_inter) + 2S/busbw
//                 reduce-scatter,   base + (n−1)·hop + S·(n−1)/n / busbw
//                 all-gather
//                 broadcast         base + (n−1)·hop + S / busbw(all_gather)   (pipelined ring)
//                 barrier           an all-reduce of 0 bytes
//                 send              base + hop + S / busbw(p2p);  recv: 0 (its send carries it)
//               busbw is nccl-tests' bus bandwidth; with a small-message protocol (ll) the
//               call takes the faster of the two protocols.
//   pipeline    1F1B (parallel/schedule.h, fused exchanges as the trainer runs them) with
//               per-action durations and blocking (rendezvous) transfers.
// Overlap: the model prices what the engine does (comm.h: started collectives). A blocking
// collective is exposed whole. A started one (the data-parallel gradient reduction of each
// bucket, the TP collectives the drivers start beside GEMMs) runs on its group's stream from
// when it is started — behind the calls started there before it — while the compute goes
// on, and only the part still running when the compute waits for it is exposed. One
// function decides it: sim_comm_exposed. With parallel.overlap false the engine waits for
// every started call at once, and the model exposes it whole.
#pragma once
#include "hardware.h"
#include "roofline.h"

// ---- op time (op_time.c) --------------------------------------------------------------------
// FLOP/s a GEMM of this shape reaches before the memory bound (roofline: peak·eff_core·q;
// table: interpolated). count > 1: a batched group of `count` such GEMMs in one launch.
double sim_gemm_rate(const HwProfile *hw, SimPrecision p, double M, double N, double K, int count);
// (The roofline curve itself, wave quantization and the split-K choice: roofline.h.)
// Seconds of one GEMM launch doing `flops` with `bytes` of memory traffic.
double sim_gemm_time(const HwProfile *hw, SimPrecision p, double M, double N, double K, int count,
                     double flops, double bytes);
// Seconds of one kernel that makes one pass over `bytes` of memory at the profile's achieved
// bandwidth (hw_memory_rate), its launch overhead included.
double sim_memory_pass_time(const HwProfile *hw, double bytes);
// Seconds of one traced op (any class). The profile must cover p (hw_check_precision).
double sim_op_time(const HwProfile *hw, SimPrecision p, const OpInfo *op);
// The attention kernel a priced run uses: the engine's flash kernel, the materialised s × s
// scores of published systems that ran without one (docs/performance-model.md §11, 6.), or
// FlashAttention v1 at half the profile's (FlashAttention-2) efficiencies (§12, 2.).
typedef enum { SIM_ATT_FLASH, SIM_ATT_MATERIALIZED, SIM_ATT_MATERIALIZED_DROPOUT, SIM_ATT_FLASH1, SIM_ATT_COUNT } SimAttentionKernel;
const char *sim_attention_kernel_name(SimAttentionKernel k);   // "flash", "materialized", "materialized-dropout", "flash1"
// Seconds of one attention op run as kernel k (SIM_ATT_FLASH: sim_op_time).
double sim_attention_kernel_time(const HwProfile *hw, SimPrecision p, const OpInfo *op, SimAttentionKernel k);
// The useful share of a flash kernel's work at head dimension d: FlashAttention-2 runs the kernel
// compiled for the next multiple of 32 (static_switch.h HEADDIM_SWITCH, flash_api.cpp
// head_size_rounded), d / (32 ⌈d / 32⌉); 1 for d <= 0 (an op without its shape). §19, 2.
#define SIM_FLASH_HEAD_PAD 32.0
double sim_flash_head_fraction(double head_dim);
// Seconds of one attention op (OpInfo M = batch × heads, N = sequence, K = head dim) run as
// materialised attention: Q·Kᵀ and P·V (backward: dP, dV, dQ, dK) as strided-batched GEMMs over
// the full s × s, the scale-mask-softmax pass, with dropout its pass and one-byte mask.
double sim_attention_materialized_time(const HwProfile *hw, SimPrecision p, const OpInfo *op, int dropout);

// The eager element-wise compositions of published programs (docs/performance-model.md §20): a
// family a program computes as several framework operations, each its own kernel, instead of the
// engine's one fused kernel. A run declares a set of them (bit 1 << family; build/simulate
// --unfused); the engine's own runs declare none.
typedef enum { SIM_UNFUSED_NORM, SIM_UNFUSED_ROPE, SIM_UNFUSED_SWIGLU, SIM_UNFUSED_COUNT } SimUnfused;
const char *sim_unfused_name(SimUnfused f);   // "norm", "rope", "swiglu"
#define SIM_UNFUSED_MAX_KERNELS 12
// The kernels of `op` run as its family's reference composition when `mask` declares the family:
// bytes[i] the memory traffic of kernel i (bytes per element × the op's element count, which its
// FLOP count gives); returns how many (0: the op is no member of a declared family — the engine's
// kernel prices it).
int sim_unfused_kernels(const OpInfo *op, unsigned mask, double bytes[SIM_UNFUSED_MAX_KERNELS]);

// ---- collectives (collective.c) -------------------------------------------------------------
// Where a group's ranks sit: n ranks over n_nodes nodes, at most per_node on one node.
typedef struct { int n, n_nodes, per_node; } SimPlacement;
// Of an explicit list of world ranks (node = world_rank / ranks_per_node).
SimPlacement sim_placement(const int *world_ranks, int n, int ranks_per_node);
// Of the group g that contains the rank (tp_rank, dp_rank, pp_rank) of a tp×dp×pp grid
// (world_rank = tp_rank + tp·(dp_rank + dp·pp_rank)). GROUP_PP's placement prices its
// collectives; sends use sim_pair_placement.
SimPlacement sim_group_placement(int tp, int dp, int pp, int tp_rank, int dp_rank, int pp_rank,
                                 CommGroup g, int ranks_per_node);
SimPlacement sim_pair_placement(int world_a, int world_b, int ranks_per_node);
// Seconds of one call of `kind` moving `bytes` (the CommRecord's bytes) on a group placed pl.
// 0 for a group of one. Dies (internal) when the placement needs a link the profile lacks:
// callers check sim_check_grid first. A call of `group` (a CommGroup, -1: none known) inside a
// step takes the profile's in-step terms of that group and kind (hardware.h); `started`: a call
// made through a start (CommRecord.started), priced inside a node with the link's `ordered` α-β
// where the profile has one for its kind (docs/performance-model.md §17).
// sim_collective_time: of no known group, not started. sim_collective_alone: the call alone,
// without the in-step terms.
double sim_collective_in_group(const HwProfile *hw, CommKind kind, int group, int started, double bytes, SimPlacement pl);
double sim_collective_time(const HwProfile *hw, CommKind kind, double bytes, SimPlacement pl);
double sim_collective_alone(const HwProfile *hw, CommKind kind, int started, double bytes, SimPlacement pl);
// The profile's kind whose in-step terms price a CommKind (broadcast: all_gather's, barrier:
// all_reduce's).
HwColl sim_coll_priced_as(CommKind kind);
// Ring all-reduce and tree all-reduce alone (the profile's algorithm picks between them).
double sim_all_reduce_ring(const HwProfile *hw, double bytes, SimPlacement pl);
double sim_all_reduce_tree(const HwProfile *hw, double bytes, SimPlacement pl);
// Can the profile place a tp×dp×pp grid (one node, or an inter-node link)? 0 or 1 + reason.
int sim_check_grid(const HwProfile *hw, int tp, int dp, int pp, char *why, size_t n);

// ---- trace accumulation (trace.c) -----------------------------------------------------------
// What a span of the trace costs.
typedef struct {
    double compute_s;     // ops
    double comm_s;        // collectives (TP, DP, world): what the compute waits for (exposed)
    double p2p_bytes;     // pipeline sends (PHASE_PIPELINE send records): priced by the pipeline
    double launch_wait_s; // of compute_s + comm_s: the device waiting for the host's launches
    double flops;         // traced op FLOPs (recompute included: hardware FLOPs)
    double gemm_flops;    // of which GEMMs
    long n_ops, n_calls;
} SimCost;

// One priced record of the layer trace (sim_tracer_trace_layer): an op or a collective of one
// layer, in the order the drivers issued them.
typedef struct {
    int is_comm;
    const char *name;        // op name (OpInfo.name) or collective kind (comm_kind_name)
    int cls;                 // OpClass, or CommKind for a collective
    int group;               // CommGroup of a collective; -1 for an op
    Phase phase;
    int M, N, K, count;      // GEMM shape (0 otherwise)
    double flops, bytes;     // the record's (a collective: its bytes, no FLOPs)
    double seconds;
} SimEvent;

// A blocking collective that joins pipeline stages, met in a stage's tail: the tail's seconds
// before the stage enters it, and the call's own priced seconds (docs/performance-model.md §21).
typedef struct {
    double at_s, call_s;
    CommKind kind;
    Phase phase;
    CommGroup group;
    int layer;
} SimSync;

// An OpObserver / CommObserver context that prices every record as it arrives, for one
// rank of the grid. Spans: sim_tracer_take returns the cost since the last take.
typedef struct {
    const HwProfile *hw;
    SimPrecision prec;
    SimPlacement place[GROUP_COUNT];
    double share;                              // hw_rank_share of this rank's node: ops take 1/share as long
    SimAttentionKernel attention;              // how attention ops are priced (default: the engine's flash kernel)
    unsigned unfused;                          // the eager compositions declared (bit 1 << SimUnfused; default none)
    double host_s, dev_s;                      // the launch queue's clocks within the current span
    SimCost cur, total;
    int n_layers;                              // per-layer tables: layers -1 .. n_layers-1
    double *layer_compute, *layer_comm;        // [PHASE_COUNT][n_layers + 1] seconds
    double op_class_s[PHASE_COUNT][OPC_COUNT]; // seconds by phase and op class
    double comm_group_s[PHASE_COUNT][GROUP_COUNT];
    double *comm_cell_s;                       // [COMM_KIND_COUNT][PHASE_COUNT][GROUP_COUNT][n_layers + 1]
    // The layer trace: every record of layer trace_layer while trace_on is set.
    int trace_layer, trace_on;
    SimEvent *events;
    int n_events, cap_events;
    // Started collectives (sim_comm_exposed): the compute's clock (its ops and exposed waits,
    // every span), when each group's stream is done with the calls started so far, and when
    // each started call ends (per group, by its seq)
    double clock_s;
    double stream_end[GROUP_COUNT];
    double *started_end[GROUP_COUNT];
    int *started_event[GROUP_COUNT];  // its event in the layer trace + 1 (0: not traced): its wait's seconds go there
    uint64_t cap_started[GROUP_COUNT];
    double started_s, hidden_s;       // wire time of the started calls, and the part of it hidden
    // The joins of the step's tail (docs/performance-model.md §21): while record_syncs is set,
    // every blocking call on a group whose members run other pipeline stages (pp, and world at
    // pp > 1), with the clock's seconds since sync_from_s at its entry.
    int record_syncs;
    double sync_from_s;
    SimSync *syncs;
    int n_syncs, cap_syncs;
} SimTracer;

void sim_tracer_init(SimTracer *t, const HwProfile *hw, SimPrecision prec, int tp, int dp, int pp,
                     int tp_rank, int dp_rank, int pp_rank, int n_layers);
void sim_tracer_free(SimTracer *t);
void sim_tracer_op(void *ctx, const OpInfo *op);            // OpObserver.end
void sim_tracer_comm(void *ctx, const CommRecord *r);       // CommObserver
// The seconds the compute waits at collective record r, whose call takes `seconds` on the wire
// (a WAIT record: the call it waits for; its `seconds` unused): the one place that decides
// what overlaps. A blocking call (COMM_RECORD_CALL): all of it. A started one
// (COMM_RECORD_START): nothing now; it runs on its group's stream from max(now, the end of the
// calls started there before it) for `seconds`. Its wait (COMM_RECORD_WAIT): what is left of
// it at the compute's clock — the part of the call that the compute between its start and its
// wait did not hide. So the data-parallel reduction of each bucket is hidden behind the
// backward compute that follows its start (its wait is in the optimizer), the TP collectives
// behind the GEMMs the drivers run before their waits, and never more.
double sim_comm_exposed(SimTracer *t, const CommRecord *r, double seconds);
// The cost since the last take; the launch queue's clocks meet again (a span ends at a point
// where the host waits for the device).
SimCost sim_tracer_take(SimTracer *t);
// Book a stage's wait inside a joining call (the pipeline simulation's, §21) into the per-layer,
// per-group and per-cell tables, as the call's own seconds are.
void sim_tracer_book_wait(SimTracer *t, const SimSync *y, double wait_s);
// Record every op and collective of `layer` from now on while `on` (the layer trace).
void sim_tracer_trace_layer(SimTracer *t, int layer, int on);
// Seconds of the collectives of one (kind, phase, group, layer) cell: the modeled time of
// the communication table's row of the same key (comm_stats_next).
double sim_tracer_comm_cell(const SimTracer *t, CommKind kind, Phase ph, CommGroup g, int layer);
// Seconds of (phase, layer) — layer −1 is the embedding / head / optimizer row.
double sim_tracer_layer_compute(const SimTracer *t, Phase ph, int layer);
double sim_tracer_layer_comm(const SimTracer *t, Phase ph, int layer);

// ---- pipeline (pipeline.c) ------------------------------------------------------------------
// One step of P stages and M micro-batches under the fused 1F1B schedule. fwd[p][m], bwd[p][m]:
// seconds of stage p's forward / backward of micro-batch m (compute and their collectives);
// xfer_fwd[p], xfer_bwd[p] (p < P−1): seconds of one activation transfer p → p+1 and one
// gradient transfer p+1 → p; head[p]: seconds before the stage's first action (zeroing the
// gradients); tail[p]: seconds after its last backward (gradient reduction, optimizer); head
// and tail may be NULL. A transfer completes when both ends have reached it plus its
// duration (blocking sends, as the trainer's MPI exchanges).
// sync[p][0 .. n_sync−1] (NULL when n_sync is 0): the blocking calls that join the stages in
// their tails, the same calls in the same order on every stage (MPI's rule); every stage
// leaves call j at the latest entry plus its own call_s, and the time before the latest entry
// is its wait inside the call (§21). sync_wait[p][j], when not NULL, receives that wait.
typedef struct {
    int n_stages, n_micro;
    const double *const *fwd, *const *bwd;
    const double *xfer_fwd, *xfer_bwd;
    const double *tail;
    const double *head;
    int n_sync;
    const SimSync *const *sync;
    double *const *sync_wait;
} SimPipeIn;
typedef struct {
    double end_s;       // when the stage finished, tail included
    double busy_s;      // compute actions + head + tail
    double xfer_s;      // transfer durations of its communication actions
    double sync_wait_s; // waiting inside the tail's joining calls for the last stage to enter
    double wait_s;      // idle: waiting for a peer's transfer, and after its end until the step's end
} SimStageTime;
// Returns the step time (the last stage end) and fills out[P]; −1 with msg on a malformed
// schedule (cannot happen for 1F1B; kept as a check of the simulation).
double sim_pipeline(const SimPipeIn *in, SimStageTime *out, char *msg, size_t n);
// Closed form for uniform stages without transfers: (M + P − 1)·(f + b).
double sim_pipeline_uniform(int n_stages, int n_micro, double f, double b);
// A published run's interleaved schedule with v model chunks per device, from this engine's
// 1F1B step and its critical stage's idle time and transfer time: the bubble / v, the transfers
// × v (Narayanan et al. SC21 §2.2.2; docs/performance-model.md §12, 3.):
// step − (1 − 1/v)·idle + (v − 1)·xfer. v = 1 gives the step back.
double sim_pipeline_interleaved(double step_s, double idle_s, double xfer_s, int v);

// ---- report (trace.c) -----------------------------------------------------------------------
typedef struct {
    double step_s;
    double compute_s, comm_s, p2p_s, bubble_s;   // of the reported stage; sum = step_s
    double launch_wait_s;                        // of compute_s + comm_s: waiting for the host's launches
    double tokens_per_s;
    double model_flops;      // per step, whole grid (6·params + attention, no recompute)
    double hw_flops;         // per step, whole grid, as traced (recompute included)
    double mfu, hfu;         // model / hardware FLOPs over step_s · peak · world
} SimStepReport;
// The split of one stage's step: compute and comm from its traced cost, p2p from the
// pipeline's transfer time, bubble the rest (idle waiting, including the pipeline fill and
// drain). tokens: per step, whole grid; peak: FLOP/s of one device; world: devices.
void sim_report_fill(SimStepReport *r, double step_s, const SimCost *stage, double stage_xfer_s,
                     double tokens, double model_flops, double hw_flops, double peak, int world);
void sim_report_print(const SimStepReport *r, FILE *f);
