// collective.c — α-β time of a collective on the link its group's placement uses (sim.h).
// The per-step latency and the bandwidth of a ring are those of its slowest link: a ring
// that leaves the node runs every step at the inter-node link's latency and bandwidth.
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
    CHECK(size >= 1 && size <= 4096, "sim_group_placement: group of %d ranks", size);
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

// base + steps·hop + bytes·factor/busbw with the link's large-message costs, or with its
// small-message protocol when that is faster.
static double alpha_beta(const HwLink *l, HwColl k, int n, double steps, double bytes_on_bus) {
    const HwCollCost *c = &l->coll[k];
    double bw = hw_busbw(c, n);
    double t = c->base_s + steps * c->hop_s + bytes_on_bus / bw;
    if (l->has_ll) {
        double t_ll = l->ll_base_s + steps * l->ll_hop_s + bytes_on_bus / (bw * l->ll_bw_fraction);
        if (t_ll < t) t = t_ll;
    }
    return t;
}

double sim_all_reduce_ring(const HwProfile *hw, double bytes, SimPlacement pl) {
    if (pl.n <= 1) return 0;
    double n = pl.n;
    return alpha_beta(link_for(hw, pl), HW_ALL_REDUCE, pl.n, 2 * (n - 1), bytes * 2 * (n - 1) / n);
}

// Pipelined tree (a chain inside each node, a binary tree across nodes): reduce up, then
// broadcast down; the busiest rank moves 2S (NCCL's tree: algbw = busbw / 2).
double sim_all_reduce_tree(const HwProfile *hw, double bytes, SimPlacement pl) {
    if (pl.n <= 1) return 0;
    const HwLink *intra = pl.per_node > 1 ? &hw->link[HW_INTRA] : NULL, *bott = link_for(hw, pl);
    CHECK(!intra || intra->present, "profile %s has no intra-node link", hw->name);
    double lat = bott->coll[HW_ALL_REDUCE].base_s;
    if (intra) lat += 2.0 * (pl.per_node - 1) * intra->coll[HW_ALL_REDUCE].hop_s;
    if (pl.n_nodes > 1) lat += 2.0 * ceil(log2(pl.n_nodes)) * hw->link[HW_INTER].coll[HW_ALL_REDUCE].hop_s;
    return lat + 2 * bytes / hw_busbw(&bott->coll[HW_ALL_REDUCE], pl.n);
}

double sim_collective_time(const HwProfile *hw, CommKind kind, double bytes, SimPlacement pl) {
    if (pl.n <= 1) return 0;
    double n = pl.n;
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
        return alpha_beta(link_for(hw, pl), HW_ALL_GATHER, pl.n, n - 1, bytes * (n - 1) / n);
    case COMM_REDUCE_SCATTER:
        return alpha_beta(link_for(hw, pl), HW_REDUCE_SCATTER, pl.n, n - 1, bytes * (n - 1) / n);
    case COMM_BROADCAST:
        return alpha_beta(link_for(hw, pl), HW_ALL_GATHER, pl.n, n - 1, bytes);
    case COMM_SEND:
        return alpha_beta(link_for(hw, pl), HW_P2P, 2, 1, bytes);
    case COMM_RECV:
        return 0;
    default:
        DIE("sim_collective_time: unknown kind %d", (int)kind);
    }
}
