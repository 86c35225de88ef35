// cudnn_attention.h — cuDNN's fused scaled-dot-product attention (its flash-attention
// engines), forward and backward, causal, grouped-query, bf16: a plain C interface to
// cudnn_attention.cu, which alone knows cuDNN (as llm.c's cudnn_att.cpp). The CUDA back
// end's attention ops (cuda_attention.cu) call it and fall back to their own kernels when it
// refuses (docs/gpu.md, "Attention: cuDNN or the flash kernel").
//
// cuDNN is loaded at run time (dlopen of libcudnn.so.9), so a binary starts, and falls back,
// on a machine without cuDNN. A build without nvcc (the CPU emulator) has no cuDNN at all:
// cudnn_att_available() says so and the other calls refuse.
//
// Layouts are the op table's: q, out, dq [B,T,H,hd]; k, v, dk, dv [B,T,Hkv,hd] (bf16);
// lse [B,H,T] fp32, the natural log-sum-exp of each row of scaled, masked scores (the same
// quantity the flash kernel saves, so either backward can follow either forward). Scores
// are scaled by 1/sqrt(hd); key j is visible to query i when j <= i.
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

// 1 if libcudnn.so.9 loads, is version 9 or newer and makes a handle on the current device;
// else 0 with the reason in why. The answer is cached (the library is loaded once).
int cudnn_att_available(char *why, size_t why_len);
// "9.19.0" or "" when not loaded.
const char *cudnn_att_version(void);

// What cuDNN's fused attention needs of a node, checked without a device (gpu_probe, the node
// self-test): libcudnn.so.9 loads (its version and file), each engine library beside it opens
// (graph, heuristic, precompiled and runtime-compiled engines), and nvrtc — which the
// runtime-compiled engines load — compiles a kernel. One line per library into report
// ("  cuDNN 9.19.0 /path/libcudnn.so.9", ...). Returns 0 when everything loads, else 1 with the
// first missing piece and the fix in why. A library that fails only for want of the NVIDIA
// driver's libcuda.so.1 on a machine without the driver is reported, not counted.
int cudnn_att_libraries(char *report, size_t report_len, char *why, size_t why_len);

// Queue the attention on `stream` (a cudaStream_t) of the current device. Returns 0 when
// queued; nonzero when cuDNN refuses the shape (no engine, a graph it does not support, not
// loaded), with the reason in why — then nothing was written and the caller falls back.
// A graph and its execution plan are built once per shape and device and cached; a refusal
// is cached too. A failure while executing a plan that cuDNN accepted is fatal (die).
int cudnn_att_forward(void *stream, void *out, float *lse, const void *q, const void *k, const void *v,
                      int B, int T, int H, int Hkv, int hd, char *why, size_t why_len);
// Writes (does not accumulate) dq, dk, dv from dout, out, q, k, v and the forward's lse.
int cudnn_att_backward(void *stream, void *dq, void *dk, void *dv, const void *dout, const void *out,
                       const void *q, const void *k, const void *v, const float *lse,
                       int B, int T, int H, int Hkv, int hd, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
