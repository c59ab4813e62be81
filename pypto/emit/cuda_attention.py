"""The fused attention kernel, FlashAttention-style, as CUDA C++ source.

``ppto_attention<T, M, A, O>`` computes, for every batch ``b`` and query row ``i``::

    s_ij = op(dot(q[b, i, :], k[b, j, :]), scale) + mask[b*mask_sb + i*mask_sr + j*mask_sc]
    out[b, i, :] = softmax_j(s_ij) @ v[b]

with ``op`` chosen by ``scale_op`` (0: none, 1: ``* scale``, 2: ``/ scale``) and the mask term
only when ``mask`` is not null. q is contiguous (B, Lq, D), k (B, Lk, D), v (B, Lk, Dv), out
(B, Lq, Dv); the mask strides are in elements and may be 0 (broadcast). T and M are the input
and mask element types (``float``, ``double``, ``__half``, ``__nv_bfloat16``), A the accumulator
(``float``, or ``double``) in which all arithmetic runs, O the output element type.

The score matrix is never stored: the keys go by in tiles of `KEYS` with an online softmax (a
running max ``m`` and sum ``l`` per row; what was accumulated is rescaled by ``exp(m_old -
m_new)`` when the max grows), so any Lk works. Like NumPy's ``softmax``, a row whose scores are
all -inf gives NaN, -inf scores otherwise get weight exactly 0, and NaN anywhere in a row's
scores (or in a column of v) gives NaN.

Launch (`launch`): one block of `THREADS` threads per (batch, tile of `ROWS` query rows), a 1-d
grid of ``B * ceil(Lq / ROWS)`` blocks. Thread t scores key ``j0 + t`` of the current tile
against all the block's rows (a serial dot product over D, so each k element loaded serves ROWS
rows), the tile's per-row max comes from a block reduction (warp shuffles, then shared memory),
the weights go to shared memory, and then thread t accumulates output columns ``t + c * THREADS``
(c < `COLS`) of every row from the v rows of the tile (coalesced loads, each serving ROWS rows).
Dv beyond ``THREADS * COLS`` = 256 columns is handled in further passes over the keys (slower:
the scores are recomputed per pass). The block's query rows are staged in shared memory when
``D <= MAX_STAGED_D``; beyond that they are read from global memory (slower).

Dynamic shared memory (`shared_mem_bytes`): ``itemsize(A) * ROWS * (WARPS + KEYS + D')`` bytes,
D' = D when ``D <= MAX_STAGED_D`` else 0 — at most 24,832 bytes (double, D = 256), under the
48 KiB that needs no opt-in. Two ``__syncthreads()`` per key tile.
"""

from __future__ import annotations

THREADS = 128  # threads per block (4 warps)
WARPS = THREADS // 32
KEYS = THREADS  # keys per tile: one per thread
ROWS = 8  # query rows per block
COLS = 2  # output columns per thread per pass over the keys
MAX_STAGED_D = 256  # the largest D whose query rows are staged in shared memory
MAX_GRID_X = 2**31 - 1

C_TYPES = ("float", "double", "__half", "__nv_bfloat16")
ACCUMULATOR_TYPES = ("float", "double")

_CONSTANTS = f"""
constexpr int kThreads = {THREADS};  // threads per block
constexpr int kWarps = kThreads / 32;
constexpr int kKeys = kThreads;  // keys per tile: thread t scores key j0 + t
constexpr int kRows = {ROWS};  // query rows per block
constexpr int kCols = {COLS};  // output columns per thread per pass over the keys
constexpr long long kMaxStagedD = {MAX_STAGED_D};  // q rows staged in shared memory up to this D
"""

_HELPERS = r"""
// ---- conversions: loads widen T / M to A, stores narrow A to O ---------------------------------
__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ double widen(double x) { return x; }
__device__ __forceinline__ float widen(__half x) { return __half2float(x); }
__device__ __forceinline__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename A, typename T>
__device__ __forceinline__ A load(const T* p, long long i) {
    return static_cast<A>(widen(p[i]));
}

__device__ __forceinline__ void store(float* p, float x) { *p = x; }
__device__ __forceinline__ void store(float* p, double x) { *p = static_cast<float>(x); }
__device__ __forceinline__ void store(double* p, float x) { *p = x; }
__device__ __forceinline__ void store(double* p, double x) { *p = x; }
__device__ __forceinline__ void store(__half* p, float x) { *p = __float2half(x); }
__device__ __forceinline__ void store(__half* p, double x) { *p = __double2half(x); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float x) { *p = __float2bfloat16(x); }
__device__ __forceinline__ void store(__nv_bfloat16* p, double x) { *p = __double2bfloat16(x); }

// ---- special values and exp in A ---------------------------------------------------------------
template <typename A>
struct Special;
template <>
struct Special<float> {
    __device__ static float neg_inf() { return -__int_as_float(0x7f800000); }
    __device__ static float nan() { return __int_as_float(0x7fc00000); }
};
template <>
struct Special<double> {
    __device__ static double neg_inf() { return -__longlong_as_double(0x7ff0000000000000LL); }
    __device__ static double nan() { return __longlong_as_double(0x7ff8000000000000LL); }
};

__device__ __forceinline__ float exp_a(float x) { return expf(x); }
__device__ __forceinline__ double exp_a(double x) { return exp(x); }

// ---- reductions over the block -----------------------------------------------------------------
// max that keeps NaN (fmax drops it): a NaN score must reach the row's max, as in NumPy
struct MaxOp {
    template <typename A>
    __device__ __forceinline__ A operator()(A a, A b) const { return (a > b || a != a) ? a : b; }
};
struct SumOp {
    template <typename A>
    __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};

template <typename A, typename Op>
__device__ __forceinline__ A warp_reduce(A x, Op op) {
    for (int o = 16; o > 0; o >>= 1) x = op(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

// v[r] <- op over all the block's threads of v[r], for each row r; every thread gets the results.
// Warps reduce with shuffles, then each thread combines the kWarps partials from `red` (kRows x
// kWarps in shared memory). One barrier inside; the caller puts a barrier between the reads here
// and the next call's writes to `red`.
template <typename A, typename Op>
__device__ __forceinline__ void block_reduce(A (&v)[kRows], A* red, Op op) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        const A w = warp_reduce(v[r], op);
        if (lane == 0) red[r * kWarps + warp] = w;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        A w = red[r * kWarps];
        for (int k = 1; k < kWarps; ++k) w = op(w, red[r * kWarps + k]);
        v[r] = w;
    }
}

// ---- the problem and the block's rows ----------------------------------------------------------
template <typename T, typename M, typename A, typename O>
struct Problem {
    const T* q;
    const T* k;
    const T* v;
    const M* mask;
    O* out;
    long long B, Lq, Lk, D, Dv, mask_sb, mask_sr, mask_sc;
    A scale;
    int scale_op;
};

// The block's query rows: rows i0 .. i0 + kRows - 1 of batch b. Rows past Lq read row Lq - 1 (so
// every load stays in bounds) and are never stored.
struct RowTile {
    long long b, i0, Lq;
    __device__ __forceinline__ long long row(int r) const {
        return i0 + r < Lq ? i0 + r : Lq - 1;
    }
};

// q_s[r * D + d] = q[b, row(r), d] in A, for all the block's rows.
template <typename T, typename M, typename A, typename O>
__device__ __forceinline__ void stage_queries(A* q_s, const Problem<T, M, A, O>& p,
                                              const RowTile& t) {
    for (long long x = threadIdx.x; x < kRows * p.D; x += kThreads) {
        const int r = (int)(x / p.D);
        q_s[x] = load<A>(p.q, (t.b * p.Lq + t.row(r)) * p.D + x % p.D);
    }
}

// ---- scores ------------------------------------------------------------------------------------
// s[r] = dot(q row r, krow) for each of the block's rows; q row r starts at qs + qoff[r] (the
// copy in shared memory, or q itself when D is too large to stage). Each k element serves kRows.
template <typename A, typename Q, typename T>
__device__ __forceinline__ void row_dots(A (&s)[kRows], const Q* qs,
                                         const long long (&qoff)[kRows], const T* krow,
                                         long long D) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) s[r] = A(0);
    for (long long d = 0; d < D; ++d) {
        const A kd = load<A>(krow, d);
#pragma unroll
        for (int r = 0; r < kRows; ++r) s[r] += load<A>(qs, qoff[r] + d) * kd;
    }
}

template <typename A>
__device__ __forceinline__ A scaled(A s, A scale, int scale_op) {
    return scale_op == 1 ? s * scale : (scale_op == 2 ? s / scale : s);
}

// s[r] = the score of key j for each of the block's rows: the dot product, scaled, plus the mask.
// Keys past Lk (the last tile's padding) score -inf; they get no weight either way.
template <typename T, typename M, typename A, typename O, typename Q>
__device__ __forceinline__ void key_scores(A (&s)[kRows], const Problem<T, M, A, O>& p,
                                           const RowTile& t, const Q* qs,
                                           const long long (&qoff)[kRows], long long j) {
    if (j >= p.Lk) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) s[r] = Special<A>::neg_inf();
        return;
    }
    row_dots(s, qs, qoff, p.k + (t.b * p.Lk + j) * p.D, p.D);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        A x = scaled(s[r], p.scale, p.scale_op);
        if (p.mask != nullptr)
            x += load<A>(p.mask, t.b * p.mask_sb + t.row(r) * p.mask_sr + j * p.mask_sc);
        s[r] = x;
    }
}

// ---- the online softmax ------------------------------------------------------------------------
// Folds one key tile into each row's running state. The max grows to m_new = max(m, tile max);
// what was accumulated under the old max (this thread's partial sum l and its output columns
// acc) is rescaled by exp(m - m_new); this thread's key gets weight exp(s - m_new), written to
// p_s for the value pass. While a row's scores are all -inf (m_new = -inf) nothing gets weight:
// exp(-inf - -inf) would be NaN, yet a later finite score must still win. A row that stays all
// -inf is made NaN when stored, as NumPy's softmax gives.
template <typename A>
__device__ __forceinline__ void online_softmax_step(A (&m)[kRows], A (&l)[kRows],
                                                    A (&acc)[kRows][kCols], const A (&s)[kRows],
                                                    const A (&tile_max)[kRows], bool valid,
                                                    A* p_s) {
    const A ninf = Special<A>::neg_inf();
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        const A m_new = MaxOp()(m[r], tile_max[r]);
        const A alpha = m_new == ninf ? A(1) : exp_a(m[r] - m_new);
        const A w = (valid && m_new != ninf) ? exp_a(s[r] - m_new) : A(0);
        l[r] = l[r] * alpha + w;
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[r][c] *= alpha;
        m[r] = m_new;
        p_s[r * kKeys + threadIdx.x] = w;
    }
}

// acc[r][c] += sum over the tile's n keys jj of p_s[r][jj] * vtile[jj, col(c)], for this thread's
// output columns col(c) = c0 + threadIdx.x + c * kThreads (coalesced loads of v; each serves
// kRows rows).
template <typename T, typename A>
__device__ __forceinline__ void accumulate_values(A (&acc)[kRows][kCols], const A* p_s,
                                                  const T* vtile, int n, long long Dv,
                                                  long long c0) {
    for (int jj = 0; jj < n; ++jj) {
        const T* vrow = vtile + jj * Dv;
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const long long col = c0 + threadIdx.x + c * kThreads;
            if (col < Dv) {
                const A x = load<A>(vrow, col);
#pragma unroll
                for (int r = 0; r < kRows; ++r) acc[r][c] += p_s[r * kKeys + jj] * x;
            }
        }
    }
}

// out[b, i0 + r, col(c)] = acc[r][c] / l[r] for the rows below Lq and the columns below Dv; NaN
// for a row whose scores were all -inf.
template <typename T, typename M, typename A, typename O>
__device__ __forceinline__ void store_rows(const Problem<T, M, A, O>& p, const RowTile& t,
                                           const A (&m)[kRows], const A (&l)[kRows],
                                           const A (&acc)[kRows][kCols], long long c0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        const long long i = t.i0 + r;
        if (i >= p.Lq) break;
        O* orow = p.out + (t.b * p.Lq + i) * p.Dv;
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const long long col = c0 + threadIdx.x + c * kThreads;
            if (col >= p.Dv) continue;
            const bool all_neg_inf = m[r] == Special<A>::neg_inf();
            store(orow + col, all_neg_inf ? Special<A>::nan() : acc[r][c] / l[r]);
        }
    }
}

// One pass over all the keys for the output columns c0 .. c0 + kThreads * kCols - 1.
template <typename T, typename M, typename A, typename O, typename Q>
__device__ __forceinline__ void attend_pass(const Problem<T, M, A, O>& p, const RowTile& t,
                                            const Q* qs, const long long (&qoff)[kRows], A* red,
                                            A* p_s, long long c0) {
    A m[kRows], l[kRows], acc[kRows][kCols];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        m[r] = Special<A>::neg_inf();
        l[r] = A(0);
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[r][c] = A(0);
    }
    for (long long j0 = 0; j0 < p.Lk; j0 += kKeys) {
        const long long j = j0 + threadIdx.x;
        A s[kRows], tile_max[kRows];
        key_scores(s, p, t, qs, qoff, j);
#pragma unroll
        for (int r = 0; r < kRows; ++r) tile_max[r] = s[r];
        block_reduce(tile_max, red, MaxOp());  // barrier: the previous tile's p_s reads are done
        online_softmax_step(m, l, acc, s, tile_max, j < p.Lk, p_s);
        __syncthreads();  // p_s holds the whole tile's weights; red's reads are done
        const int n = p.Lk - j0 < kKeys ? (int)(p.Lk - j0) : kKeys;
        accumulate_values(acc, p_s, p.v + (t.b * p.Lk + j0) * p.Dv, n, p.Dv, c0);
    }
    block_reduce(l, red, SumOp());  // each row's sum: the threads' partial sums
    store_rows(p, t, m, l, acc, c0);
    __syncthreads();  // red and p_s are written again by the next pass
}
"""

_KERNEL = r"""
// One block per (batch, tile of kRows query rows); see pypto/emit/cuda_attention.py.
// Dynamic shared memory, in A: red[kRows * kWarps], p_s[kRows * kKeys], then q_s[kRows * D] when
// D <= kMaxStagedD.
template <typename T, typename M, typename A, typename O>
__global__ void __launch_bounds__(ppto_attention_detail::kThreads)
ppto_attention(const T* q, const T* k, const T* v, const M* mask, O* out, long long B,
               long long Lq, long long Lk, long long D, long long Dv, long long mask_sb,
               long long mask_sr, long long mask_sc, A scale, int scale_op) {
    using namespace ppto_attention_detail;
    PPTO_DYN_SMEM(unsigned char, ppto_attention_smem);
    A* red = reinterpret_cast<A*>(ppto_attention_smem);
    A* p_s = red + kRows * kWarps;
    A* q_s = p_s + kRows * kKeys;
    const Problem<T, M, A, O> p{q, k, v, mask, out, B, Lq, Lk, D, Dv,
                                mask_sb, mask_sr, mask_sc, scale, scale_op};
    const long long row_tiles = (Lq + kRows - 1) / kRows;
    const RowTile t{(long long)blockIdx.x / row_tiles, (long long)blockIdx.x % row_tiles * kRows,
                    Lq};
    long long qoff[kRows];
    if (D <= kMaxStagedD) {  // the block's q rows in shared memory
        stage_queries(q_s, p, t);
#pragma unroll
        for (int r = 0; r < kRows; ++r) qoff[r] = r * D;
        __syncthreads();
        for (long long c0 = 0; c0 < Dv; c0 += kThreads * kCols)
            attend_pass(p, t, static_cast<const A*>(q_s), qoff, red, p_s, c0);
    } else {  // large D: q rows read from global memory
#pragma unroll
        for (int r = 0; r < kRows; ++r) qoff[r] = (t.b * Lq + t.row(r)) * D;
        for (long long c0 = 0; c0 < Dv; c0 += kThreads * kCols)
            attend_pass(p, t, q, qoff, red, p_s, c0);
    }
}
"""

SOFTMAX_THREADS = 256  # threads per block of ppto_softmax_rows
_SOFTMAX_CONSTANTS = f"""
namespace ppto_attention_detail {{
constexpr int kSoftmaxThreads = {SOFTMAX_THREADS};
}}
"""
_SOFTMAX_ROWS = r"""
// The library-product path (see softmax_rows_name): s holds scores q @ k^T, one row of Lk per
// (batch b0 + i / rows, query row r0 + i % rows); each is scaled, masked and replaced by its
// softmax in place. One block of kSoftmaxThreads per row (grid-stride over rows).
namespace ppto_attention_detail {
// op over every thread of the block (blockDim.x a multiple of 32); all threads get the result.
template <typename A, typename Op>
__device__ __forceinline__ A block_all(A x, A* red, Op op) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    x = warp_reduce(x, op);
    __syncthreads();  // the previous call's reads of red are done
    if (lane == 0) red[warp] = x;
    __syncthreads();
    A w = red[0];
    for (int k = 1; k < warps; ++k) w = op(w, red[k]);
    return w;
}
}  // namespace ppto_attention_detail

template <typename M, typename A>
__global__ void __launch_bounds__(ppto_attention_detail::kSoftmaxThreads)
ppto_softmax_rows(A* s, const M* mask, long long n, long long rows, long long Lk, long long b0,
                  long long r0, long long mask_sb, long long mask_sr, long long mask_sc, A scale,
                  int scale_op) {
    using namespace ppto_attention_detail;
    __shared__ A red[32];
    for (long long i = blockIdx.x; i < n; i += gridDim.x) {
        A* x = s + i * Lk;
        const M* mrow = mask ? mask + (b0 + i / rows) * mask_sb + (r0 + i % rows) * mask_sr
                             : nullptr;
        A mx = Special<A>::neg_inf();
        for (long long j = threadIdx.x; j < Lk; j += blockDim.x) {
            A v = x[j];
            if (scale_op == 1) v = v * scale;
            else if (scale_op == 2) v = v / scale;
            if (mrow) v = v + load<A>(mrow, j * mask_sc);
            x[j] = v;
            mx = MaxOp()(mx, v);
        }
        mx = block_all(mx, red, MaxOp());
        A sum = 0;
        for (long long j = threadIdx.x; j < Lk; j += blockDim.x) {
            const A e = exp_a(x[j] - mx);
            x[j] = e;
            sum += e;
        }
        sum = block_all(sum, red, SumOp());
        for (long long j = threadIdx.x; j < Lk; j += blockDim.x) x[j] = x[j] / sum;
    }
}
"""

SOURCE: str = (
    "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\n"
    "#ifndef PPTO_DYN_SMEM\n#define PPTO_DYN_SMEM(T, name) extern __shared__ T name[]\n#endif\n\n"
    "namespace ppto_attention_detail {\n"
    + _CONSTANTS
    + _HELPERS
    + "}  // namespace ppto_attention_detail\n"
    + _KERNEL
    + _SOFTMAX_CONSTANTS
    + _SOFTMAX_ROWS
)
SCORES_BUDGET = 1 << 28  # bytes of scores the library-product path holds at a time


def softmax_rows_name(M: str, A: str) -> str:
    """The row-softmax kernel's name expression, e.g. ``ppto_softmax_rows<float, float>``."""
    if M not in C_TYPES or A not in ACCUMULATOR_TYPES:
        raise ValueError(f"mask type {M!r} / accumulator {A!r} not supported")
    return f"ppto_softmax_rows<{M}, {A}>"


def score_steps(B: int, Lq: int, Lk: int, itemsize_A: int, budget: int | None = None):
    """(b0, b1, r0, r1) steps of the library-product path: whole batches while their scores fit
    in ``budget`` bytes (default SCORES_BUDGET), else blocks of query rows of one batch (at
    least one row)."""
    budget = SCORES_BUDGET if budget is None else budget
    row = max(1, Lk * itemsize_A)
    if Lq * row <= budget:
        step = max(1, budget // max(1, Lq * row))
        return [(b0, min(B, b0 + step), 0, Lq) for b0 in range(0, B, step)]
    rows = max(1, budget // row)
    return [(b, b + 1, r0, min(Lq, r0 + rows)) for b in range(B) for r0 in range(0, Lq, rows)]


def name_expression(T: str, M: str, A: str, Out: str) -> str:
    """The kernel's name expression, e.g. ``ppto_attention<float, float, float, float>``."""
    for what, name, allowed in (
        ("T", T, C_TYPES),
        ("M", M, C_TYPES),
        ("A", A, ACCUMULATOR_TYPES),
        ("O", Out, C_TYPES),
    ):
        if name not in allowed:
            raise ValueError(f"{what} must be one of {allowed}, got {name!r}")
    return f"ppto_attention<{T}, {M}, {A}, {Out}>"


def shared_mem_bytes(D: int, itemsize_A: int) -> int:
    """Dynamic shared memory of one block: ``itemsize_A * ROWS * (WARPS + KEYS + D')``."""
    staged = D if D <= MAX_STAGED_D else 0
    return itemsize_A * ROWS * (WARPS + KEYS + staged)


def launch(
    B: int, Lq: int, Lk: int, D: int, Dv: int, itemsize_A: int
) -> tuple[tuple[int], tuple[int], int]:
    """(grid, block, shared_mem) for `ppto_attention`: ``B * ceil(Lq / ROWS)`` blocks of
    `THREADS` threads. A grid of 0 blocks (B or Lq is 0) is not to be launched."""
    if min(B, Lq, Lk, D, Dv) < 0:
        raise ValueError(f"negative size in B={B}, Lq={Lq}, Lk={Lk}, D={D}, Dv={Dv}")
    if itemsize_A not in (4, 8):
        raise ValueError(f"the accumulator is float or double; got itemsize {itemsize_A}")
    blocks = B * (-(-Lq // ROWS))
    if blocks > MAX_GRID_X:
        raise ValueError(f"{blocks} blocks exceed the grid limit {MAX_GRID_X}")
    return (blocks,), (THREADS,), shared_mem_bytes(D, itemsize_A)
