// no_cuda.c — backend_cuda() in a build without the CUDA back end (CUDA=0, or no nvcc when
// the engine was built). When the CUDA back end is built, the Makefile defines BOOST_CUDA
// for every C file and src/backend/cuda/ provides these functions instead.
#ifndef BOOST_CUDA
#include <stdio.h>
#include "backend.h"

static const char NO_CUDA[] = "built without CUDA (CUDA=0 or no nvcc when boost-c was built)";

Backend *backend_cuda(DType dtype, int device, char *why, size_t why_len) {
    (void)dtype; (void)device;
    if (why) snprintf(why, why_len, "%s", NO_CUDA);
    return NULL;
}
int backend_cuda_available(char *why, size_t why_len) {
    if (why) snprintf(why, why_len, "%s", NO_CUDA);
    return 0;
}
#endif
