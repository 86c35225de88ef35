// grid.c — the TP × PP × DP process grid: validation, rank coordinates, communicators.
// Layout (Megatron): TP varies fastest (ranks of a TP group are neighbours, i.e. inside a
// node), then DP, then PP: world_rank = tp_rank + tp·(dp_rank + dp·pp_rank).
#include <limits.h>
#include "comm.h"

int grid_check(int tp, int pp, int dp, int world, char *msg, size_t n) {
    if (msg && n) msg[0] = 0;
    if (tp < 1 || pp < 1 || dp < 1) {
        if (msg) snprintf(msg, n, "the process grid tp×pp×dp = %d×%d×%d has a size below 1: "
                          "tp, pp and dp must each be at least 1", tp, pp, dp);
        return 1;
    }
    long long need = (long long)tp * pp * dp;
    if (need > (1 << 24)) {
        if (msg) snprintf(msg, n, "the process grid tp×pp×dp = %d×%d×%d = %lld is implausibly large "
                          "(more than %d ranks)", tp, pp, dp, need, 1 << 24);
        return 1;
    }
    if (world > 0 && need != world) {
        if (msg) snprintf(msg, n, "the process grid tp×pp×dp = %d×%d×%d = %lld needs %lld ranks, "
                          "but mpirun started %d", tp, pp, dp, need, need, world);
        return 1;
    }
    return 0;
}

void grid_coords(int tp, int dp, int world_rank, int *tp_rank, int *dp_rank, int *pp_rank) {
    *tp_rank = world_rank % tp;
    *dp_rank = (world_rank / tp) % dp;
    *pp_rank = world_rank / (tp * dp);
}

// Everything but the communicators; rank given.
static void grid_fill(Comm *c, int tp, int pp, int dp, int rank) {
    c->tp = tp; c->pp = pp; c->dp = dp; c->world = tp * pp * dp; c->rank = rank;
    grid_coords(tp, dp, rank, &c->tp_rank, &c->dp_rank, &c->pp_rank);
    c->pp_prev = c->pp_rank > 0 ? grid_world_rank(tp, dp, c->tp_rank, c->dp_rank, c->pp_rank - 1) : -1;
    c->pp_next = c->pp_rank < pp - 1 ? grid_world_rank(tp, dp, c->tp_rank, c->dp_rank, c->pp_rank + 1) : -1;
    c->size[GROUP_TP] = tp;    c->grank[GROUP_TP] = c->tp_rank;
    c->size[GROUP_DP] = dp;    c->grank[GROUP_DP] = c->dp_rank;
    c->size[GROUP_PP] = pp;    c->grank[GROUP_PP] = c->pp_rank;
    c->size[GROUP_WORLD] = c->world; c->grank[GROUP_WORLD] = rank;
    c->account_float_bytes = (int)sizeof(float);
    c->mpi_max_count = INT_MAX;
    for (int g = 0; g < GROUP_COUNT; g++) c->mpi[g] = c->mpi_async[g] = MPI_COMM_NULL;
    c->host_backend = &comm_backend_mpi_host;
    c->overlap = 1;   // started collectives overlap the compute (parallel.overlap)
    comm_set_n_layers(c, 0);
}

void comm_init(Comm *c, int tp, int pp, int dp) {
    memset(c, 0, sizeof *c);
    int inited = 0;
    CHECK_MPI(MPI_Initialized(&inited));
    CHECK(inited, "comm_init: MPI_Init has not been called (the program initialises MPI)");
    // Errors come back as codes to CHECK_MPI instead of MPI's default abort.
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int world = 0, rank = 0;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    char msg[512];
    if (grid_check(tp, pp, dp, world, msg, sizeof msg)) {
        // Bad input (exit 2). Every rank sees the same sizes and takes this path. Rank 0
        // prints die_input's "error: ... / hint: ..." lines; the barrier keeps the others from
        // exiting first (mpirun would abort the job and could cut rank 0 off before it
        // prints); a finalised exit lets mpirun return 2 at once. (No die hook runs: nothing
        // owns results before the grid exists.)
        if (rank == 0) {
            char hint[512];
            long long need = (long long)tp * pp * dp;
            if (tp >= 1 && pp >= 1 && dp >= 1)
                snprintf(hint, sizeof hint, "launch tp·pp·dp ranks: mpirun -np %lld [--oversubscribe] "
                         "<program> ... (Slurm: srun -n %lld --mpi=pmix ...), or choose tp, pp, dp with "
                         "tp·pp·dp = %d", need, need, world);
            else
                snprintf(hint, sizeof hint, "set tp, pp and dp to positive integers whose product is "
                         "the number of ranks (%d here)", world);
            fflush(stdout);
            fprintf(stderr, "error: %s\nhint: %s\n", msg, hint);
            fflush(stderr);
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Finalize());
        exit(EXIT_BAD_INPUT);
    }
    grid_fill(c, tp, pp, dp, rank);
    c->backend = &comm_backend_mpi;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi[GROUP_WORLD]));
    CHECK_MPI(MPI_Comm_set_errhandler(c->mpi[GROUP_WORLD], MPI_ERRORS_RETURN));
    // Split colours: the coordinates the group shares; key: the coordinate that varies.
    CHECK_MPI(MPI_Comm_split(c->mpi[GROUP_WORLD], c->dp_rank + dp * c->pp_rank, c->tp_rank, &c->mpi[GROUP_TP]));
    CHECK_MPI(MPI_Comm_split(c->mpi[GROUP_WORLD], c->tp_rank + tp * c->pp_rank, c->dp_rank, &c->mpi[GROUP_DP]));
    CHECK_MPI(MPI_Comm_split(c->mpi[GROUP_WORLD], c->tp_rank + tp * c->dp_rank, c->pp_rank, &c->mpi[GROUP_PP]));
    for (int g = 0; g < GROUP_COUNT; g++) {
        int s = 0, r = 0;
        CHECK_MPI(MPI_Comm_size(c->mpi[g], &s));
        CHECK_MPI(MPI_Comm_rank(c->mpi[g], &r));
        CHECK(s == c->size[g] && r == c->grank[g], "comm_init: %s group has size %d rank %d, expected %d %d",
              comm_group_name((CommGroup)g), s, r, c->size[g], c->grank[g]);
        if (s > 1) CHECK_MPI(MPI_Comm_dup(c->mpi[g], &c->mpi_async[g]));   // the started calls' messages
    }
}

void comm_init_virtual_at(Comm *c, int tp, int pp, int dp, int world_rank) {
    memset(c, 0, sizeof *c);
    char msg[512];
    if (grid_check(tp, pp, dp, 0, msg, sizeof msg)) die_input("%s", msg);
    CHECK(world_rank >= 0 && world_rank < tp * pp * dp, "comm_init_virtual_at: rank %d outside a grid of %d",
          world_rank, tp * pp * dp);
    grid_fill(c, tp, pp, dp, world_rank);
    c->is_virtual = 1;
    c->account_only = 1;
    c->backend = NULL;
}
void comm_init_virtual(Comm *c, int tp, int pp, int dp) { comm_init_virtual_at(c, tp, pp, dp, 0); }

Comm *comm_single(void) {
    static Comm single;   // the one single-process grid, made on first use (never freed)
    if (!single.world) comm_init_virtual(&single, 1, 1, 1);
    return &single;
}

void comm_free(Comm *c) {
    comm_detach_device(c);                                 // NCCL communicators, device-side buffers, pending timings
    int finalized = 0;
    if (!c->is_virtual) CHECK_MPI(MPI_Finalized(&finalized));
    for (int g = 0; g < GROUP_COUNT; g++) {
        if (c->mpi[g] != MPI_COMM_NULL && !finalized) CHECK_MPI(MPI_Comm_free(&c->mpi[g]));
        if (c->mpi_async[g] != MPI_COMM_NULL && !finalized) CHECK_MPI(MPI_Comm_free(&c->mpi_async[g]));
    }
    free(c->stats);
    free(c->started);
    for (int g = 0; g < GROUP_COUNT; g++) free(c->timed[g]);
    free(c->scratch);
    free(c->gbuf);
    memset(c, 0, sizeof *c);
    for (int g = 0; g < GROUP_COUNT; g++) c->mpi[g] = c->mpi_async[g] = MPI_COMM_NULL;
}

int comm_ranks_on_node(const Comm *c) {
    if (c->is_virtual) return 1;
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int n; CHECK_MPI(MPI_Comm_size(node, &n));
    CHECK_MPI(MPI_Comm_free(&node));
    return n;
}
