// stub for the CUDA emulation harness: everything lives in ppto_emu.h
#include "../ppto_emu.h"
