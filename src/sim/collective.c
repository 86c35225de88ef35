// collective.c — the time of a collective on the link its group's placement uses (sim.h,
// docs/performance-model.md §1 and §11): inside a node the measured size curve where the
// profile has one, else α-β; across nodes NCCL's latency model (only the node-crossing steps
// pay the network latency) and the NICs the group shares.
#include <math.h>

#include "../core/check.h"
#include "sim.h"

SimPlacement sim_placement(const int *world_ranks, int n, int ranks_per_node) {
    SimPlacement pl = { n, 0, 0 };
    // count ranks per node among the distinct nodes of the group (at most n of them: a
    // data-parallel or world group of a large published run spans hundreds of nodes)
    int *nodes = xcalloc((size_t)n, sizeof *nodes), *count = xcalloc((size_t)n, sizeof *count), nn = 0;
    for (int i = 0; i < n; i++) {
        int node = world_ranks[i] / ranks_per_node, j = 0;
        while (j < nn && nodes[j] != node) j++;
        if (j == nn) {
            nodes[nn] = node;
            count[nn++] = 0;
        }
        count[j]++;
    }
    pl.n_nodes = nn;
    for (int j = 0; j < nn; j++)
        if (count[j] > pl.per_node) pl.per_node = count[j];
    free(nodes);
    free(count);
    return pl;
}

SimPlacement sim_group_placement(int tp, int dp, int pp, int tp_rank, int dp_rank, int pp_rank,
                                 CommGroup g, int ranks_per_node) {
    int size = g == GROUP_TP ? tp : g == GROUP_DP ? dp : g == GROUP_PP ? pp : tp * dp * pp;
    CHECK(size >= 1 && size <= (1 << 20), "sim_group_placement: group of %d ranks", size);
    int *r = xcalloc((size_t)size, sizeof *r);
    for (int i = 0; i < size; i++) {
        int t = tp_rank, d = dp_rank, p = pp_rank;
        if (g == GROUP_TP) t = i;
        else if (g == GROUP_DP) d = i;
        else if (g == GROUP_PP) p = i;
        else { r[i] = i; continue; }
        r[i] = grid_world_rank(tp, dp, t, d, p);
    }
    SimPlacement pl = sim_placement(r, size, ranks_per_node);
    free(r);
    return pl;
}

SimPlacement sim_pair_placement(int world_a, int world_b, int ranks_per_node) {
    int r[2] = { world_a, world_b };
    return sim_placement(r, 2, ranks_per_node);
}

int sim_check_grid(const HwProfile *hw, int tp, int dp, int pp, char *why, size_t n) {
    int world = tp * dp * pp;
    if (world > hw->ranks_per_node && !hw->link[HW_INTER].present) {
        snprintf(why, n, "profile %s describes one node of %d device%s and has no inter-node link; the grid "
                 "tp×dp×pp = %d×%d×%d needs %d", hw->name, hw->ranks_per_node, hw->ranks_per_node > 1 ? "s" : "",
                 tp, dp, pp, world);
        return 1;
    }
    return 0;
}

static const HwLink *link_for(const HwProfile *hw, SimPlacement pl) {
    const HwLink *l = &hw->link[pl.n_nodes > 1 ? HW_INTER : HW_INTRA];
    CHECK(l->present, "profile %s has no %s link for a group of %d ranks on %d node(s)", hw->name,
          pl.n_nodes > 1 ? "inter-node" : "intra-node", pl.n, pl.n_nodes);
    return l;
}

// The measured size curve's shape at x bytes: log-log interpolation between its points; below
// the first point a constant time (the shape falls with the size), above the last its value.
static double curve_frac(const HwSizeCurve *cv, double x) {
    if (x >= cv->bytes[cv->n - 1]) return cv->frac[cv->n - 1];
    if (x <= cv->bytes[0]) return cv->frac[0] * (x > 0 ? x / cv->bytes[0] : 0);
    int i = 0;
    while (cv->bytes[i + 1] < x) i++;
    double w = log(x / cv->bytes[i]) / log(cv->bytes[i + 1] / cv->bytes[i]);
    return exp((1 - w) * log(cv->frac[i]) + w * log(cv->frac[i + 1]));
}

// Bus bandwidth of a ring collective of `bytes` on the group placed pl (§11, 1. and 2.).
// Inside a node: the profile's busbw for n ranks, shaped by the measured size curve at the
// per-rank slice when the link has one. Across nodes with nics_per_node: the group's share of
// its nodes' NICs (k ranks per node of ranks_per_node: nics·k/ranks_per_node of them) at one
// NIC's achieved busbw, never above the intra-node rings' busbw; without nics_per_node the
// inter-node link's busbw.
static double ring_busbw(const HwProfile *hw, HwColl k, SimPlacement pl, double bytes) {
    const HwLink *l = link_for(hw, pl);
    if (pl.n_nodes == 1) {
        double bw = hw_busbw(&l->coll[k], pl.n);
        if (l->curve.n) {
            double f = curve_frac(&l->curve, bytes * l->curve.ranks / pl.n);
            bw *= f > 0 ? f : 1e-12;
        }
        return bw;
    }
    if (!l->nics_per_node) return hw_busbw(&l->coll[k], pl.n);
    double nics = (double)l->nics_per_node * pl.per_node / hw->ranks_per_node;
    double bw = nics * hw_busbw(&l->coll[k], pl.n);
    if (pl.per_node > 1) {
        double intra = hw_busbw(&hw->link[HW_INTRA].coll[k], pl.per_node);
        if (intra < bw) bw = intra;
    }
    return bw;
}

// The α-β form every priced exchange takes (ring, send, ordered reduction): a fixed cost, the
// steps inside a node and across nodes each at its own latency, the bus bytes at bw.
static double alpha_beta(double base_s, double steps_in, double hop_in_s, double steps_across, double hop_across_s,
                         double bus, double bw) {
    return base_s + steps_in * hop_in_s + steps_across * hop_across_s + bus / bw;
}

// A ring of n ranks over pl.n_nodes nodes: `steps` steps of which `inter_steps` cross a node
// boundary (NCCL's tuning model: only those pay the network latency), `bus` bytes on the bus.
// Inside a node with a measured size curve the curve holds the latencies; otherwise the α-β
// form, with the small-message protocol (ll) when it is faster.
static double ring_time(const HwProfile *hw, HwColl k, SimPlacement pl, double steps, double inter_steps, double bus,
                        double bytes) {
    const HwLink *l = link_for(hw, pl), *in = &hw->link[HW_INTRA];
    double bw = ring_busbw(hw, k, pl, bytes);
    if (pl.n_nodes == 1 && l->curve.n) return bus / bw;
    const HwCollCost *c = &l->coll[k];
    double hop_in = pl.n_nodes > 1 && in->present ? in->coll[k].hop_s : c->hop_s;
    double t = alpha_beta(c->base_s, steps - inter_steps, hop_in, inter_steps, c->hop_s, bus, bw);
    if (l->has_ll) {
        double ll_in = pl.n_nodes > 1 && in->present && in->has_ll ? in->ll_hop_s : l->ll_hop_s;
        double t_ll = alpha_beta(l->ll_base_s, steps - inter_steps, ll_in, inter_steps, l->ll_hop_s, bus, bw * l->ll_bw_fraction);
        if (t_ll < t) t = t_ll;
    }
    return t;
}

double sim_all_reduce_ring(const HwProfile *hw, double bytes, SimPlacement pl) {
    if (pl.n <= 1) return 0;
    double n = pl.n;
    return ring_time(hw, HW_ALL_REDUCE, pl, 2 * (n - 1), 2.0 * (pl.n_nodes - 1), bytes * 2 * (n - 1) / n, bytes);
}

// Pipelined tree (a chain inside each node, a binary tree across nodes): reduce up, then
// broadcast down; the busiest rank moves 2S (NCCL's tree: algbw = busbw / 2), at the group's
// bandwidth (ring_busbw: the NICs it shares when it leaves the node).
double sim_all_reduce_tree(const HwProfile *hw, double bytes, SimPlacement pl) {
    if (pl.n <= 1) return 0;
    const HwLink *intra = pl.per_node > 1 ? &hw->link[HW_INTRA] : NULL, *bott = link_for(hw, pl);
    CHECK(!intra || intra->present, "profile %s has no intra-node link", hw->name);
    double lat = bott->coll[HW_ALL_REDUCE].base_s;
    if (intra) lat += 2.0 * (pl.per_node - 1) * intra->coll[HW_ALL_REDUCE].hop_s;
    if (pl.n_nodes > 1) lat += 2.0 * ceil(log2(pl.n_nodes)) * hw->link[HW_INTER].coll[HW_ALL_REDUCE].hop_s;
    return lat + 2 * bytes / ring_busbw(hw, HW_ALL_REDUCE, pl, bytes);
}

// One message between two ranks (a pipeline send): α-β on the pair's link; across nodes with
// nics_per_node, every rank of the node sends at once (a stage's TP ranks), so one rank has
// min(1, nics_per_node / ranks_per_node) NICs.
static double send_time(const HwProfile *hw, double bytes, SimPlacement pl) {
    const HwLink *l = link_for(hw, pl);
    const HwCollCost *c = &l->coll[HW_P2P];
    double bw = hw_busbw(c, 2);
    if (pl.n_nodes > 1 && l->nics_per_node) {
        double share = (double)l->nics_per_node / hw->ranks_per_node;
        bw *= share < 1 ? share : 1;
    }
    double t = alpha_beta(c->base_s, 1, c->hop_s, 0, 0, bytes, bw);
    if (l->has_ll) {
        double t_ll = alpha_beta(l->ll_base_s, 1, l->ll_hop_s, 0, 0, bytes, bw * l->ll_bw_fraction);
        if (t_ll < t) t = t_ll;
    }
    return t;
}

HwColl sim_coll_priced_as(CommKind kind) {
    return kind == COMM_ALL_GATHER || kind == COMM_BROADCAST ? HW_ALL_GATHER : kind == COMM_REDUCE_SCATTER ? HW_REDUCE_SCATTER
                                                                                                          : HW_ALL_REDUCE;
}

// A collective inside one node, as a training step meets it (hardware.h, docs/performance-model.md
// §15–16): the link's in_step factor of its group and kind × its time alone, or with
// in_step_call_s, the call's fixed seconds in a step + the factor × its time alone beyond the
// same call of 0 bytes. Sends and receives are priced alone (the pipeline's bubble holds their
// waiting).
double sim_collective_in_group(const HwProfile *hw, CommKind kind, int group, int started, double bytes, SimPlacement pl) {
    double t = sim_collective_alone(hw, kind, started, bytes, pl);
    if (pl.n <= 1 || pl.n_nodes != 1 || kind == COMM_SEND || kind == COMM_RECV) return t;
    const HwLink *l = &hw->link[HW_INTRA];
    double f = hw_link_in_step(l, group, sim_coll_priced_as(kind), pl.n), call = hw_rank_table_at(&l->in_step_call_s, pl.n, -1);
    if (call < 0) return f * t;
    return call + f * (t - sim_collective_alone(hw, kind, started, 0, pl));
}

double sim_collective_time(const HwProfile *hw, CommKind kind, double bytes, SimPlacement pl) {
    return sim_collective_in_group(hw, kind, -1, 0, bytes, pl);
}

// A started all-reduce or reduce-scatter inside one node whose link has the `ordered` α-β of its
// kind (the MPI back end's own reduction, §17): that α-β, with the ring's steps and bus bytes
// (calibrate fits it in the same form). -1: not such a call.
static double ordered_time(const HwProfile *hw, CommKind kind, int started, double bytes, SimPlacement pl) {
    const HwLink *l = &hw->link[HW_INTRA];
    HwColl k = kind == COMM_ALL_REDUCE ? HW_ALL_REDUCE : kind == COMM_REDUCE_SCATTER ? HW_REDUCE_SCATTER : HW_COLL_COUNT;
    if (!started || pl.n_nodes != 1 || k == HW_COLL_COUNT || !l->present || !l->has_ordered[k]) return -1;
    const HwCollCost *c = &l->ordered[k];
    double n = pl.n, steps = k == HW_ALL_REDUCE ? 2 * (n - 1) : n - 1, bus = bytes * steps / n;
    return alpha_beta(c->base_s, steps, c->hop_s, 0, 0, bus, hw_busbw(c, pl.n));
}

double sim_collective_alone(const HwProfile *hw, CommKind kind, int started, double bytes, SimPlacement pl) {
    if (pl.n <= 1) return 0;
    double n = pl.n, ord = ordered_time(hw, kind, started, bytes, pl);
    if (ord >= 0) return ord;
    switch (kind) {
    case COMM_ALL_REDUCE:
    case COMM_BARRIER: {
        double b = kind == COMM_BARRIER ? 0 : bytes;
        if (hw->all_reduce_algorithm == AR_RING) return sim_all_reduce_ring(hw, b, pl);
        if (hw->all_reduce_algorithm == AR_TREE) return sim_all_reduce_tree(hw, b, pl);
        double r = sim_all_reduce_ring(hw, b, pl), t = sim_all_reduce_tree(hw, b, pl);
        return r < t ? r : t;
    }
    case COMM_ALL_GATHER:
        return ring_time(hw, HW_ALL_GATHER, pl, n - 1, pl.n_nodes - 1.0, bytes * (n - 1) / n, bytes);
    case COMM_REDUCE_SCATTER:
        return ring_time(hw, HW_REDUCE_SCATTER, pl, n - 1, pl.n_nodes - 1.0, bytes * (n - 1) / n, bytes);
    case COMM_BROADCAST:
        return ring_time(hw, HW_ALL_GATHER, pl, n - 1, pl.n_nodes - 1.0, bytes, bytes);
    case COMM_SEND:
        return send_time(hw, bytes, pl);
    case COMM_RECV:
        return 0;
    default:
        DIE("sim_collective_time: unknown kind %d", (int)kind);
    }
}
