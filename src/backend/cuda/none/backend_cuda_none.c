// backend_cuda_none.c — the CUDA entry points of a build without CUDA (CUDA=0, or no nvcc
// found; mk/cuda.mk links this file instead of src/backend/cuda/*.cu). There is no CUDA back
// end to make: backend_cuda() returns NULL and backend_cuda_available() 0, both with the
// reason, so that a GPU test prints "SKIP name: built without CUDA (CUDA=0 or no nvcc)".
// The accessors below need a Backend that backend_cuda() made, so reaching one is a bug.
//
// It lives in its own directory so that no wildcard over src/*/*.c or src/*/*/*.c can pick
// it up next to the CUDA objects (an archive would then hold two backend_cuda's).
#include <stdio.h>
#include "../cuda_backend.h"
#include "../../../core/check.h"

#define NO_CUDA_REASON "built without CUDA (CUDA=0 or no nvcc)"

static void say_why(char *why, size_t why_len) {
    if (why && why_len) snprintf(why, why_len, "%s", NO_CUDA_REASON);
}

Backend *backend_cuda(DType dtype, int device, char *why, size_t why_len) {
    (void)dtype; (void)device;
    say_why(why, why_len);
    return NULL;
}

int backend_cuda_available(char *why, size_t why_len) {
    say_why(why, why_len);
    return 0;
}

// No CUDA Backend exists in this build; the callers below were handed something else.
int backend_cuda_device(const Backend *b) { DIE("backend_cuda_device(%s): %s", b ? b->name : "NULL", NO_CUDA_REASON); }
const char *backend_cuda_device_name(const Backend *b) { DIE("backend_cuda_device_name(%s): %s", b ? b->name : "NULL", NO_CUDA_REASON); }
void *backend_cuda_stream(const Backend *b) { DIE("backend_cuda_stream(%s): %s", b ? b->name : "NULL", NO_CUDA_REASON); }
void backend_cuda_free(Backend *b) { DIE("backend_cuda_free(%s): %s", b ? b->name : "NULL", NO_CUDA_REASON); }
void backend_cuda_timer_start(Backend *b) { DIE("backend_cuda_timer_start(%s): %s", b ? b->name : "NULL", NO_CUDA_REASON); }
double backend_cuda_timer_stop(Backend *b) { DIE("backend_cuda_timer_stop(%s): %s", b ? b->name : "NULL", NO_CUDA_REASON); }
