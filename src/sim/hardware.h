// hardware.h — a hardware profile of the performance model: what one device computes, how
// fast its memory is, and what a collective costs on the links between devices.
// Profiles are YAML files under experiments/hardware/ (docs/performance-model.md explains
// every key and its source). hw_load() validates a file strictly: an unknown key, a
// missing key, a wrong type or a value out of range is refused with "FILE:LINE: ..." — the
// manifest rules (src/config) applied to a second file format.
//
//   profile_version: 1
//   name: a100-80gb-node4                 # must equal the file stem
//   description: ...
//   device: NVIDIA A100-SXM4-80GB
//   ranks_per_node: 4                     # devices joined by the intra-node link
//   memory_bytes: 85899345920             # per device
//   memory_bandwidth: 2.039e12            # bytes/s, memory-bound ops
//   memory_efficiency: 1.0                # fraction of memory_bandwidth they reach
//   host_bandwidth: 32e9                  # bytes/s, host <-> device transfers
//   op_overhead_s: 0                      # fixed cost per op (kernel launch, call)
//   launch_s: 5e-6                        # optional: host seconds to issue one kernel or collective
//                                         # (the launch queue, sim.h); default 0 = no queue
//   launch_python_s: 20e-6                # optional: the same for a program issuing its ops from Python
//                                         # (build/simulate --host python); default launch_s
//   clock: {boost_mhz: 1980, sustained_mhz: 1575}   # optional: the SM clock of the rates' benchmarks and
//                                         # the one a training step sustains; compute-bound kernel time
//                                         # × boost / sustained (sustained <= boost); default: no change
//   sm_count: 108                         # roofline GEMMs: wave quantization (0 = off)
//   peak_flops: {fp32: 19.5e12, tf32: 156e12, bf16: 312e12}
//   gemm:                                 # one entry per precision that has a model
//     bf16: {model: roofline, tile: [128, 128], mamf: 271.2e12, mamf_shape: [1024, 10240, 5120],
//            epilogue: serial, split_k: true}   # optional: overlapped (default) | serial (short-K
//                                               # penalty); split_k false (default) | true
//     fp32: {model: table, points: [[M, N, K, flop_per_s], ...]}   # a full M×N×K grid
//   attention:                            # FLOP/s fraction of peak_flops, per precision
//     bf16: {forward: 0.73, backward: 0.50}
//   all_reduce_algorithm: ring            # ring | tree | auto (the faster one per call)
//   links:
//     intra_node:                         # required when ranks_per_node > 1
//       all_reduce:     {base_s: 8.4e-6, hop_s: 3.4e-6, busbw: 230e9}
//       all_gather:     {...}
//       reduce_scatter: {...}
//       p2p:            {...}
//       ll: {base_s: 6.6e-6, hop_s: 0.6e-6, bw_fraction: 0.25}   # optional small-message protocol
//       size_curve: {ranks: 8, points: [[1024, 0.04e9], ..., [8589934592, 231.6e9]]}   # optional
//     inter_node: {..., nics_per_node: 8} # optional; without it the profile is one node
//   rank_share: {2: 0.5, 4: 0.25}         # optional: ranks of a node share one device (a CPU host)
//   op_rates:                             # optional: named ops measured as themselves
//     fp32: {kron_gate_forward: {flop_per_s: 2e9}, layernorm_backward: {byte_per_s: 5e9}}
#pragma once
#include <stddef.h>
#include "../backend/backend.h"
#include "../parallel/comm.h"

#define HW_PROFILE_VERSION 1
#define HW_SPLIT_K_MIN 64    // a split-K slice keeps at least one 64-deep k-tile

// The arithmetic a GEMM or an attention kernel runs at. TF32 is fp32 storage with
// tensor-core math (Backend.tf32); it has its own peak.
typedef enum { SP_FP32, SP_TF32, SP_BF16, SP_COUNT } SimPrecision;
const char *sim_precision_name(SimPrecision p);                 // "fp32", "tf32", "bf16"
SimPrecision sim_precision_of(DType dt, int tf32);              // DT_F32 (+tf32), DT_BF16; dies otherwise

// Collective kinds the profile prices (broadcast and barrier are derived, see sim.h).
typedef enum { HW_ALL_REDUCE, HW_ALL_GATHER, HW_REDUCE_SCATTER, HW_P2P, HW_COLL_COUNT } HwColl;
const char *hw_coll_name(HwColl k);                      // the YAML keys

// One collective on one link: a ring of n ranks takes base_s + steps·hop_s + bytes·f/busbw
// (sim.h states steps and f per kind: nccl-tests' bus-bandwidth convention). busbw is one
// number, or a table by group size where the topology makes it depend on n (a direct
// NVLink mesh: a 2-rank ring uses only the links between its two devices):
//   busbw: 230e9        or      busbw: {2: 77e9, 4: 230e9}
// A size not in the table takes the entry of the largest listed size below it (the
// smallest entry below the table).
#define HW_BUSBW_MAX 8
// A number per group size: the entry of the largest listed size <= n; `none` below the smallest
// (hw_rank_table_at).
typedef struct {
    int n;                       // entries; 0 = absent
    int at[HW_BUSBW_MAX];        // ascending group sizes
    double v[HW_BUSBW_MAX];
} HwRankTable;
double hw_rank_table_at(const HwRankTable *t, int n, double none);
// The bounds of every in_step factor (GEMM table and links): a measurement outside them is a
// machine too loaded (or a clock too coarse) to price anything.
#define HW_IN_STEP_MIN 0.05
#define HW_IN_STEP_MAX 20.0
// A collective's bytes up to which calibrate 5b. counts it as a scalar call (in_step_call_s).
#define HW_SCALAR_CALL_BYTES 64
typedef struct {
    double base_s, hop_s;
    int n_bw;                    // >= 1
    int bw_n[HW_BUSBW_MAX];      // group size of each entry; 0 = the scalar form (any size)
    double bw[HW_BUSBW_MAX];     // bytes/s, ascending bw_n
} HwCollCost;
double hw_busbw(const HwCollCost *c, int n);

// A measured bus-bandwidth curve of one collective by message size on `ranks` ranks of one
// node (nccl-tests all_reduce_perf): its shape, busbw(bytes) / busbw(largest), read at the
// per-rank slice (a group of n ranks moving S bytes reads it at S·ranks/n). A link with a
// curve prices its ring collectives as bytes-on-bus / (busbw_n · shape): the measurement holds
// every latency (docs/performance-model.md §11, 1.).
#define HW_CURVE_MAX 40
typedef struct {
    int n;                       // points; 0 = no curve
    int ranks;                   // the group size it was measured on
    double bytes[HW_CURVE_MAX];  // ascending message sizes
    double frac[HW_CURVE_MAX];   // busbw / busbw of the largest message, in (0, 1.5]
} HwSizeCurve;

typedef struct {
    int present;
    HwCollCost coll[HW_COLL_COUNT];
    // Optional small-message protocol (NCCL's LL): lower latency, bw_fraction of busbw.
    // The time of a call is the smaller of the two protocols' times.
    int has_ll;
    double ll_base_s, ll_hop_s, ll_bw_fraction;
    HwSizeCurve curve;           // intra_node only (optional)
    // inter_node only (optional): NICs per node. With it, the link's busbw is the achieved
    // bandwidth of one NIC, and a group leaving a node shares the node's NICs with the
    // concurrent groups of the other coordinates (§11, 2.); without it (0) every group that
    // leaves a node runs at the link's busbw.
    int nics_per_node;
    // intra_node only (optional): a collective inside a training step against the same call
    // alone, between barriers, on a buffer kept hot (calibrate 5b.: the engine's collectives in
    // real steps of a configuration not validated, waiting for a peer included; sends are not
    // scaled; docs/performance-model.md §15, §16):
    //   in_step {n: f}                 every collective of a group of n ranks: f × its time alone
    //   in_step_by {GROUP_KIND: {n: f}} (tp_all_reduce, dp_all_reduce, tp_all_gather, ...): the
    //                                  factor of one group's calls of one kind, before in_step
    //   in_step_call_s {n: s}          a call's fixed seconds inside a step (the step's scalar
    //                                  collectives); with it a call takes s + f × (its time
    //                                  alone − the same call of 0 bytes alone)
    HwRankTable in_step;
    HwRankTable in_step_by[GROUP_COUNT][HW_COLL_COUNT];
    HwRankTable in_step_call_s;
    // intra_node only (optional): the α-β of a started all-reduce or reduce-scatter where the
    // back end runs it with its own algorithm (MPI: the engine's ordered reduction, comm_mpi.c;
    // docs/performance-model.md §17): ordered: {all_reduce: {...}, reduce_scatter: {...}}.
    // A call made through a start (CommRecord.started) is priced with it, where present.
    HwCollCost ordered[HW_COLL_COUNT];   // [HW_ALL_REDUCE], [HW_REDUCE_SCATTER] only
    int has_ordered[HW_COLL_COUNT];
} HwLink;
// The in_step factor of a call of `group` (-1: none known) and `kind` on n ranks: in_step_by's
// entry, else in_step's, else 1.
double hw_link_in_step(const HwLink *l, int group, HwColl kind, int n);
enum { HW_INTRA, HW_INTER, HW_LINK_COUNT };

typedef enum { GEMM_ROOFLINE, GEMM_TABLE } GemmModel;
typedef enum { AR_RING, AR_TREE, AR_AUTO } AllReduceAlgo;

typedef struct { int M, N, K; double flop_per_s; } GemmPoint;

typedef struct {
    int present;
    GemmModel model;
    // roofline: t = max(flops / (peak · eff_core · q(M,N)), bytes / (bw · mem_eff)),
    // q = wave quantization of tile_m×tile_n output tiles over sm_count processors;
    // eff_core is pinned by the measured maximum achievable matmul FLOP/s (mamf) at its
    // shape: the curve reproduces mamf there.
    int tile_m, tile_n;
    double mamf;
    int mamf_M, mamf_N, mamf_K;
    double eff_core;             // derived at load time
    // epilogue: overlapped (default: the main loop sets the pace) or serial: each output
    // tile's store follows its main loop on the same processor (one thread block per SM, no
    // warp specialization: Ampere-class cuBLAS/CUTLASS kernels): + M·N·elem_bytes / (bw · q_w)
    // after the main loops; for full tiles the K-equivalent epilogue_k0 = elem_bytes·peak·
    // eff_core / (2·bw): rate × K/(K + k0).
    int epilogue_serial;
    double epilogue_k0;          // derived at load time; 0 when overlapped
    // split_k (optional, default false): the library splits K into slices that run as more
    // output tiles when the tiles alone leave processors idle (cuBLAS/CUTLASS split-K for
    // small M×N and long K), and reduces the fp32 partials (sim_gemm_split)
    int split_k;
    // table: measured FLOP/s on a full grid, interpolated trilinearly in log2(M, N, K), each
    // call alone; in_step (optional, > 0; 0 when absent = 1): the seconds a GEMM takes inside a
    // training step over the table's seconds for it (calibrate 4c.: the state the step leaves
    // the operands in; docs/performance-model.md §14)
    double in_step;
    int nM, nN, nK;
    int *Ms, *Ns, *Ks;           // ascending grid axes
    double *rate;                // [nM][nN][nK] FLOP/s
} HwGemm;

typedef struct { int present; double forward, backward; } HwAttention;

// op_rates (optional): ops whose kernels the class models do not describe (a custom loop
// priced as a GEMM, say), measured as themselves: seconds = flops / flop_per_s (or bytes /
// byte_per_s for an op without FLOPs); the timing was of whole calls (no op overhead added).
#define HW_OP_RATES_MAX 32
typedef struct { char name[48]; int per_byte; double rate; } HwOpRate;

typedef struct {
    char path[1024];
    char name[128];
    char description[512];
    char device[128];
    int ranks_per_node;
    double memory_bytes;
    double memory_bandwidth, memory_efficiency, host_bandwidth, op_overhead_s;
    double launch_s;                      // host seconds per issued kernel or collective; 0: no queue
    double launch_python_s;               // the same for a program issuing its ops from Python (default launch_s)
    double clock_boost_mhz, clock_sustained_mhz;   // clock: 0 = absent
    int sm_count;
    double peak_flops[SP_COUNT];          // 0 = not given
    HwGemm gemm[SP_COUNT];
    HwAttention attention[SP_COUNT];
    int n_op_rates[SP_COUNT];
    HwOpRate op_rates[SP_COUNT][HW_OP_RATES_MAX];
    AllReduceAlgo all_reduce_algorithm;
    HwLink link[HW_LINK_COUNT];
    // rank_share (optional): the ranks of a node share one compute device (cpu-local: the
    // cores of one host). {R: s}: with R ranks on a node, one rank's ops run at s × the
    // profile's rates (GEMM table, attention, memory), s in (0, 16]; build/calibrate measures it
    // with R concurrent ranks against the same measurement in one lone process (so s <= 1 but
    // for noise). A count not listed takes the largest listed count below it (below the
    // smallest listed: 1); a {1: s} entry would scale a single process too (calibrate no longer
    // writes one); without the key s = 1 throughout.
    HwRankTable rank_share;
} HwProfile;

// The measured rate of the op `name` at precision p (op_rates), or NULL.
const HwOpRate *hw_op_rate(const HwProfile *p, SimPrecision prec, const char *name);

// The memory bandwidth a kernel achieves, bytes/s: memory_bandwidth × memory_efficiency (the one
// place the two meet; every memory time of the model is bytes over this).
double hw_memory_rate(const HwProfile *p);

// The factor on a compute-bound kernel's time for the SM clock a training step sustains
// (clock: boost_mhz / sustained_mhz, >= 1); 1 for a profile without the key.
double hw_clock_factor(const HwProfile *p);

// The fraction of the profile's compute rates one rank gets when ranks_on_node ranks share
// a node (rank_share); 1 for one rank or a profile without the key.
double hw_rank_share(const HwProfile *p, int ranks_on_node);

// Load and validate; 0 on success, else 1 with "FILE:LINE: what is wrong" in err.
int hw_load(const char *path, HwProfile *p, char *err, size_t err_len);
// Load by name (experiments/hardware/<name>.yaml under dir) or path; bad input dies (exit 2).
void hw_load_or_die(const char *name_or_path, const char *dir, HwProfile *p);
void hw_free(HwProfile *p);
// Can this profile price a run at precision p (peak, GEMM model, attention efficiency)?
// 0 = yes, else 1 and the reason.
int hw_check_precision(const HwProfile *p, SimPrecision prec, char *why, size_t n);

// Write a profile as YAML (calibrate). `header` goes first as comment lines (may be NULL);
// comments[k] (may be NULL) annotate the sections HW_SEC_*.
void hw_write_yaml(FILE *f, const HwProfile *p, const char *header, const char *const *section_comments);
enum { HW_SEC_PEAK, HW_SEC_GEMM, HW_SEC_MEMORY, HW_SEC_ATTENTION, HW_SEC_LINKS, HW_SEC_SHARE, HW_SEC_OP_RATES, HW_SEC_COUNT };
