"""Tools that prove generated CUDA code without a GPU: the CPU emulator (``cuda_emu``: g++
against a CUDA-compatible header, and ``fakecupy``, a CuPy stand-in) and the NVRTC compile
check (``nvrtc``). Tests and benchmarks use them; compiled programs never do."""
