// cuda_backend.h — what the CUDA back end exposes beyond the op table (backend.h), for the
// NCCL communication back end and the tools: its device and its compute stream. Plain C;
// the stream is returned as void* (a cudaStream_t) so that C files need no CUDA header.
//
// backend_cuda() and backend_cuda_available() themselves are declared in backend.h. When the
// CUDA back end is not built (CUDA=0 or no nvcc), src/backend/no_cuda.c provides those two
// (NULL / 0 with the reason), and nothing here exists: code that calls these functions is
// compiled only where BOOST_CUDA is defined (mk/cuda.mk defines it for every C file of a
// CUDA build).
#pragma once
#include "../backend.h"

// The CUDA device index b runs on (b made by backend_cuda).
int backend_cuda_device(const Backend *b);
// The device's name ("NVIDIA H200", ...), for reports.
const char *backend_cuda_device_name(const Backend *b);
// The dense peak of b's device for b's compute dtype, in GFLOP/s, for the MFU of a GPU run
// (docs/gpu.md, "MFU on a GPU"): BOOST_GPU_PEAK_TFLOPS when set (a measured or quoted peak,
// TFLOP/s), else the datasheet's dense figure for the device's part (cuda_peaks.h: its name,
// SM count and clock; bf16; fp32 with TF32 when b->tf32, else exact fp32), else 0 (an unknown
// device: no MFU). *source (may be NULL) says which: "BOOST_GPU_PEAK_TFLOPS", the part
// ("H100 NVL") or "unknown device".
double backend_cuda_peak_gflops(const Backend *b, const char **source);
// The stream every op of b is queued on (cudaStream_t). Collectives on b's buffers must be
// ordered on it (NCCL: pass it to ncclAllReduce etc.).
void *backend_cuda_stream(const Backend *b);

// Device time on b's stream, measured with CUDA events: start records an event; stop
// records a second one, waits for it and returns the milliseconds between the two.
void backend_cuda_timer_start(Backend *b);
double backend_cuda_timer_stop(Backend *b);

// Which attention the back end runs (docs/gpu.md, "Attention: cuDNN or the flash kernel"):
//   auto   cuDNN's fused SDPA (cudnn_attention.h) for bf16 where cuDNN loads and accepts the
//          shape, else the hand-written flash kernel, with a note saying why (once, rank 0)
//   cudnn  cuDNN's, or an error naming the reason
//   flash  the hand-written kernel (cuda_attention.cu), the emulator-tested reference
// The values are those of the manifest key train.attention. The default is auto, or the
// environment's BOOST_CUDA_ATTENTION (auto|cudnn|flash) when set.
typedef enum { CUDA_ATTN_AUTO = 0, CUDA_ATTN_CUDNN = 1, CUDA_ATTN_FLASH = 2 } CudaAttention;
// Sets the mode; returns 0, or nonzero with the reason when cudnn is asked for and cannot
// serve this back end (fp32 compute, cuDNN not loadable).
int backend_cuda_set_attention(Backend *b, int mode, char *why, size_t why_len);
// What b's last attention call ran: "cudnn", "flash", or "" before any.
const char *backend_cuda_attention_used(const Backend *b);
