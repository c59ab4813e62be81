"""The device helpers every emitted CUDA module starts with: NumPy's scalar semantics in C++.

Kernels compute in registers with NumPy's loop types (float16 values are held as float and
rounded back to float16 after every op, as NumPy's float16 loops do); these helpers give the
ops whose C operators differ from NumPy: integer floor division and modulo (Python's signs,
and 0 for a zero divisor), float divmod (``npy_divmod``), NaN-propagating maximum and minimum,
shifts past the width, integer powers, casts (bool, float to integer), and the block
reductions (warp shuffles, then one value per warp in shared memory).

The text compiles with NVRTC (no includes besides cuda_fp16.h) and with the CPU emulation
harness (pypto/testing/cuda_emu), unchanged.
"""

PRELUDE = r"""
#include <cuda_fp16.h>
#ifndef PPTO_DYN_SMEM
#define PPTO_DYN_SMEM(T, name) extern __shared__ T name[]
#endif

#define PPTO_INF __int_as_float(0x7f800000)
#define PPTO_DINF __longlong_as_double(0x7ff0000000000000LL)

template <typename T> struct ppto_is_float { static const bool value = false; };
template <> struct ppto_is_float<float> { static const bool value = true; };
template <> struct ppto_is_float<double> { static const bool value = true; };

__device__ __forceinline__ float ppto_h(float x) { return __half2float(__float2half(x)); }

// -- integer floor division and modulo, as NumPy (Python signs; 0 for a zero divisor) ----------
template <typename T> __device__ __forceinline__ T ppto_floordiv(T a, T b) {
    if constexpr (ppto_is_float<T>::value) {
        // npy_divmod: the quotient of a - fmod(a, b), rounded to the nearest integer toward floor
        if (b == 0) return a / b;
        T mod = fmod(a, b);
        T div = (a - mod) / b;
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
        T floordiv;
        if (div != 0) {
            floordiv = floor(div);
            if (div - floordiv > (T)0.5) floordiv += 1;
        } else {
            floordiv = copysign((T)0, a / b);
        }
        return floordiv;
    } else {
        if (b == 0) return 0;
        if ((T)(-1) < 0 && b == (T)(-1)) return (T)(0 - a);  // no trap on INT_MIN / -1
        T q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
        return q;
    }
}

template <typename T> __device__ __forceinline__ T ppto_mod(T a, T b) {
    if constexpr (ppto_is_float<T>::value) {
        if (b == 0) return fmod(a, b);
        T mod = fmod(a, b);
        if (mod != 0) {
            if ((b < 0) != (mod < 0)) mod += b;
        } else {
            mod = copysign((T)0, b);
        }
        return mod;
    } else {
        if (b == 0) return 0;
        if ((T)(-1) < 0 && b == (T)(-1)) return 0;
        T r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
}

// -- NaN-propagating maximum / minimum (np.maximum: the first NaN wins) ------------------------
template <typename T> __device__ __forceinline__ T ppto_maximum(T a, T b) {
    return (a >= b || a != a) ? a : b;
}
template <typename T> __device__ __forceinline__ T ppto_minimum(T a, T b) {
    return (a <= b || a != a) ? a : b;
}
template <typename T> __device__ __forceinline__ T ppto_fmax(T a, T b) {
    return (a >= b || b != b) ? a : b;
}
template <typename T> __device__ __forceinline__ T ppto_fmin(T a, T b) {
    return (a <= b || b != b) ? a : b;
}
// NumPy's npy_logaddexp: equal operands (infinities too) give x + log(2); NaN stays NaN
template <typename T> __device__ __forceinline__ T ppto_logaddexp(T x, T y) {
    if (x == y) return x + (T)0.693147180559945309417232121458176568;
    const T d = x - y;
    if (d > 0) return x + log1p(exp(-d));
    if (d <= 0) return y + log1p(exp(d));
    return d;
}
template <typename T> __device__ __forceinline__ T ppto_logaddexp2(T x, T y) {
    const T log2e = (T)1.442695040888963407359924681001892137;  // NumPy's npy_log2_1p
    if (x == y) return x + (T)1;
    const T d = x - y;
    if (d > 0) return x + log2e * log1p(exp2(-d));
    if (d <= 0) return y + log2e * log1p(exp2(d));
    return d;
}
template <typename T> __device__ __forceinline__ T ppto_clip(T x, T lo, T hi) {
    return ppto_minimum(ppto_maximum(x, lo), hi);
}

// -- sign, abs, reciprocal, integer power ------------------------------------------------------
template <typename T> __device__ __forceinline__ T ppto_sign(T x) {
    if (x != x) return x;
    return (T)((x > 0) - (x < 0));
}
template <typename T> __device__ __forceinline__ T ppto_abs(T x) { return x < 0 ? (T)(0 - x) : x; }
__device__ __forceinline__ float ppto_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double ppto_abs(double x) { return fabs(x); }
template <typename T> __device__ __forceinline__ T ppto_reciprocal(T x) { return (T)1 / x; }
template <typename T> __device__ __forceinline__ T ppto_invert(T x) { return (T)(~x); }
__device__ __forceinline__ bool ppto_invert(bool x) { return !x; }  // NumPy: ~ of bool is not
template <typename T> __device__ __forceinline__ T ppto_ipow(T base, T exp) {
    // non-negative exponents (NumPy refuses negative ones before the launch)
    T result = 1;
    while (exp > 0) {
        if (exp & 1) result *= base;
        exp >>= 1;
        base *= base;
    }
    return result;
}

template <typename T> __device__ __forceinline__ T ppto_power(T a, T b) {
    if constexpr (ppto_is_float<T>::value) return pow(a, b);
    else return ppto_ipow(a, b);
}

// -- shifts: NumPy defines shifts by the width or more (0, or -1 for negative right shifts) ------
template <typename T> __device__ __forceinline__ T ppto_lshift(T a, T b) {
    if (b < 0 || b >= (T)(8 * sizeof(T))) return 0;
    return (T)(a << b);
}
template <typename T> __device__ __forceinline__ T ppto_rshift(T a, T b) {
    if (b < 0 || b >= (T)(8 * sizeof(T))) return a < 0 ? (T)(-1) : (T)0;
    return (T)(a >> b);
}

// -- casts (astype): bool is "not zero"; float to integer through a 64-bit integer -------------
template <typename To, typename From> __device__ __forceinline__ To ppto_cast(From x) {
    return (To)x;
}

// -- block reductions (blockDim a multiple of 32; threads without elements hold the identity):
// shuffles within each warp, then the warps' values in shared memory; the result reaches every
// thread. `scratch` holds 33 values; calls in a row are safe (the
// barriers at the start and the end keep the next call from overwriting the slots early).
#define PPTO_OP(name, expr) \
    struct name { template <typename T> __device__ T operator()(T a, T b) const { return expr; } };
PPTO_OP(ppto_sum_op, a + b)
PPTO_OP(ppto_prod_op, a * b)
PPTO_OP(ppto_max_op, ppto_maximum(a, b))
PPTO_OP(ppto_min_op, ppto_minimum(a, b))
PPTO_OP(ppto_or_op, a || b)
PPTO_OP(ppto_and_op, a && b)

// shuffles exist for 4- and 8-byte types: bool, char and short values travel as int
template <typename T> __device__ __forceinline__ T ppto_shfl_xor(T v, int o) {
    if constexpr (sizeof(T) < 4) return (T)__shfl_xor_sync(0xffffffffu, (int)v, o);
    else return __shfl_xor_sync(0xffffffffu, v, o);
}

template <typename T, typename Op>
__device__ __forceinline__ T ppto_block_reduce(T v, Op op, T* scratch) {
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned warps = (blockDim.x + 31u) >> 5;
    for (int o = 16; o > 0; o >>= 1) v = op(v, ppto_shfl_xor(v, o));
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        T r = scratch[0];
        for (unsigned w = 1; w < warps; ++w) r = op(r, scratch[w]);
        scratch[32] = r;
    }
    __syncthreads();
    T r = scratch[32];
    __syncthreads();
    return r;
}
"""

# the C++ type of each NumPy dtype in memory, and the type values are computed in
CTYPES = {
    "bool": "bool",
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short",
    "uint16": "unsigned short",
    "int32": "int",
    "uint32": "unsigned int",
    "int64": "long long",
    "uint64": "unsigned long long",
    "float16": "__half",
    "float32": "float",
    "float64": "double",
}


def ctype(dtype) -> str:
    """The C type an array of ``dtype`` holds (complex and others: UnsupportedError)."""
    if dtype.name not in CTYPES:
        from ..errors import UnsupportedError

        raise UnsupportedError(
            f"the CUDA target has no kernels for {dtype.name} values yet",
            hint="compute it on NumPy arrays (cp.asnumpy), or in a real dtype",
            code="PPT101",
        )
    return CTYPES[dtype.name]


def compute_type(dtype) -> str:
    """The C type values of ``dtype`` are computed in (float16: float)."""
    return "float" if dtype.name == "float16" else ctype(dtype)
