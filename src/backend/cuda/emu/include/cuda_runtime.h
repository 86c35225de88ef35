// cuda_runtime.h of the CPU emulator (../emu_cuda.h): shadows the CUDA header of that name.
// C code gets the runtime API with C linkage (../emu_runtime.h); C++ the whole emulator.
#pragma once
#ifdef __cplusplus
#include "../emu_cuda.h"
#else
#include "../emu_runtime.h"
#endif
