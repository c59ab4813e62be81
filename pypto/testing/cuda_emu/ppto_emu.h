// ppto_emu.h: run CUDA C kernels on the CPU (PyPTO's CUDA emulation harness).
//
// The emitted .cu text is compiled unchanged with
//     g++ -std=c++20 -O2 -shared -fPIC -include ppto_emu.h -I<cuda_emu/include>
// Each CUDA thread of a block is a fiber on one OS thread; fibers switch only at
// __syncthreads() and at warp intrinsics (__shfl_*_sync, votes, __syncwarp); blocks run one after
// another. Between two switch points the threads of a block run in forward, reverse or (seeded)
// random order, so a missing __syncthreads() shows up as a wrong answer in one of the orders.
// A barrier that some threads never reach is reported (not a hang). Atomics are plain
// read-modify-writes: only one fiber runs at a time. Static __shared__ arrays keep their contents
// from block to block (dynamic shared memory is refilled with 0xFF bytes at each block start).
// The scheduler is ppto_emu_rt.cpp, a library loaded (RTLD_GLOBAL) before the kernel modules; the
// Python side (loader.py) appends one launcher per kernel to the source.
#ifndef PPTO_EMU_H
#define PPTO_EMU_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#define PPTO_EMU 1
#define __CUDA_ARCH__ 900
#define PPTO_EXPORT extern "C" __attribute__((visibility("default")))

// ---- qualifiers ---------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ __attribute__((always_inline))  // no `inline`: `inline __forceinline__` is common
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
// __restrict__ is a g++ keyword already.
// dynamic shared memory: emitted code guards its CUDA spelling with #ifndef PPTO_DYN_SMEM
#define PPTO_DYN_SMEM(T, name) T* const name = reinterpret_cast<T*>(ppto_emu_pub.dyn_smem)

// ---- vector types -------------------------------------------------------------------------------
#define PPTO_VEC2(T, N, A)                                                                         \
    struct __attribute__((aligned(A))) N##2 {                                                      \
        T x, y;                                                                                    \
    };                                                                                             \
    inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define PPTO_VEC3(T, N)                                                                            \
    struct N##3 {                                                                                  \
        T x, y, z;                                                                                 \
    };                                                                                             \
    inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define PPTO_VEC4(T, N, A)                                                                         \
    struct __attribute__((aligned(A))) N##4 {                                                      \
        T x, y, z, w;                                                                              \
    };                                                                                             \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
PPTO_VEC2(float, float, 8)
PPTO_VEC3(float, float)
PPTO_VEC4(float, float, 16)
PPTO_VEC2(double, double, 16)
PPTO_VEC3(double, double)
PPTO_VEC4(double, double, 16)
PPTO_VEC2(int, int, 8)
PPTO_VEC3(int, int)
PPTO_VEC4(int, int, 16)
PPTO_VEC2(unsigned int, uint, 8)
PPTO_VEC3(unsigned int, uint)
PPTO_VEC4(unsigned int, uint, 16)
PPTO_VEC2(long long, longlong, 16)
PPTO_VEC2(unsigned long long, ulonglong, 16)
PPTO_VEC2(short, short, 4)
PPTO_VEC4(short, short, 8)
PPTO_VEC2(unsigned short, ushort, 4)
PPTO_VEC4(unsigned short, ushort, 8)
PPTO_VEC2(signed char, char, 2)
PPTO_VEC4(signed char, char, 4)
PPTO_VEC2(unsigned char, uchar, 2)
PPTO_VEC4(unsigned char, uchar, 4)
#undef PPTO_VEC2
#undef PPTO_VEC3
#undef PPTO_VEC4

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---- fp16 / bf16 --------------------------------------------------------------------------------
namespace ppto_emu {
inline unsigned short f2h_bits(float f) {  // round to nearest even; NaN -> 0x7fff as CUDA
    unsigned int x = std::bit_cast<unsigned int>(f);
    unsigned int sign = (x >> 16) & 0x8000u;
    unsigned int ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return 0x7fffu;
    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (ax < 0x38800000u)  // below 2^-14: subnormal half (exact scaling, then rint)
        return (unsigned short)(sign | (unsigned int)nearbyintf(fabsf(f) * 16777216.0f));
    ax += 0xc8000fffu + ((ax >> 13) & 1u);  // rebias exponent by -112, round half to even
    return (unsigned short)(sign | (ax >> 13));
}
inline float h2f_bits(unsigned short h) {
    unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
    unsigned int e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-08f;  // m * 2^-24, exact
        return sign ? -v : v;
    }
    if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
    return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}
inline unsigned short f2bf_bits(float f) {  // round to nearest even; NaN -> 0x7fff as CUDA
    unsigned int x = std::bit_cast<unsigned int>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
    x += 0x7fffu + ((x >> 16) & 1u);
    return (unsigned short)(x >> 16);
}
inline float bf2f_bits(unsigned short b) { return std::bit_cast<float>((unsigned int)b << 16); }
}  // namespace ppto_emu

#define PPTO_HALF_TYPE(H, TOBITS, TOFLOAT)                                                         \
    struct H {                                                                                     \
        unsigned short __x;                                                                        \
        H() = default;                                                                             \
        H(float f) : __x(TOBITS(f)) {}                                                             \
        H(double f) : __x(TOBITS((float)f)) {}                                                     \
        H(int v) : __x(TOBITS((float)v)) {}                                                        \
        H(unsigned int v) : __x(TOBITS((float)v)) {}                                               \
        H(long long v) : __x(TOBITS((float)v)) {}                                                  \
        H(unsigned long long v) : __x(TOBITS((float)v)) {}                                         \
        operator float() const { return TOFLOAT(__x); }                                            \
        H& operator+=(H o) { return *this = H(float(*this) + float(o)); }                          \
        H& operator-=(H o) { return *this = H(float(*this) - float(o)); }                          \
        H& operator*=(H o) { return *this = H(float(*this) * float(o)); }                          \
        H& operator/=(H o) { return *this = H(float(*this) / float(o)); }                          \
    };                                                                                             \
    inline H operator+(H a, H b) { return H(float(a) + float(b)); }                                \
    inline H operator-(H a, H b) { return H(float(a) - float(b)); }                                \
    inline H operator*(H a, H b) { return H(float(a) * float(b)); }                                \
    inline H operator/(H a, H b) { return H(float(a) / float(b)); }                                \
    inline H operator-(H a) {                                                                      \
        H r;                                                                                       \
        r.__x = (unsigned short)(a.__x ^ 0x8000u);                                                 \
        return r;                                                                                  \
    }                                                                                              \
    inline H operator+(H a) { return a; }                                                          \
    inline bool operator==(H a, H b) { return float(a) == float(b); }                              \
    inline bool operator!=(H a, H b) { return float(a) != float(b); }                              \
    inline bool operator<(H a, H b) { return float(a) < float(b); }                                \
    inline bool operator<=(H a, H b) { return float(a) <= float(b); }                              \
    inline bool operator>(H a, H b) { return float(a) > float(b); }                                \
    inline bool operator>=(H a, H b) { return float(a) >= float(b); }
PPTO_HALF_TYPE(__half, ::ppto_emu::f2h_bits, ::ppto_emu::h2f_bits)
PPTO_HALF_TYPE(__nv_bfloat16, ::ppto_emu::f2bf_bits, ::ppto_emu::bf2f_bits)
#undef PPTO_HALF_TYPE
typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;
struct __attribute__((aligned(4))) __half2 {
    __half x, y;
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __double2half(double f) { return __half((float)f); }
inline float __half2float(__half h) { return float(h); }
inline __half __int2half_rn(int v) { return __half((float)v); }
inline __half __ushort_as_half(unsigned short b) {
    __half h;
    h.__x = b;
    return h;
}
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __double2bfloat16(double f) { return __nv_bfloat16((float)f); }
inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) {
    __nv_bfloat16 h;
    h.__x = b;
    return h;
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)};
}
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return float2{float(h.x), float(h.y)}; }
#define PPTO_HALF_OPS(H, P)                                                                        \
    inline H P##add(H a, H b) { return a + b; }                                                    \
    inline H P##sub(H a, H b) { return a - b; }                                                    \
    inline H P##mul(H a, H b) { return a * b; }                                                    \
    inline H P##div(H a, H b) { return a / b; }                                                    \
    inline H P##fma(H a, H b, H c) { return H(fmaf(float(a), float(b), float(c))); }               \
    inline H P##neg(H a) { return -a; }                                                            \
    inline H P##abs(H a) {                                                                         \
        H r = a;                                                                                   \
        r.__x &= 0x7fffu;                                                                          \
        return r;                                                                                  \
    }                                                                                              \
    inline H P##max(H a, H b) { return H(fmaxf(float(a), float(b))); }                            \
    inline H P##min(H a, H b) { return H(fminf(float(a), float(b))); }                            \
    inline bool P##eq(H a, H b) { return a == b; }                                                 \
    inline bool P##ne(H a, H b) { return a != b; }                                                 \
    inline bool P##lt(H a, H b) { return a < b; }                                                  \
    inline bool P##le(H a, H b) { return a <= b; }                                                 \
    inline bool P##gt(H a, H b) { return a > b; }                                                  \
    inline bool P##ge(H a, H b) { return a >= b; }                                                 \
    inline bool P##isnan(H a) { return std::isnan(float(a)); }                                    \
    inline int P##isinf(H a) { return std::isinf(float(a)) ? (float(a) < 0 ? -1 : 1) : 0; }
PPTO_HALF_OPS(__half, __h)
PPTO_HALF_OPS(__nv_bfloat16, __h)
#undef PPTO_HALF_OPS
inline __half hexp(__half a) { return __half(expf(float(a))); }
inline __half hlog(__half a) { return __half(logf(float(a))); }
inline __half hsqrt(__half a) { return __half(sqrtf(float(a))); }
inline __half hrsqrt(__half a) { return __half(1.0f / sqrtf(float(a))); }
inline __nv_bfloat16 hexp(__nv_bfloat16 a) { return __nv_bfloat16(expf(float(a))); }
inline __nv_bfloat16 hlog(__nv_bfloat16 a) { return __nv_bfloat16(logf(float(a))); }
inline __nv_bfloat16 hsqrt(__nv_bfloat16 a) { return __nv_bfloat16(sqrtf(float(a))); }
inline __nv_bfloat16 hrsqrt(__nv_bfloat16 a) { return __nv_bfloat16(1.0f / sqrtf(float(a))); }

// ---- math ---------------------------------------------------------------------------------------
using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fsub_rn(float x, float y) { return x - y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fdiv_rn(float x, float y) { return x / y; }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline double __dadd_rn(double x, double y) { return x + y; }
inline double __dmul_rn(double x, double y) { return x * y; }
inline double __fma_rn(double x, double y, double z) { return fma(x, y, z); }
// C23 names (newer glibc declares some of them): macros, so as not to clash with those
namespace ppto_emu {
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline float sinpif(float x) { return sinf(3.14159265358979323846f * x); }
inline float cospif(float x) { return cosf(3.14159265358979323846f * x); }
inline double sinpi(double x) { return sin(3.14159265358979323846 * x); }
inline double cospi(double x) { return cos(3.14159265358979323846 * x); }
}  // namespace ppto_emu
#define rsqrtf ::ppto_emu::rsqrtf
#define rsqrt ::ppto_emu::rsqrt
#define rcbrtf ::ppto_emu::rcbrtf
#define sinpif ::ppto_emu::sinpif
#define cospif ::ppto_emu::cospif
#define sinpi ::ppto_emu::sinpi
#define cospi ::ppto_emu::cospi
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
inline float saturate(float x) { return __saturatef(x); }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline unsigned int __float2uint_rn(float x) { return (unsigned int)nearbyintf(x); }
inline unsigned int __float2uint_rz(float x) { return (unsigned int)x; }
inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
inline int __double2int_rn(double x) { return (int)nearbyint(x); }
inline int __double2int_rz(double x) { return (int)x; }
inline float __double2float_rn(double x) { return (float)x; }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned int x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline double __int2double_rn(int x) { return (double)x; }
inline double __ll2double_rn(long long x) { return (double)x; }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned int __float_as_uint(float x) { return std::bit_cast<unsigned int>(x); }
inline float __uint_as_float(unsigned int x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline int __double2hiint(double x) { return (int)(std::bit_cast<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return (int)std::bit_cast<unsigned long long>(x); }
inline double __hiloint2double(int hi, int lo) {
    return std::bit_cast<double>(((unsigned long long)(unsigned int)hi << 32) | (unsigned int)lo);
}
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
inline long long __mul64hi(long long a, long long b) {
    return (long long)(((__int128)a * b) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

// min / max overloads as CUDA declares them (mixed signedness goes unsigned, float/double double)
#define PPTO_MINMAX(R, A, B)                                                                       \
    inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }                                   \
    inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
PPTO_MINMAX(int, int, int)
PPTO_MINMAX(unsigned int, unsigned int, unsigned int)
PPTO_MINMAX(unsigned int, int, unsigned int)
PPTO_MINMAX(unsigned int, unsigned int, int)
PPTO_MINMAX(long, long, long)
PPTO_MINMAX(unsigned long, unsigned long, unsigned long)
PPTO_MINMAX(unsigned long, long, unsigned long)
PPTO_MINMAX(unsigned long, unsigned long, long)
PPTO_MINMAX(long long, long long, long long)
PPTO_MINMAX(unsigned long long, unsigned long long, unsigned long long)
PPTO_MINMAX(unsigned long long, long long, unsigned long long)
PPTO_MINMAX(unsigned long long, unsigned long long, long long)
#undef PPTO_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(double a, float b) { return fmax(a, b); }
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) {
    return a < b ? a : b;
}
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) {
    return a > b ? a : b;
}

// ---- memory access hints ------------------------------------------------------------------------
template <class T>
inline T __ldg(const T* p) { return *p; }
template <class T>
inline T __ldcg(const T* p) { return *p; }
template <class T>
inline T __ldca(const T* p) { return *p; }
template <class T>
inline T __ldcs(const T* p) { return *p; }
template <class T>
inline T __ldlu(const T* p) { return *p; }
template <class T>
inline T __ldcv(const T* p) { return *p; }
template <class T>
inline void __stcg(T* p, T v) { *p = v; }
template <class T>
inline void __stcs(T* p, T v) { *p = v; }
template <class T>
inline void __stwb(T* p, T v) { *p = v; }
template <class T>
inline void __stwt(T* p, T v) { *p = v; }
inline void __threadfence() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// ---- atomics: one fiber runs at a time, so plain read-modify-write is atomic -------------------
#define PPTO_ATOMIC(NAME, T, EXPR)                                                                 \
    inline T NAME(T* p, T v) {                                                                     \
        T old = *p;                                                                                \
        *p = (EXPR);                                                                               \
        return old;                                                                                \
    }
PPTO_ATOMIC(atomicAdd, int, old + v)
PPTO_ATOMIC(atomicAdd, unsigned int, old + v)
PPTO_ATOMIC(atomicAdd, unsigned long long, old + v)
PPTO_ATOMIC(atomicAdd, float, old + v)
PPTO_ATOMIC(atomicAdd, double, old + v)
PPTO_ATOMIC(atomicAdd, __half, old + v)
PPTO_ATOMIC(atomicAdd, __nv_bfloat16, old + v)
PPTO_ATOMIC(atomicSub, int, old - v)
PPTO_ATOMIC(atomicSub, unsigned int, old - v)
PPTO_ATOMIC(atomicExch, int, v)
PPTO_ATOMIC(atomicExch, unsigned int, v)
PPTO_ATOMIC(atomicExch, unsigned long long, v)
PPTO_ATOMIC(atomicExch, float, v)
PPTO_ATOMIC(atomicMax, int, old > v ? old : v)
PPTO_ATOMIC(atomicMax, unsigned int, old > v ? old : v)
PPTO_ATOMIC(atomicMax, long long, old > v ? old : v)
PPTO_ATOMIC(atomicMax, unsigned long long, old > v ? old : v)
PPTO_ATOMIC(atomicMin, int, old < v ? old : v)
PPTO_ATOMIC(atomicMin, unsigned int, old < v ? old : v)
PPTO_ATOMIC(atomicMin, long long, old < v ? old : v)
PPTO_ATOMIC(atomicMin, unsigned long long, old < v ? old : v)
PPTO_ATOMIC(atomicAnd, int, old & v)
PPTO_ATOMIC(atomicAnd, unsigned int, old & v)
PPTO_ATOMIC(atomicAnd, unsigned long long, old & v)
PPTO_ATOMIC(atomicOr, int, old | v)
PPTO_ATOMIC(atomicOr, unsigned int, old | v)
PPTO_ATOMIC(atomicOr, unsigned long long, old | v)
PPTO_ATOMIC(atomicXor, int, old ^ v)
PPTO_ATOMIC(atomicXor, unsigned int, old ^ v)
PPTO_ATOMIC(atomicXor, unsigned long long, old ^ v)
PPTO_ATOMIC(atomicInc, unsigned int, old >= v ? 0u : old + 1u)
PPTO_ATOMIC(atomicDec, unsigned int, (old == 0u || old > v) ? v : old - 1u)
#undef PPTO_ATOMIC
#define PPTO_CAS(T)                                                                                \
    inline T atomicCAS(T* p, T compare, T v) {                                                     \
        T old = *p;                                                                                \
        if (old == compare) *p = v;                                                                \
        return old;                                                                                \
    }
PPTO_CAS(int)
PPTO_CAS(unsigned int)
PPTO_CAS(unsigned long long)
PPTO_CAS(unsigned short)
#undef PPTO_CAS

// ---- the runtime: ppto_emu_rt.cpp ---------------------------------------------------------------
struct ppto_emu_public {
    uint3 tid;  // threadIdx of the running fiber
    uint3 bidx;
    dim3 bdim, gdim;
    unsigned char* dyn_smem;  // this block's dynamic shared memory
    unsigned int linear;      // linear thread index of the running fiber
    unsigned int nthreads;    // threads in a block
};
typedef void (*ppto_emu_body_t)(void**);
extern "C" {
extern ppto_emu_public ppto_emu_pub;
unsigned int ppto_emu_block_barrier(int pred);
unsigned long long ppto_emu_warp_sync(unsigned int mask, int op, unsigned long long val, int src,
                                      int pred, const char* what);
unsigned int ppto_emu_activemask();
__attribute__((noreturn)) void ppto_emu_fail(const char* what, const char* detail);
int ppto_emu_run_grid(const char* name, ppto_emu_body_t body, unsigned int gx, unsigned int gy,
                      unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
                      unsigned long long smem, void** args, int order, unsigned long long seed);
}

namespace ppto_emu {
enum : int {
    OP_SYNC,
    OP_SHFL,
    OP_VOTE,
    OP_ADD,
    OP_MIN_I,
    OP_MAX_I,
    OP_MIN_U,
    OP_MAX_U,
    OP_AND,
    OP_OR,
    OP_XOR
};

// After a switch point another fiber has run: nothing in memory may be assumed unchanged.
inline void clobber() { asm volatile("" ::: "memory"); }

inline unsigned long long warp_sync(unsigned int mask, int op, unsigned long long val, int src,
                                    int pred, const char* what) {
    unsigned long long r = ppto_emu_warp_sync(mask, op, val, src, pred, what);
    clobber();
    return r;
}

inline unsigned int lane_id() { return ppto_emu_pub.linear & 31u; }

inline unsigned int warp_lanes() {  // the lanes that exist in the running fiber's warp
    unsigned int base = ppto_emu_pub.linear & ~31u, n = ppto_emu_pub.nthreads - base;
    return n >= 32 ? 0xffffffffu : (1u << n) - 1u;
}

template <class T>
inline unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                  "warp shuffles move values of at most 8 bytes");
    unsigned long long b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
inline T from_bits(unsigned long long b) {
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}

// the PTX shfl.sync lane arithmetic (c = ((32 - width) << 8) | 0x1f; .up uses cval = 0)
template <class T>
inline T shfl(unsigned int mask, T var, int mode, int b, int width, const char* what) {
    if (width <= 0 || width > 32 || (width & (width - 1)))
        ppto_emu_fail(what, "width is not a power of 2 in 1..32");
    int lane = (int)lane_id();
    int segmask = (32 - width) & 31;
    int bval = b & 31;
    int j = lane;
    bool pval = false;
    int maxlane = (lane & segmask) | (mode == 1 ? 0 : (31 & ~segmask));
    switch (mode) {
        case 0:  // idx
            j = (lane & segmask) | (bval & ~segmask);
            pval = j <= maxlane;
            break;
        case 1:  // up
            j = lane - bval;
            pval = j >= maxlane;
            break;
        case 2:  // down
            j = lane + bval;
            pval = j <= maxlane;
            break;
        default:  // bfly
            j = lane ^ bval;
            pval = j <= maxlane;
            break;
    }
    if (!pval) j = lane;
    return from_bits<T>(warp_sync(mask, OP_SHFL, to_bits(var), j, 0, what));
}

// ---- launching: the launchers appended to the source call launch<&(kernel)> -------------------
template <class... P, size_t... I>
inline void invoke(void (*k)(P...), void** args, std::index_sequence<I...>) {
    k(*static_cast<std::remove_cv_t<P>*>(args[I])...);
}

template <auto K>
inline void body(void** args) {
    [&]<class... P>(void (*k)(P...)) { invoke(k, args, std::index_sequence_for<P...>{}); }(K);
}

template <auto K>
inline int launch(const char* name, unsigned int gx, unsigned int gy, unsigned int gz,
                  unsigned int bx, unsigned int by, unsigned int bz, unsigned long long smem,
                  void** args, int order, unsigned long long seed) {
    return ppto_emu_run_grid(name, &body<K>, gx, gy, gz, bx, by, bz, smem, args, order, seed);
}

template <class T>
inline const char* pretty() {
    return __PRETTY_FUNCTION__;  // "... [with T = const float*]"
}

template <class T>
inline char kind() {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_void_v<U>) return 'v';
    else if constexpr (std::is_pointer_v<U>) return 'p';
    else if constexpr (std::is_same_v<U, bool>) return 'b';
    else if constexpr (std::is_same_v<U, char> || std::is_same_v<U, signed char> ||
                       std::is_same_v<U, unsigned char> || std::is_same_v<U, std::byte>)
        return 'c';
    else if constexpr (std::is_enum_v<U>) return kind<std::underlying_type_t<U>>();
    else if constexpr (std::is_floating_point_v<U>) return 'f';
    else if constexpr (std::is_integral_v<U>) return std::is_signed_v<U> ? 'i' : 'u';
    else return 'o';
}

template <class T>
inline size_t size_of() {
    if constexpr (std::is_void_v<T>) return 0;
    else return sizeof(T);
}

template <class T>
inline void describe(char* buf, size_t cap, size_t& len) {
    using Q = std::remove_pointer_t<T>;
    constexpr bool ptr = std::is_pointer_v<T>;
    const char* name = strstr(pretty<T>(), "T = ");
    name = name ? name + 4 : "?";
    int n = snprintf(buf + len, cap - len, "%zu %c %zu %c %.*s\n", sizeof(T), kind<T>(),
                     ptr ? size_of<Q>() : 0, ptr ? kind<Q>() : '-', (int)strcspn(name, ";]"),
                     name);
    if (n > 0) len = len + (size_t)n < cap ? len + (size_t)n : cap - 1;
}

// One line a parameter: "size kind pointee_size pointee_kind type".
template <auto K>
inline const char* info() {
    static char buf[8192];
    size_t len = 0;
    buf[0] = 0;
    [&]<class... P>(void (*)(P...)) { (describe<std::remove_cv_t<P>>(buf, sizeof buf, len), ...); }(K);
    return buf;
}
}  // namespace ppto_emu

// ---- built-in variables and device functions ----------------------------------------------------
static const uint3& threadIdx = ppto_emu_pub.tid;
static const uint3& blockIdx = ppto_emu_pub.bidx;
static const dim3& blockDim = ppto_emu_pub.bdim;
static const dim3& gridDim = ppto_emu_pub.gdim;
constexpr int warpSize = 32;

inline unsigned int ppto_emu_barrier(int pred) {
    unsigned int r = ppto_emu_block_barrier(pred);
    ::ppto_emu::clobber();
    return r;
}
inline void __syncthreads() { ppto_emu_barrier(0); }
inline int __syncthreads_count(int pred) { return (int)ppto_emu_barrier(pred); }
inline int __syncthreads_and(int pred) { return ppto_emu_barrier(pred) == ppto_emu_pub.nthreads; }
inline int __syncthreads_or(int pred) { return ppto_emu_barrier(pred) != 0; }
inline void __syncwarp(unsigned int mask = 0xffffffffu) {
    ::ppto_emu::warp_sync(mask, ::ppto_emu::OP_SYNC, 0, 0, 0, "__syncwarp");
}
template <class T>
inline T __shfl_sync(unsigned int mask, T var, int srcLane, int width = warpSize) {
    return ::ppto_emu::shfl(mask, var, 0, srcLane, width, "__shfl_sync");
}
template <class T>
inline T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) {
    return ::ppto_emu::shfl(mask, var, 1, (int)delta, width, "__shfl_up_sync");
}
template <class T>
inline T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) {
    return ::ppto_emu::shfl(mask, var, 2, (int)delta, width, "__shfl_down_sync");
}
template <class T>
inline T __shfl_xor_sync(unsigned int mask, T var, int laneMask, int width = warpSize) {
    return ::ppto_emu::shfl(mask, var, 3, laneMask, width, "__shfl_xor_sync");
}
inline unsigned int __ballot_sync(unsigned int mask, int pred) {
    return (unsigned int)::ppto_emu::warp_sync(mask, ::ppto_emu::OP_VOTE, 0, 0, pred,
                                               "__ballot_sync");
}
inline int __any_sync(unsigned int mask, int pred) {
    return ::ppto_emu::warp_sync(mask, ::ppto_emu::OP_VOTE, 0, 0, pred, "__any_sync") != 0;
}
inline int __all_sync(unsigned int mask, int pred) {
    unsigned int m = mask & ::ppto_emu::warp_lanes();
    return ::ppto_emu::warp_sync(mask, ::ppto_emu::OP_VOTE, 0, 0, pred, "__all_sync") == m;
}
inline unsigned int __activemask() { return ppto_emu_activemask(); }
inline unsigned int __lanemask_lt() { return (1u << ::ppto_emu::lane_id()) - 1u; }
inline unsigned int __lanemask_le() { return (2u << ::ppto_emu::lane_id()) - 1u; }
#define PPTO_REDUCE(NAME, T, OP)                                                                   \
    inline T NAME(unsigned int mask, T value) {                                                    \
        return (T)::ppto_emu::warp_sync(mask, ::ppto_emu::OP, (unsigned int)value, 0, 0, #NAME);   \
    }
PPTO_REDUCE(__reduce_add_sync, unsigned int, OP_ADD)
PPTO_REDUCE(__reduce_add_sync, int, OP_ADD)
PPTO_REDUCE(__reduce_min_sync, unsigned int, OP_MIN_U)
PPTO_REDUCE(__reduce_min_sync, int, OP_MIN_I)
PPTO_REDUCE(__reduce_max_sync, unsigned int, OP_MAX_U)
PPTO_REDUCE(__reduce_max_sync, int, OP_MAX_I)
PPTO_REDUCE(__reduce_and_sync, unsigned int, OP_AND)
PPTO_REDUCE(__reduce_or_sync, unsigned int, OP_OR)
PPTO_REDUCE(__reduce_xor_sync, unsigned int, OP_XOR)
#undef PPTO_REDUCE
[[noreturn]] inline void __trap() { ppto_emu_fail("__trap()", "the kernel trapped"); }
inline void __brkpt() { __trap(); }
#ifdef __x86_64__
inline long long clock64() { return (long long)__builtin_ia32_rdtsc(); }
#else
#include <time.h>
inline long long clock64() {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000ll + t.tv_nsec;
}
#endif

#endif  // PPTO_EMU_H
