"""Hand-written CUDA kernels for the emulator and NVRTC tests (the same text goes to both).

Each source is (text, name expressions); `ALL` lists them for the NVRTC test. They are written
as an emitter would write them: no host code, NVRTC-compatible (no INFINITY, <cmath> or printf).
"""

# elementwise map (grid-stride loop, 64-bit indices), block reduction in shared memory,
# warp-shuffle reductions, float4 loads, dynamic shared memory
BASIC = r"""
#ifndef PPTO_DYN_SMEM
#define PPTO_DYN_SMEM(T, name) extern __shared__ T name[]
#endif

extern "C" __global__ void map_fma(const float* __restrict__ a, const float* __restrict__ b,
                                   float* __restrict__ out, long long n) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = a[i] * b[i] + sinf(a[i]);
}

// one partial sum per block: a tree in shared memory
extern "C" __global__ void __launch_bounds__(256)
block_sum(const float* __restrict__ x, float* __restrict__ partial, long long n) {
    __shared__ float s[256];
    unsigned int tid = threadIdx.x;
    float v = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + tid; i < n;
         i += (long long)blockDim.x * gridDim.x)
        v += x[i];
    s[tid] = v;
    __syncthreads();
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

// every lane gets its warp's sum through __shfl_xor_sync; lane 0 through __shfl_down_sync
extern "C" __global__ void warp_sums(const double* __restrict__ x, double* __restrict__ xor_out,
                                     double* __restrict__ down_out) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a = x[i], b = x[i];
    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
    for (int o = 16; o > 0; o >>= 1) b += __shfl_down_sync(0xffffffffu, b, o);
    xor_out[i] = a;
    if ((threadIdx.x & 31) == 0) down_out[i >> 5] = b;
}

// __shfl_sync broadcast and votes within sub-warp widths
extern "C" __global__ void warp_misc(const int* __restrict__ x, int* __restrict__ bcast,
                                     unsigned int* __restrict__ ballot, int* __restrict__ seg_max) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    bcast[i] = __shfl_sync(0xffffffffu, v, 3);  // lane 3's value to every lane
    unsigned int b = __ballot_sync(0xffffffffu, v > 0);
    if ((threadIdx.x & 31) == 0) ballot[i >> 5] = b;
    int m = v;  // max over segments of 8 lanes
    for (int o = 4; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o, 8));
    seg_max[i] = m;
}

// block votes, warp votes, warp reductions, shifts within 16-lane segments
extern "C" __global__ void votes(const int* __restrict__ x, int* __restrict__ out) {
    unsigned int t = threadIdx.x;
    int v = x[blockIdx.x * blockDim.x + t];
    int* o = out + 8 * (blockIdx.x * blockDim.x + t);
    o[0] = __syncthreads_count(v > 0);
    o[1] = __syncthreads_and(v > -5);
    o[2] = __syncthreads_or(v == 5);
    o[3] = __any_sync(0xffffffffu, v == 5);
    o[4] = __all_sync(0xffffffffu, v > -5);
    o[5] = __reduce_add_sync(0xffffffffu, v);
    o[6] = __shfl_up_sync(0xffffffffu, v, 3, 16);
    o[7] = __shfl_down_sync(0xffffffffu, v, 3, 16);
}

// float4 loads and stores through reinterpret_cast (n4 = number of float4)
extern "C" __global__ void scale4(const float* __restrict__ x, float* __restrict__ y, float s,
                                  long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = __ldg(reinterpret_cast<const float4*>(x) + i);
        v.x *= s;
        v.y *= s;
        v.z *= s;
        v.w = v.w * s + 1.0f;
        reinterpret_cast<float4*>(y)[i] = v;
    }
}

// every thread of a 3-d grid of 3-d blocks writes its coordinates
extern "C" __global__ void coords(int* __restrict__ out) {
    unsigned int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int* o = out + 6 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
    o[0] = blockIdx.x;
    o[1] = blockIdx.y;
    o[2] = blockIdx.z;
    o[3] = threadIdx.x;
    o[4] = threadIdx.y;
    o[5] = threadIdx.z;
}

// dynamic shared memory: reverse each block's chunk; `stale` gets what was there before writing
extern "C" __global__ void dyn_reverse(const float* __restrict__ x, float* __restrict__ y,
                                       float* __restrict__ stale) {
    PPTO_DYN_SMEM(float, smem);
    unsigned int t = threadIdx.x, n = blockDim.x, base = blockIdx.x * blockDim.x;
    stale[base + t] = smem[t];
    __syncthreads();
    smem[t] = x[base + t];
    __syncthreads();
    y[base + t] = smem[n - 1 - t];
}
"""
BASIC_NAMES = (
    *("map_fma", "block_sum", "warp_sums", "warp_misc", "scale4", "coords", "votes"),
    "dyn_reverse",
)

# templates instantiated by name expression
TEMPLATES = r"""
template <typename T>
__device__ __forceinline__ T twice(T v) { return v + v; }

template <typename T>
__global__ void axpy(T alpha, const T* __restrict__ x, T* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i] + twice(y[i]);
}
"""
TEMPLATE_NAMES = ("axpy<float>", "axpy<double>")

# one block a row: max and sum through warp shuffles and shared memory
SOFTMAX = r"""
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(1024)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, long long ncols) {
    __shared__ float red[32];
    const float* row = x + blockIdx.x * ncols;
    float* out = y + blockIdx.x * ncols;
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
    float m = __int_as_float(0xff800000);  // -inf
    for (long long i = tid; i < ncols; i += blockDim.x) m = fmaxf(m, row[i]);
    m = warp_max(m);
    if (lane == 0) red[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = warp_max(lane < nwarps ? red[lane] : __int_as_float(0xff800000));
        if (lane == 0) red[0] = m;
    }
    __syncthreads();
    m = red[0];
    __syncthreads();
    float s = 0.0f;
    for (long long i = tid; i < ncols; i += blockDim.x) s += __expf(row[i] - m);
    s = warp_sum(s);
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum(lane < nwarps ? red[lane] : 0.0f);
        if (lane == 0) red[0] = s;
    }
    __syncthreads();
    float inv = __fdividef(1.0f, red[0]);
    for (long long i = tid; i < ncols; i += blockDim.x) out[i] = __expf(row[i] - m) * inv;
}
"""
SOFTMAX_NAMES = ("softmax_rows",)

# inclusive scan: each block scans its chunk (__shfl_up_sync within warps, warp totals in shared
# memory) and writes its total; the totals are scanned the same way, then added as carries
SCAN = r"""
__device__ __forceinline__ float warp_scan(float v) {
    unsigned int lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) {
        float t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

extern "C" __global__ void scan_blocks(const float* __restrict__ x, float* __restrict__ y,
                                       float* __restrict__ totals, long long n) {
    __shared__ float warp_total[32];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = warp_scan(i < n ? x[i] : 0.0f);
    if (lane == 31) warp_total[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = warp_scan(lane < (blockDim.x >> 5) ? warp_total[lane] : 0.0f);
        warp_total[lane] = t;
    }
    __syncthreads();
    if (warp > 0) v += warp_total[warp - 1];
    if (i < n) y[i] = v;
    if (threadIdx.x == blockDim.x - 1) totals[blockIdx.x] = v;
}

extern "C" __global__ void add_carry(float* __restrict__ y, const float* __restrict__ scanned,
                                     long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x > 0 && i < n) y[i] += scanned[blockIdx.x - 1];
}
"""
SCAN_NAMES = ("scan_blocks", "add_carry")

# load, convert, store: __half and __nv_bfloat16
HALF = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void to_half(const float* __restrict__ x, __half* __restrict__ h,
                                   float* __restrict__ back, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half v = __float2half(x[i]);
        h[i] = v;
        back[i] = __half2float(v);
    }
}

extern "C" __global__ void to_bf16(const float* __restrict__ x, __nv_bfloat16* __restrict__ b,
                                   float* __restrict__ back, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __nv_bfloat16 v = __float2bfloat16(x[i]);
        b[i] = v;
        back[i] = __bfloat162float(v);
    }
}

extern "C" __global__ void half_axpy(float a, const __half* __restrict__ x,
                                     __half* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(a * __half2float(x[i]) + __half2float(y[i]));
}
"""
HALF_NAMES = ("to_half", "to_bf16", "half_axpy")

# atomics: a weighted histogram (float atomicAdd) in shared memory flushed to global memory,
# counts (unsigned), the largest bin (atomicMax) and a float max through an atomicCAS loop
ATOMICS = r"""
__device__ float atomic_max_float(float* addr, float v) {
    int* a = (int*)addr;
    int old = *a, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v) break;
        old = atomicCAS(a, assumed, __float_as_int(v));
    } while (assumed != old);
    return __int_as_float(old);
}

extern "C" __global__ void histogram(const int* __restrict__ bins, const float* __restrict__ w,
                                     float* __restrict__ hist, unsigned int* __restrict__ counts,
                                     int* __restrict__ max_bin, float* __restrict__ max_w,
                                     long long n, int nbins) {
    __shared__ float local[64];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0.0f;
    __syncthreads();
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        int b = bins[i];
        atomicAdd(&local[b], w[i]);
        atomicAdd(&counts[b], 1u);
        atomicMax(max_bin, b);
        atomic_max_float(max_w, w[i]);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&hist[b], local[b]);
}
"""
ATOMICS_NAMES = ("histogram",)

# subtract each block's mean; the mean goes through shared memory. center<false> lacks the
# __syncthreads() between thread 0 writing the mean and the others reading it
CENTER = r"""
template <bool kSync>
__global__ void center(const float* __restrict__ x, float* __restrict__ y) {
    __shared__ float s[256];
    __shared__ float mean;
    unsigned int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    float v = x[i];
    s[t] = v;
    __syncthreads();
    for (unsigned int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) mean = s[0] / blockDim.x;
    if (kSync) __syncthreads();
    y[i] = v - mean;
}
"""
CENTER_NAMES = ("center<true>", "center<false>")

# kernels that fail: a barrier that a quarter of the threads never reach, a shuffle that half a
# warp never reaches, a null pointer store, an endless loop
FAULTS = r"""
extern "C" __global__ void early_exit(float* y) {
    __shared__ float s[256];
    if (threadIdx.x < 64) return;
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    y[threadIdx.x] = s[threadIdx.x ^ 1];
}

extern "C" __global__ void half_warp_shuffle(float* y) {
    float v = y[threadIdx.x];
    if ((threadIdx.x & 31) < 16) v += __shfl_xor_sync(0xffffffffu, v, 1);
    y[threadIdx.x] = v;
}

extern "C" __global__ void store_to(float* p) {
    p[threadIdx.x] = 1.0f;
}

extern "C" __global__ void spin(const volatile int* flag) {
    while (*flag == 0) {
    }
}
"""
FAULTS_NAMES = ("early_exit", "half_warp_shuffle", "store_to", "spin")

ALL = {
    "basic": (BASIC, BASIC_NAMES),
    "templates": (TEMPLATES, TEMPLATE_NAMES),
    "softmax": (SOFTMAX, SOFTMAX_NAMES),
    "scan": (SCAN, SCAN_NAMES),
    "half": (HALF, HALF_NAMES),
    "atomics": (ATOMICS, ATOMICS_NAMES),
    "center": (CENTER, CENTER_NAMES),
    "faults": (FAULTS, FAULTS_NAMES),
}
