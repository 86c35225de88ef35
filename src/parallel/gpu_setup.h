// gpu_setup.h — where a process runs: was it started by an MPI launcher, which GPU does
// this rank take, and how do its collectives travel (docs/gpu.md).
//
//   one GPU per rank   local rank (its index among the ranks of its node) → device
//                      local_rank % visible devices; more ranks than devices on a node
//                      means ranks share a device
//   communication      NCCL when every rank has a GPU of its own (comm_use_nccl checks it
//                      over the whole world), else the MPI back end with device↔host
//                      staging through page-locked buffers; BOOST_COMM=mpi forces the
//                      latter (to test the staging path on a machine with several GPUs)
//   page-locked host   gpu_host_alloc: the staging buffers of the communication and of
//                      the batches (cudaMallocHost; plain malloc without a CUDA device)
//
// The caller (the trainer) calls, in this order:
//   GpuPlacement gp; gpu_place(&gp);                      after MPI_Init, or without MPI
//   Backend *b = backend_cuda(dtype, gp.device, why, n);  the CUDA back end on that device
//   gpu_setup(&comm, b, &gp);                             the Comm's buffers live on b
#pragma once
#include <stdio.h>
#include "comm.h"
struct Backend;   // backend/backend.h

// 1 if an MPI launcher started this process (mpirun/mpiexec of Open MPI or MPICH, srun
// with PMI or PMIx): its environment variables say so. A process without one and with
// tp·pp·dp = 1 runs without MPI_Init (the single-process grid, comm_init_virtual(1,1,1)).
int gpu_launched_by_mpi(void);

typedef struct {
    int local_rank, local_ranks;   // among the ranks of this node (MPI's shared-memory split)
    int n_devices;                 // CUDA devices this process sees (0: none, or no CUDA build)
    int device;                    // the one this rank uses (-1: none)
    int shares_device;             // more ranks on this node than devices: some share one
    int nccl;                      // gpu_setup chose NCCL (else MPI with staging)
    char comm_note[320];           // why MPI with staging was chosen ("" when NCCL)
} GpuPlacement;

// This rank's index among the ranks of its node and their number: from MPI when it is
// initialised (MPI_Comm_split_type shared), else from the launcher's variables
// (core/env.h env_local_rank), else 0 of 1.
void gpu_local_rank(int *local_rank, int *local_ranks);
// Is an NVIDIA GPU attached to this host, whatever the driver and the libraries can do with it:
// its device nodes (/dev/nvidia0, ...) or the kernel module's list (/proc/driver/nvidia/gpus/*).
// 1 (and what showed it in what), or 0. BOOST_GPU_ASSUME_DEVICE=1 answers 1: the GPU checks'
// failure paths (a device without its libraries or driver) tried on a machine without one.
int gpu_nvidia_present(char *what, size_t n);
// The visible CUDA devices (0 when there are none, the driver is missing or too old, or the
// build has no CUDA; why then says which, with the fix where there is one).
int gpu_device_count(char *why, size_t why_len);
// "NVIDIA H200, sm_90, 139.8 GiB" for a visible device (or the reason it cannot be read).
void gpu_device_describe(int device, char *out, size_t n);
// A visible device's memory in bytes as the driver reports it (its total, without creating a
// context), and its name into name[n] (may be NULL); 0 when it cannot be read or there is no CUDA.
double gpu_device_memory(int device, char *name, size_t n);
// Fill p: local rank, devices, this rank's device. Returns 0, or 1 and a reason in why
// when there is no device to take (the caller decides: error or skip).
int gpu_place(GpuPlacement *p, char *why, size_t why_len);
// The Comm's buffers live on back end b from now on; NCCL if every rank has its own GPU
// (and BOOST_COMM is not "mpi"), else the MPI back end stages them through page-locked
// host memory. Collective over the world when MPI is initialised. Records the choice in p.
void gpu_setup(Comm *c, struct Backend *b, GpuPlacement *p);
// One line for the run's log: "gpu: rank 0 (local 0 of 2) on device 0 of 1 (shared); comm: mpi (...)".
void gpu_placement_print(const GpuPlacement *p, const Comm *c, FILE *f);

// Page-locked host memory (cudaMallocHost) for staging; plain malloc when no CUDA device
// is present. Zeroed? No. Never NULL (dies). Free with gpu_host_free.
void *gpu_host_alloc(size_t bytes);
void gpu_host_free(void *p);
