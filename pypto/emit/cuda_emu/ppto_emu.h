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
// The Python side is pypto/emit/cuda_emu/__init__.py; it appends one launcher per kernel.
#ifndef PPTO_EMU_H
#define PPTO_EMU_H

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#if !defined(__x86_64__) && !defined(PPTO_EMU_UCONTEXT)
#define PPTO_EMU_UCONTEXT 1
#endif
#ifdef PPTO_EMU_UCONTEXT
#include <ucontext.h>
#endif

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
#define PPTO_DYN_SMEM(T, name) T* const name = reinterpret_cast<T*>(::ppto_emu::S.dyn_smem)

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
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline float sinpif(float x) { return sinf(3.14159265358979323846f * x); }
inline float cospif(float x) { return cosf(3.14159265358979323846f * x); }
inline double sinpi(double x) { return sin(3.14159265358979323846 * x); }
inline double cospi(double x) { return cos(3.14159265358979323846 * x); }
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

// ---- the fiber scheduler ------------------------------------------------------------------------
extern "C" __attribute__((visibility("hidden"))) void ppto_emu_switch(void** save, void* to);
#ifndef PPTO_EMU_UCONTEXT
// Saves the callee-saved registers on the current stack, stores the stack pointer in *save,
// then loads `to` as the stack pointer and pops the registers saved there.
asm(R"(
    .text
    .p2align 4
    .globl ppto_emu_switch
    .hidden ppto_emu_switch
    .type ppto_emu_switch, @function
ppto_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size ppto_emu_switch, .-ppto_emu_switch
)");
#endif

namespace ppto_emu {

enum : unsigned char { READY = 0, WAIT_BLOCK = 1, WAIT_WARP = 2, DONE = 3 };
enum : unsigned char {
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
constexpr size_t STACK = 128 * 1024;  // per fiber, plus a guard page below

struct Fiber {
    void* sp;
#ifdef PPTO_EMU_UCONTEXT
    ucontext_t uc;
#endif
    uint3 tid;
    unsigned int linear;
    unsigned char state, op;
    int pred;
    int src;
    unsigned int mask;
    unsigned long long val, out;
    const char* what;
    char* stack;  // lowest usable byte
};

struct Sched {
    // launch
    const char* kernel = "";
    void (*body)(void**) = nullptr;
    void** args = nullptr;
    uint3 bidx{0, 0, 0};
    unsigned int n = 0, nwarps = 0;
    int order = 0;
    unsigned long long rng = 0;
    unsigned char* dyn_smem = nullptr;  // ends at a guard page: overruns fault
    unsigned char* dyn_map = nullptr;
    size_t dyn_cap = 0;
    unsigned long long* perm = nullptr;  // random block order
    unsigned long long perm_cap = 0;
    // block
    Fiber* fibers = nullptr;
    unsigned int nfibers_alloc = 0;
    Fiber* cur = nullptr;
    void* main_sp = nullptr;
#ifdef PPTO_EMU_UCONTEXT
    ucontext_t main_uc;
#endif
    unsigned int* round = nullptr;
    unsigned int round_len = 0, round_pos = 0;
    unsigned char* next = nullptr;
    unsigned int next_count = 0;
    unsigned int bar_arrived = 0, bar_pred = 0, bar_result = 0, exited = 0;
    unsigned int warp_arrived[32];
    unsigned int warp_exists[32];
    bool failed = false;
    std::string error;
};
// Not static: the compiler must assume that the context switch (an external function) changes
// them.
inline Sched S;
inline uint3 g_tid;
inline dim3 g_bdim, g_gdim;
inline uint3 g_bidx;

inline unsigned long long next_rand() {  // splitmix64
    unsigned long long z = (S.rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

inline void shuffle(unsigned int* a, unsigned int len) {
    for (unsigned int i = len; i > 1; --i) {
        unsigned int j = (unsigned int)(next_rand() % i);
        unsigned int t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

inline void make_ready(unsigned int i) {
    S.fibers[i].state = READY;
    if (!S.next[i]) {
        S.next[i] = 1;
        S.next_count++;
    }
}

inline Fiber* pop_ready() {
    if (S.round_pos == S.round_len) {
        if (S.next_count == 0) return nullptr;
        unsigned int len = 0;
        if (S.order == 1) {
            for (unsigned int i = S.n; i-- > 0;)
                if (S.next[i]) S.next[i] = 0, S.round[len++] = i;
        } else {
            for (unsigned int i = 0; i < S.n; ++i)
                if (S.next[i]) S.next[i] = 0, S.round[len++] = i;
            if (S.order == 2) shuffle(S.round, len);
        }
        S.next_count = 0;
        S.round_len = len;
        S.round_pos = 0;
    }
    return &S.fibers[S.round[S.round_pos++]];
}

// Switch from fiber `from` (nullptr: the launcher) to fiber `to` (nullptr: the launcher).
// `dead`: `from` never resumes.
inline void jump(Fiber* from, Fiber* to, bool dead = false) {
    if (to) S.cur = to, g_tid = to->tid;
#ifdef PPTO_EMU_UCONTEXT
    ucontext_t* target = to ? &to->uc : &S.main_uc;
    if (dead)
        setcontext(target);
    else
        swapcontext(from ? &from->uc : &S.main_uc, target);
#else
    static void* dummy;
    ppto_emu_switch(dead ? &dummy : from ? &from->sp : &S.main_sp, to ? to->sp : S.main_sp);
#endif
    asm volatile("" ::: "memory");
}

// The current fiber stops here (it was made to wait, or it is done); run the next ready one.
inline void yield() {
    Fiber* self = S.cur;
    Fiber* nx = pop_ready();
    if (nx == self) {
        self->state = READY;
        return;
    }
    jump(self, nx, self->state == DONE);
}

[[noreturn]] inline void fail(std::string msg) {
    S.failed = true;
    S.error = std::move(msg);
    jump(S.cur, nullptr, true);
    __builtin_unreachable();
}

inline std::string fmt_idx(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

inline std::string where() {
    return "kernel '" + std::string(S.kernel) + "' block " + fmt_idx(S.bidx) + " thread " +
           fmt_idx(S.cur->tid);
}

inline void fiber_main() {
    S.body(S.args);
    Fiber* self = S.cur;
    self->state = DONE;
    S.exited++;
    yield();
    __builtin_unreachable();
}

inline unsigned int block_barrier(int pred) {
    Fiber* f = S.cur;
    f->state = WAIT_BLOCK;
    S.bar_arrived++;
    S.bar_pred += pred != 0;
    if (S.bar_arrived == S.n) {
        S.bar_result = S.bar_pred;
        S.bar_arrived = S.bar_pred = 0;
        for (unsigned int i = 0; i < S.n; ++i) make_ready(i);
    }
    yield();
    return S.bar_result;
}

inline unsigned long long op_result(unsigned char op, unsigned int base, unsigned int mask,
                                    unsigned int lane) {
    Fiber* F = S.fibers + base;
    switch (op) {
        case OP_SHFL: {
            int src = F[lane].src;
            return (mask >> src) & 1u ? F[src].val : ~0ull;  // not participating: poison
        }
        case OP_VOTE: {
            unsigned int ballot = 0;
            for (unsigned int l = 0; l < 32; ++l)
                if ((mask >> l) & 1u && F[l].pred) ballot |= 1u << l;
            return ballot;
        }
        case OP_SYNC:
            return 0;
        default:
            break;
    }
    unsigned long long r = 0;
    bool first = true;
    for (unsigned int l = 0; l < 32; ++l) {
        if (!((mask >> l) & 1u)) continue;
        unsigned long long v = F[l].val;
        if (first) {
            r = v;
            first = false;
            continue;
        }
        switch (op) {
            case OP_ADD:
                r = (unsigned int)(r + v);
                break;
            case OP_MIN_I:
                r = (int)r < (int)v ? r : v;
                break;
            case OP_MAX_I:
                r = (int)r > (int)v ? r : v;
                break;
            case OP_MIN_U:
                r = (unsigned int)r < (unsigned int)v ? r : v;
                break;
            case OP_MAX_U:
                r = (unsigned int)r > (unsigned int)v ? r : v;
                break;
            case OP_AND:
                r &= v;
                break;
            case OP_OR:
                r |= v;
                break;
            case OP_XOR:
                r ^= v;
                break;
        }
    }
    return r;
}

// A warp-level rendezvous of the lanes named in `mask`: returns this lane's result of `op`.
inline unsigned long long warp_sync(unsigned int mask, unsigned char op, unsigned long long val,
                                    int src, int pred, const char* what) {
    Fiber* f = S.cur;
    unsigned int w = f->linear >> 5, lane = f->linear & 31u, base = w << 5;
    mask &= S.warp_exists[w];
    if (!((mask >> lane) & 1u)) {
        char buf[32];
        snprintf(buf, sizeof buf, "0x%08x", mask);
        fail(std::string(what) + " in " + where() + ": the mask " + buf +
             " does not name the calling lane " + std::to_string(lane));
    }
    f->state = WAIT_WARP;
    f->op = op;
    f->val = val;
    f->src = src;
    f->pred = pred;
    f->mask = mask;
    f->what = what;
    unsigned int arrived = (S.warp_arrived[w] |= 1u << lane);
    if ((arrived & mask) == mask) {
        bool same = true;
        for (unsigned int l = 0; l < 32; ++l)
            if ((mask >> l) & 1u && S.fibers[base + l].mask != mask) same = false;
        if (same) {
            for (unsigned int l = 0; l < 32; ++l)
                if ((mask >> l) & 1u)
                    S.fibers[base + l].out = op_result(S.fibers[base + l].op, base, mask, l);
            S.warp_arrived[w] &= ~mask;
            for (unsigned int l = 0; l < 32; ++l)
                if ((mask >> l) & 1u) make_ready(base + l);
        }
    }
    yield();
    return f->out;
}

inline unsigned int lane_id() { return S.cur->linear & 31u; }

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

inline void check_width(int width, const char* what) {
    if (width <= 0 || width > 32 || (width & (width - 1)))
        fail(std::string(what) + " in " + where() + ": width " + std::to_string(width) +
             " is not a power of 2 in 1..32");
}

// the PTX shfl.sync lane arithmetic (c = ((32 - width) << 8) | 0x1f; .up uses cval = 0)
template <class T>
inline T shfl(unsigned int mask, T var, int mode, int b, int width, const char* what) {
    check_width(width, what);
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

// ---- launching ----------------------------------------------------------------------------------
inline char* alloc_stack() {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void* p = mmap(nullptr, STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (p == MAP_FAILED) return nullptr;
    mprotect(p, page, PROT_NONE);  // guard page: a stack overflow faults
    return (char*)p + page;
}

inline bool ensure_fibers(unsigned int n) {
    if (n <= S.nfibers_alloc) return true;
    Fiber* nf = (Fiber*)realloc((void*)S.fibers, n * sizeof(Fiber));
    if (!nf) return false;
    S.fibers = nf;
    for (unsigned int i = S.nfibers_alloc; i < n; ++i) {
        S.fibers[i].stack = alloc_stack();
        if (!S.fibers[i].stack) return false;
        S.nfibers_alloc = i + 1;
    }
    free(S.round);
    free(S.next);
    S.round = (unsigned int*)malloc(n * sizeof(unsigned int));
    S.next = (unsigned char*)calloc(n, 1);
    return S.round && S.next;
}

inline void init_fiber(Fiber& f, unsigned int i) {
    // stagger the stack tops so that the fibers' hot stack lines do not share cache sets
    char* top = f.stack + STACK - (i % 16) * 256;
#ifdef PPTO_EMU_UCONTEXT
    getcontext(&f.uc);
    f.uc.uc_stack.ss_sp = f.stack;
    f.uc.uc_stack.ss_size = (size_t)(top - f.stack);
    f.uc.uc_link = nullptr;
    makecontext(&f.uc, (void (*)())fiber_main, 0);
#else
    void** sp = (void**)((uintptr_t)top & ~(uintptr_t)15);
    *--sp = nullptr;                       // fiber_main's return address: it never returns
    *--sp = (void*)&fiber_main;            // popped by `ret` in ppto_emu_switch
    for (int r = 0; r < 6; ++r) *--sp = 0;  // rbp rbx r12 r13 r14 r15
    f.sp = sp;
#endif
}

inline std::string lanes(unsigned int m) {
    char buf[16];
    snprintf(buf, sizeof buf, "0x%08x", m);
    return buf;
}

inline std::string deadlock_message() {
    unsigned int at_bar = 0, at_warp = 0;
    for (unsigned int i = 0; i < S.n; ++i) {
        at_bar += S.fibers[i].state == WAIT_BLOCK;
        at_warp += S.fibers[i].state == WAIT_WARP;
    }
    std::string head = "kernel '" + std::string(S.kernel) + "' block " + fmt_idx(S.bidx) + ": ";
    std::string total = std::to_string(S.n);
    if (at_bar) {
        std::string m = "barrier divergence in " + head + std::to_string(at_bar) + " of " + total +
                        " threads reached __syncthreads(); ";
        if (!at_warp) return m + "the others exited";
        const char* what = "";
        for (unsigned int i = 0; i < S.n; ++i)
            if (S.fibers[i].state == WAIT_WARP) what = S.fibers[i].what;
        return m + std::to_string(at_warp) + " wait at a warp-level sync (" + what + ") and " +
               std::to_string(S.exited) + " exited";
    }
    for (unsigned int w = 0; w < S.nwarps; ++w) {
        unsigned int waiting = 0, mask = 0;
        const char* what = "";
        for (unsigned int l = 0; l < 32 && w * 32 + l < S.n; ++l) {
            Fiber& f = S.fibers[w * 32 + l];
            if (f.state == WAIT_WARP) waiting |= 1u << l, mask = f.mask, what = f.what;
        }
        if (!waiting) continue;
        unsigned int missing = mask & ~waiting;
        unsigned int exited = 0;
        for (unsigned int l = 0; l < 32; ++l)
            if ((missing >> l) & 1u && S.fibers[w * 32 + l].state == DONE) exited++;
        return "warp divergence in " + head + "warp " + std::to_string(w) + ": " +
               std::to_string(__builtin_popcount(waiting)) + " lanes (" + lanes(waiting) +
               ") wait at " + what + " with mask " + lanes(mask) + "; " +
               std::to_string(__builtin_popcount(missing)) + " lanes of the mask never arrive (" +
               std::to_string(exited) + " exited, the others wait elsewhere)";
    }
    return "deadlock in " + head + "no thread can run";
}

inline int run_grid(const char* name, unsigned int gx, unsigned int gy, unsigned int gz,
                    unsigned int bx, unsigned int by, unsigned int bz, unsigned long long smem,
                    void** args, int order, unsigned long long seed) {
    S.failed = false;
    S.error.clear();
    S.kernel = name;
    unsigned long long nthreads = (unsigned long long)bx * by * bz;
    if (!gx || !gy || !gz || !bx || !by || !bz) {
        S.error = "invalid launch of '" + std::string(name) + "': grid and block sizes must be >= 1";
        return 1;
    }
    if (nthreads > 1024 || bz > 64 || gy > 65535 || gz > 65535) {
        S.error = "invalid launch of '" + std::string(name) + "': block " + std::to_string(bx) +
                  "x" + std::to_string(by) + "x" + std::to_string(bz) + ", grid " +
                  std::to_string(gx) + "x" + std::to_string(gy) + "x" + std::to_string(gz) +
                  " (at most 1024 threads a block, block z <= 64, grid y and z <= 65535)";
        return 1;
    }
    if (smem > 232448) {
        S.error = "invalid launch of '" + std::string(name) + "': " + std::to_string(smem) +
                  " bytes of dynamic shared memory (sm_90 allows at most 232448)";
        return 1;
    }
    unsigned int n = (unsigned int)nthreads;
    if (!ensure_fibers(n)) {
        S.error = "out of memory for " + std::to_string(n) + " fiber stacks";
        return 1;
    }
    size_t smem16 = (smem + 15) & ~(size_t)15;
    if (!S.dyn_map || smem16 > S.dyn_cap) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE), cap = (smem16 + page - 1) / page * page;
        if (cap == 0) cap = page;
        if (S.dyn_map) munmap(S.dyn_map, S.dyn_cap + page);
        void* p = mmap(nullptr, cap + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED) {
            S.dyn_map = nullptr;
            S.error = "out of memory for " + std::to_string(smem) + " bytes of shared memory";
            return 1;
        }
        S.dyn_map = (unsigned char*)p;
        S.dyn_cap = cap;
        mprotect(S.dyn_map + cap, page, PROT_NONE);
    }
    S.dyn_smem = S.dyn_map + S.dyn_cap - smem16;
    S.n = n;
    S.nwarps = (n + 31) / 32;
    S.args = args;
    S.order = order;
    S.rng = seed;
    g_bdim = dim3(bx, by, bz);
    g_gdim = dim3(gx, gy, gz);
    for (unsigned int w = 0; w < S.nwarps; ++w)
        S.warp_exists[w] = n - w * 32 >= 32 ? 0xffffffffu : (1u << (n - w * 32)) - 1u;
    for (unsigned int i = 0; i < n; ++i) {
        Fiber& f = S.fibers[i];
        f.linear = i;
        f.tid = uint3{i % bx, (i / bx) % by, i / (bx * by)};
    }
    unsigned long long nblocks = (unsigned long long)gx * gy * gz;
    for (unsigned long long k = 0; k < nblocks; ++k) {
        unsigned long long b = k;
        if (order == 1) b = nblocks - 1 - k;
        if (order == 2) {  // a random permutation of the blocks
            unsigned long long*& perm = S.perm;
            if (k == 0) {
                if (S.perm_cap < nblocks) {
                    free(perm);
                    perm = (unsigned long long*)malloc(nblocks * sizeof *perm);
                    if (!perm) {
                        S.perm_cap = 0;
                        S.error = "out of memory for a random order of the blocks";
                        return 1;
                    }
                    S.perm_cap = nblocks;
                }
                for (unsigned long long i = 0; i < nblocks; ++i) perm[i] = i;
                for (unsigned long long i = nblocks; i > 1; --i) {
                    unsigned long long j = next_rand() % i, t = perm[i - 1];
                    perm[i - 1] = perm[j];
                    perm[j] = t;
                }
            }
            b = perm[k];
        }
        S.bidx = uint3{(unsigned int)(b % gx), (unsigned int)((b / gx) % gy),
                       (unsigned int)(b / ((unsigned long long)gx * gy))};
        g_bidx = S.bidx;
        if (smem) memset(S.dyn_smem, 0xff, smem);
        for (unsigned int i = 0; i < n; ++i) {
            init_fiber(S.fibers[i], i);
            S.fibers[i].state = READY;
            S.fibers[i].mask = 0;
            S.next[i] = 1;
        }
        for (unsigned int w = 0; w < S.nwarps; ++w) S.warp_arrived[w] = 0;
        S.next_count = n;
        S.round_len = S.round_pos = 0;
        S.bar_arrived = S.bar_pred = 0;
        S.exited = 0;
        Fiber* first = pop_ready();
        jump(nullptr, first);
        if (S.failed) return 1;
        if (S.exited != n) {
            S.error = deadlock_message();
            return 1;
        }
    }
    return 0;
}

template <class... P, size_t... I>
inline void invoke(void (*k)(P...), void** args, std::index_sequence<I...>) {
    k(*static_cast<std::remove_cv_t<P>*>(args[I])...);
}

template <auto K>
inline void body(void** args) {
    [&]<class... P>(void (*k)(P...)) {
        invoke(k, args, std::index_sequence_for<P...>{});
    }(K);
}

template <class T>
inline std::string type_name() {
    std::string s = __PRETTY_FUNCTION__;
    size_t a = s.find("T = ") + 4, e = s.find_first_of(";]", a);
    return s.substr(a, e - a);
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

// One line a parameter: "size kind pointee_size pointee_kind type name".
template <auto K>
inline const char* info() {
    static std::string s = [] {
        return [&]<class... P>(void (*)(P...)) {
            std::string r;
            auto one = [&]<class T>() {
                using Q = std::remove_pointer_t<T>;
                bool ptr = std::is_pointer_v<T>;
                r += std::to_string(sizeof(T)) + " " + kind<T>() + " " +
                     std::to_string(ptr ? size_of<Q>() : 0) + " " + (ptr ? kind<Q>() : '-') +
                     " " + type_name<T>() + "\n";
            };
            (one.template operator()<std::remove_cv_t<P>>(), ...);
            return r;
        }(K);
    }();
    return s.c_str();
}

template <auto K>
inline int launch(const char* name, unsigned int gx, unsigned int gy, unsigned int gz,
                  unsigned int bx, unsigned int by, unsigned int bz, unsigned long long smem,
                  void** args, int order, unsigned long long seed) {
    S.body = &body<K>;
    return run_grid(name, gx, gy, gz, bx, by, bz, smem, args, order, seed);
}

}  // namespace ppto_emu

// ---- built-in variables and device functions ----------------------------------------------------
static const uint3& threadIdx = ::ppto_emu::g_tid;
static const uint3& blockIdx = ::ppto_emu::g_bidx;
static const dim3& blockDim = ::ppto_emu::g_bdim;
static const dim3& gridDim = ::ppto_emu::g_gdim;
constexpr int warpSize = 32;

inline void __syncthreads() { ::ppto_emu::block_barrier(0); }
inline int __syncthreads_count(int pred) { return (int)::ppto_emu::block_barrier(pred); }
inline int __syncthreads_and(int pred) {
    return ::ppto_emu::block_barrier(pred) == ::ppto_emu::S.n;
}
inline int __syncthreads_or(int pred) { return ::ppto_emu::block_barrier(pred) != 0; }
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
    unsigned int m = mask & ::ppto_emu::S.warp_exists[::ppto_emu::S.cur->linear >> 5];
    return ::ppto_emu::warp_sync(mask, ::ppto_emu::OP_VOTE, 0, 0, pred, "__all_sync") == m;
}
inline unsigned int __activemask() {
    using namespace ::ppto_emu;
    unsigned int base = S.cur->linear & ~31u, m = 0;
    for (unsigned int l = 0; l < 32 && base + l < S.n; ++l)
        if (S.fibers[base + l].state != DONE) m |= 1u << l;
    return m;
}
inline unsigned int __lanemask_lt() { return (1u << ::ppto_emu::lane_id()) - 1u; }
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
[[noreturn]] inline void __trap() { ::ppto_emu::fail("__trap() in " + ::ppto_emu::where()); }
inline void __brkpt() { __trap(); }
inline long long clock64() { return (long long)__builtin_ia32_rdtsc(); }

// ---- exported helpers (one copy per compiled module) --------------------------------------------
PPTO_EXPORT const char* ppto_last_error() { return ::ppto_emu::S.error.c_str(); }

// Allocates the fiber stacks for blocks of n threads ahead of time (in the parent of the forked
// children that run isolated launches, so that each child does not map them anew).
PPTO_EXPORT int ppto_reserve(unsigned int n) { return ::ppto_emu::ensure_fibers(n) ? 0 : 1; }

typedef int (*ppto_launcher_t)(unsigned int, unsigned int, unsigned int, unsigned int,
                               unsigned int, unsigned int, unsigned long long, void**, int,
                               unsigned long long);

// Runs a launcher in a forked child. The child copies the `nregions` memory regions (the
// writable arrays) into a shared mapping once the kernel has finished; the parent copies them
// back. Returns 0 (done), 1 (emulation error; message in err), -N (killed by signal N),
// 2 (timed out, killed), 3 (interrupted), 4 (system error; message in err).
PPTO_EXPORT int ppto_run_isolated(void* launcher, unsigned int gx, unsigned int gy,
                                  unsigned int gz, unsigned int bx, unsigned int by,
                                  unsigned int bz, unsigned long long smem, void** args, int order,
                                  unsigned long long seed, void** regions,
                                  const unsigned long long* sizes, int nregions, double timeout,
                                  char* err, unsigned long long errlen) {
    const size_t head = 4096;
    size_t total = head;
    for (int i = 0; i < nregions; ++i) total += sizes[i];
    void* shm = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED) {
        snprintf(err, errlen, "mmap of %zu bytes failed", total);
        return 4;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        munmap(shm, total);
        snprintf(err, errlen, "fork failed");
        return 4;
    }
    if (pid == 0) {
        int rc = ((ppto_launcher_t)launcher)(gx, gy, gz, bx, by, bz, smem, args, order, seed);
        if (rc == 0) {
            char* dst = (char*)shm + head;
            for (int i = 0; i < nregions; ++i) {
                memcpy(dst, regions[i], sizes[i]);
                dst += sizes[i];
            }
        } else {
            snprintf((char*)shm, head, "%s", ::ppto_emu::S.error.c_str());
        }
        fflush(stdout);
        fflush(stderr);
        _exit(rc == 0 ? 0 : 3);
    }
    int status = 0, result = 4;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long nap = 20000;  // ns, doubled up to 2 ms
    for (;;) {
        pid_t r = waitpid(pid, &status, timeout > 0 ? WNOHANG : 0);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
            snprintf(err, errlen, "waitpid failed");
            munmap(shm, total);
            return 4;
        }
        if (r < 0 && timeout <= 0) {  // interrupted (a signal for the caller, e.g. Ctrl-C)
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            munmap(shm, total);
            return 3;
        }
        if (timeout > 0) {
            struct timespec t1;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            if (dt > timeout) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                munmap(shm, total);
                return 2;
            }
            struct timespec ts = {0, nap};
            if (nanosleep(&ts, nullptr) != 0 && errno == EINTR) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                munmap(shm, total);
                return 3;
            }
            if (nap < 2000000) nap *= 2;
        }
    }
    if (WIFSIGNALED(status)) {
        result = -WTERMSIG(status);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        const char* src = (const char*)shm + head;
        for (int i = 0; i < nregions; ++i) {
            memcpy(regions[i], src, sizes[i]);
            src += sizes[i];
        }
        result = 0;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
        snprintf(err, errlen, "%s", (const char*)shm);
        result = 1;
    } else {
        snprintf(err, errlen, "the emulation process exited with status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        result = 4;
    }
    munmap(shm, total);
    return result;
}

#endif  // PPTO_EMU_H
