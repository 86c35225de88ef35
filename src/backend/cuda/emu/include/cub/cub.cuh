// cub/cub.cuh of the CPU emulator (../../emu_cuda.h): shadows the CUDA header of that name.
#pragma once
#include "../../emu_cuda.h"
