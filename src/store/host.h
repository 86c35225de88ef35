// host.h — the provenance of a result: which machine, process, compiler, build flags,
// libraries and git commit produced it. Recorded with every run and launch
// (docs/database.md); collected once per process, never per step.
#pragma once
#include <stddef.h>

typedef struct {
    char host[256];              // gethostname ("unknown" if it fails)
    int pid;
    char cpu_model[256];         // /proc/cpuinfo model name + " (N cores)"
    char gpu_model[256];         // NVIDIA driver's model names, "; "-separated; "none" without
    char compiler[256];          // "gcc 12.2.0", "clang ..."
    char cflags[512];            // the build's CFLAGS (-DBOOST_CFLAGS) or "(derived) ..." from macros
    char library_versions[1024]; // JSON: {"openblas":..,"hdf5":..,"sqlite":..,"libfyaml":..,"mpi":..}
    char git_commit[64];         // `git rev-parse HEAD` in the working directory; "unknown" outside one
    int git_dirty;               // 1: `git status --porcelain` printed something; -1: unknown
} HostFacts;

// Fill every field (runs git in the current directory). MPI need not be initialised.
void host_facts(HostFacts *h);
// This machine's name ("unknown" if gethostname fails), NUL-terminated.
void host_name(char *buf, size_t n);
// The 1-minute load average (what else ran while a launch measured), -1 if unknown.
double host_load_average(void);
