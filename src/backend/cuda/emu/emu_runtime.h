// emu_runtime.h — the CUDA runtime API of the CPU emulator (emu_cuda.h), in the part that C
// code uses too: types and functions with C linkage, so that the C files of the engine that
// call CUDA under BOOST_CUDA (src/parallel/gpu_setup.c) compile against the emulator and
// link with it (the emulated build of build/train: mk/cuda.mk, tests/emu/cuda_emu_train.sh).
// Included by include/cuda_runtime.h in C, and by emu_cuda.h in C++.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9, cudaErrorInvalidDevicePointer = 17, cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorIllegalAddress = 700, cudaErrorNotReady = 600, cudaErrorLaunchFailure = 719,
} cudaError_t;
typedef enum { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 } cudaMemcpyKind;
typedef enum { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 } cudaFuncAttribute;
typedef enum { cudaDevAttrClockRate = 13, cudaDevAttrMultiProcessorCount = 16, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 } cudaDeviceAttr;
enum { cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2 };
typedef struct CUstream_st *cudaStream_t;   // emu_cuda.cpp: a queue and its worker thread
typedef struct CUevent_st *cudaEvent_t;
typedef struct { char bytes[16]; } cudaUUID_t;
struct cudaDeviceProp { char name[256]; int major, minor, multiProcessorCount; size_t totalGlobalMem; cudaUUID_t uuid; };

const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaDriverGetVersion(int *v);    // the emulator: the CUDA version this build is written for
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t n);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemGetInfo(size_t *free_, size_t *total);
cudaError_t cudaMemset(void *p, int v, size_t n);
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s);
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t cudaEventDestroy(cudaEvent_t e);

#ifdef __cplusplus
}
#endif
