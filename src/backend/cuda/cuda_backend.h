// cuda_backend.h — what the CUDA back end exposes beyond the op table (backend.h), for the
// NCCL communication back end and the tools: its device and its compute stream. Plain C;
// the stream is returned as void* (a cudaStream_t) so that C files need no CUDA header.
#pragma once
#include "../backend.h"

// The CUDA device index b runs on (b made by backend_cuda).
int backend_cuda_device(const Backend *b);
// The stream every op of b is queued on (cudaStream_t). Collectives on b's buffers must be
// ordered on it (NCCL: pass it to ncclAllReduce etc.).
void *backend_cuda_stream(const Backend *b);
