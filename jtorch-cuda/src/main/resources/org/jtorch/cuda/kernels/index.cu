// Indexing kernels (IndexKernels on CUDA). The Java side (IndexPlan) restrides every operand to one
// iteration shape, as ATen's index kernels and the CPU backend do, so four loops cover the family:
//  - jt_index_check_<i32|i64>(index, n, Strided, low, high, record): atomicMin of the row-major
//    position of every index outside [low, high) into record[0] (set to ~0 by the host first), then
//    jt_index_check_value_<i32|i64>(index, Strided, record), one thread, copies the index value at that
//    position into record[1]. The record lives in mapped pinned memory: the host reads it at its next
//    synchronisation (or at once, in synchronous-check mode, before any data kernel runs).
//  The data kernels below never trust an index: an element whose index lies outside its dimension (after
//  negative wrap) is skipped (gather writes 0), so a bad index the host has not seen yet cannot fault.
//  - jt_index_gather_<T>(out, src, n, IndexGeometry): out[e] = src[e + sum_k index_k[e] * step_k]
//    (index_select, gather, advanced indexing).
//  - jt_index_scatter_<T>(dst, values, n, IndexGeometry): dst[e + sum_k index_k[e] * step_k] = values[e]
//    (scatter, index_copy, index_fill, index_put); duplicates keep one of the written values.
//  - jt_index_scatter_add_<T>(dst, values, n, IndexGeometry, alpha, alpha_long): the same with
//    dst += alpha * values as an atomic update, in the CPU backend's arithmetic (float for 16/32-bit
//    floats rounded once on store, double for float64, wrapping int64 for integers, bool = (dst +
//    alpha * v) != 0). float/double/int32/int64 use atomicAdd; 8- and 16-bit types (bool, u8, i8, i16,
//    f16, bf16) a compare-and-swap loop on the aligned 32-bit word holding the element (allocations are
//    512-byte granular, so that word is always inside the tensor's storage).
// Compaction in row-major order (nonzero, masked_select), deterministic for any grid: block b owns the
// elements [b * chunk, (b + 1) * chunk) and
//  - jt_index_count_nonzero_<T>(x, n, Strided, chunk, block_counts) writes its count of nonzero elements;
//  - jt_index_nonzero_<T>(x, n, Strided, chunk, block_counts, out, rows) starts at the sum of the
//    counts of the blocks before it and writes the coordinates (over Strided's uncoalesced sizes) of its
//    nonzero elements in order, a 256-element tile at a time with a ballot scan;
//  - jt_index_masked_select_<T>(self, mask, n, Strided, chunk, block_counts, out, capacity) does the same
//    with the self element where the uint8/bool mask (operand 1) is nonzero.
// Launch with blockDim.x == 256 (JT_INDEX_THREADS) for the compaction kernels; the others take any grid.
// The scatters take no __restrict__: a user may scatter a tensor into itself (x.index_add_(0, i, x)).
#include "jtorch_cuda.cuh"

// Most index tensors one launch reads (advanced indexing indexes at most JT_MAX_DIMS dimensions).
#define JT_INDEX_MAX 8
#define JT_INDEX_THREADS 256

namespace jt {

// The iteration shape of a gather or scatter: operand 0 is the dense side (gather's out, scatter's
// values), operand 1 the indexed side (gather's src, scatter's dst) with stride 0 where the indices
// select; index k has its own strides, dtype (bit k of int32_mask: int32, else int64), the size of the
// dimension it selects in (negative values wrap by it where bit k of wrap_mask is set, as the op allows)
// and the element step it moves the indexed side by.
struct IndexGeometry {
    int ndim;
    int nindex;
    int int32_mask;
    int wrap_mask;
    jt_i64 size[JT_MAX_DIMS];
    jt_i64 stride[2][JT_MAX_DIMS];
    jt_i64 index_stride[JT_INDEX_MAX][JT_MAX_DIMS];
    jt_i64 index_size[JT_INDEX_MAX];
    jt_i64 index_step[JT_INDEX_MAX];
    jt_u64 index_ptr[JT_INDEX_MAX];
};

// Element offsets of iteration element i: dense side in off[0], indexed side (indices applied) in off[1].
// False when an index lies outside its dimension: the element is then skipped (see the file comment).
__device__ __forceinline__ bool index_offsets(const IndexGeometry& g, jt_i64 i, jt_i64 (&off)[2]) {
    jt_i64 index_off[JT_INDEX_MAX];
    off[0] = 0;
    off[1] = 0;
    for (int k = 0; k < g.nindex; k++) index_off[k] = 0;
    for (int d = g.ndim - 1; d >= 0; d--) {
        jt_i64 c = i % g.size[d];
        i /= g.size[d];
        off[0] += c * g.stride[0][d];
        off[1] += c * g.stride[1][d];
        for (int k = 0; k < g.nindex; k++) index_off[k] += c * g.index_stride[k][d];
    }
    for (int k = 0; k < g.nindex; k++) {
        jt_i64 v = (g.int32_mask >> k) & 1 ? (jt_i64)((const jt_i32*)g.index_ptr[k])[index_off[k]]
                                           : ((const jt_i64*)g.index_ptr[k])[index_off[k]];
        if (v < 0 && ((g.wrap_mask >> k) & 1)) v += g.index_size[k];
        if ((jt_u64)v >= (jt_u64)g.index_size[k]) return false;
        off[1] += v * g.index_step[k];
    }
    return true;
}

template <typename T>
__device__ __forceinline__ void index_gather(T* __restrict__ out, const T* __restrict__ src, jt_i64 n, const IndexGeometry& g) {
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[2];
        const bool valid = index_offsets(g, i, off);  // computes off[0]: sequenced before its use below
        out[off[0]] = valid ? src[off[1]] : Scalar<T>::store(0);
    }
}

template <typename T>
__device__ __forceinline__ void index_scatter(T* dst, const T* values, jt_i64 n, const IndexGeometry& g) {
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[2];
        if (index_offsets(g, i, off)) dst[off[1]] = values[off[0]];
    }
}

// ---------------------------------------------------------------- atomic accumulation

// The raw bits of an 8- or 16-bit element and back, for the compare-and-swap loop.
template <typename T> struct Raw {
    __device__ static jt_u32 bits(T v) { return sizeof(T) == 1 ? (jt_u32)(jt_u8)v : (jt_u32)(unsigned short)v; }
    __device__ static T value(jt_u32 b) { return sizeof(T) == 1 ? (T)(jt_u8)b : (T)(unsigned short)b; }
};
template <> struct Raw<bool> {
    __device__ static jt_u32 bits(bool v) { return v ? 1u : 0u; }
    __device__ static bool value(jt_u32 b) { return (b & 0xffu) != 0; }
};
template <> struct Raw<half> {
    __device__ static jt_u32 bits(half v) { return v.bits; }
    __device__ static half value(jt_u32 b) { half h; h.bits = (unsigned short)b; return h; }
};
template <> struct Raw<bfloat16> {
    __device__ static jt_u32 bits(bfloat16 v) { return v.bits; }
    __device__ static bfloat16 value(jt_u32 b) { bfloat16 h; h.bits = (unsigned short)b; return h; }
};

// dst + alpha * v for one element in the CPU backend's arithmetic (CpuIndexKernels.accumulateElement).
template <typename T> struct AddScaled {
    __device__ static T apply(T dst, T v, double, jt_i64 alpha_long) { return (T)((jt_i64)dst + alpha_long * (jt_i64)v); }
};
template <> struct AddScaled<bool> {
    __device__ static bool apply(bool dst, bool v, double, jt_i64 alpha_long) { return (jt_i64)dst + alpha_long * (jt_i64)v != 0; }
};
template <> struct AddScaled<half> {
    __device__ static half apply(half dst, half v, double alpha, jt_i64) {
        return float_to_half(__fadd_rn(half_to_float(dst), __fmul_rn((float)alpha, half_to_float(v))));
    }
};
template <> struct AddScaled<bfloat16> {
    __device__ static bfloat16 apply(bfloat16 dst, bfloat16 v, double alpha, jt_i64) {
        return float_to_bfloat16(__fadd_rn(bfloat16_to_float(dst), __fmul_rn((float)alpha, bfloat16_to_float(v))));
    }
};

// *p = AddScaled(*p, v) atomically for an 8- or 16-bit T: CAS on the aligned 32-bit word that holds it.
template <typename T> __device__ __forceinline__ void atomic_add_subword(T* p, T v, double alpha, jt_i64 alpha_long) {
    jt_u32* word = (jt_u32*)((jt_u64)p & ~(jt_u64)3);
    const jt_u32 shift = (jt_u32)((jt_u64)p & 3) * 8u;
    const jt_u32 mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    jt_u32 old = *word, assumed;
    do {
        assumed = old;
        T current = Raw<T>::value((assumed & mask) >> shift);
        jt_u32 next = (assumed & ~mask) | ((Raw<T>::bits(AddScaled<T>::apply(current, v, alpha, alpha_long)) << shift) & mask);
        old = atomicCAS(word, assumed, next);
    } while (assumed != old);
}

template <typename T> struct AtomicAdd {
    __device__ static void apply(T* p, T v, double alpha, jt_i64 alpha_long) { atomic_add_subword<T>(p, v, alpha, alpha_long); }
};
template <> struct AtomicAdd<float> {
    __device__ static void apply(float* p, float v, double alpha, jt_i64) { atomicAdd(p, __fmul_rn((float)alpha, v)); }
};
template <> struct AtomicAdd<double> {
    __device__ static void apply(double* p, double v, double alpha, jt_i64) { atomicAdd(p, __dmul_rn(alpha, v)); }
};
// Two's-complement addition is the same operation on unsigned words, so the int64 product wraps as on the CPU.
template <> struct AtomicAdd<jt_i32> {
    __device__ static void apply(jt_i32* p, jt_i32 v, double, jt_i64 alpha_long) {
        atomicAdd((jt_u32*)p, (jt_u32)(jt_u64)(alpha_long * (jt_i64)v));
    }
};
template <> struct AtomicAdd<jt_i64> {
    __device__ static void apply(jt_i64* p, jt_i64 v, double, jt_i64 alpha_long) {
        atomicAdd((jt_u64*)p, (jt_u64)(alpha_long * v));
    }
};

template <typename T>
__device__ __forceinline__ void index_scatter_add(T* dst, const T* values, jt_i64 n, const IndexGeometry& g,
                                                  double alpha, jt_i64 alpha_long) {
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[2];
        if (index_offsets(g, i, off)) AtomicAdd<T>::apply(dst + off[1], values[off[0]], alpha, alpha_long);
    }
}

// ---------------------------------------------------------------- index validation

template <typename I>
__device__ __forceinline__ void index_check(const I* __restrict__ index, jt_i64 n, const Strided& s, jt_i64 low, jt_i64 high,
                                            jt_u64* first_bad) {
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[1];
        strided_offsets<1>(s, i, off);
        jt_i64 v = (jt_i64)index[off[0]];
        if (v < low || v >= high) atomicMin(first_bad, (jt_u64)i);
    }
}

// record[1] = the index at row-major position record[0], if a check found one; launched with one thread
// after index_check on the same stream.
template <typename I>
__device__ __forceinline__ void index_check_value(const I* __restrict__ index, const Strided& s, jt_u64* record) {
    if (global_thread() != 0 || record[0] == ~(jt_u64)0) return;
    jt_i64 off[1];
    strided_offsets<1>(s, (jt_i64)record[0], off);
    record[1] = (jt_u64)(jt_i64)index[off[0]];
}

// ---------------------------------------------------------------- row-major compaction

// Whether an element counts for nonzero: floats compare as floats (NaN counts, -0.0 does not).
template <typename T> __device__ __forceinline__ bool is_nonzero(T v) { return Scalar<T>::load(v) != 0; }
template <> __device__ __forceinline__ bool is_nonzero<jt_u8>(jt_u8 v) { return v != 0; }

// Exclusive prefix of `flag` over the block (blockDim.x == JT_INDEX_THREADS) and the block's total.
__device__ __forceinline__ int block_exclusive_scan(bool flag, int* warp_totals, int* total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned ballot = __ballot_sync(0xffffffffu, flag);
    int prefix = __popc(ballot & ((1u << lane) - 1u));
    if (lane == 0) warp_totals[warp] = __popc(ballot);
    __syncthreads();
    int before = 0, sum = 0;
    for (int w = 0; w < JT_INDEX_THREADS / 32; w++) {
        if (w < warp) before += warp_totals[w];
        sum += warp_totals[w];
    }
    __syncthreads();
    *total = sum;
    return before + prefix;
}

// The number of selected elements of the blocks before this one: its first output position.
__device__ __forceinline__ jt_i64 block_start(const jt_i64* __restrict__ block_counts, jt_i64* shared) {
    jt_i64 s = 0;
    for (jt_i64 b = threadIdx.x; b < blockIdx.x; b += blockDim.x) s += block_counts[b];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = s;
    __syncthreads();
    jt_i64 total = 0;
    for (int w = 0; w < JT_INDEX_THREADS / 32; w++) total += shared[w];
    __syncthreads();
    return total;
}

template <typename T>
__device__ __forceinline__ void count_nonzero(const T* __restrict__ x, jt_i64 n, const Strided& s, jt_i64 chunk,
                                              jt_i64* __restrict__ block_counts) {
    __shared__ int warp_totals[JT_INDEX_THREADS / 32];
    const jt_i64 begin = blockIdx.x * chunk, end = min(n, begin + chunk);
    jt_i64 count = 0;
    for (jt_i64 tile = begin; tile < end; tile += JT_INDEX_THREADS) {
        const jt_i64 i = tile + threadIdx.x;
        bool flag = false;
        if (i < end) {
            jt_i64 off[1];
            strided_offsets<1>(s, i, off);
            flag = is_nonzero<T>(x[off[0]]);
        }
        int total;
        block_exclusive_scan(flag, warp_totals, &total);
        count += total;
    }
    if (threadIdx.x == 0) block_counts[blockIdx.x] = count;
}

template <typename T>
__device__ __forceinline__ void nonzero(const T* __restrict__ x, jt_i64 n, const Strided& s, jt_i64 chunk,
                                        const jt_i64* __restrict__ block_counts, jt_i64* __restrict__ out, jt_i64 rows) {
    __shared__ int warp_totals[JT_INDEX_THREADS / 32];
    __shared__ jt_i64 partial[JT_INDEX_THREADS / 32];
    jt_i64 position = block_start(block_counts, partial);
    const jt_i64 begin = blockIdx.x * chunk, end = min(n, begin + chunk);
    for (jt_i64 tile = begin; tile < end; tile += JT_INDEX_THREADS) {
        const jt_i64 i = tile + threadIdx.x;
        bool flag = false;
        if (i < end) {
            jt_i64 off[1];
            strided_offsets<1>(s, i, off);
            flag = is_nonzero<T>(x[off[0]]);
        }
        int total;
        const jt_i64 at = position + block_exclusive_scan(flag, warp_totals, &total);
        if (flag && at < rows) {
            jt_i64 rest = i;
            for (int d = s.ndim - 1; d >= 0; d--) {
                out[at * s.ndim + d] = rest % s.size[d];
                rest /= s.size[d];
            }
        }
        position += total;
    }
}

template <typename T>
__device__ __forceinline__ void masked_select(const T* __restrict__ self, const jt_u8* __restrict__ mask, jt_i64 n, const Strided& s,
                                              jt_i64 chunk, const jt_i64* __restrict__ block_counts, T* __restrict__ out,
                                              jt_i64 capacity) {
    __shared__ int warp_totals[JT_INDEX_THREADS / 32];
    __shared__ jt_i64 partial[JT_INDEX_THREADS / 32];
    jt_i64 position = block_start(block_counts, partial);
    const jt_i64 begin = blockIdx.x * chunk, end = min(n, begin + chunk);
    for (jt_i64 tile = begin; tile < end; tile += JT_INDEX_THREADS) {
        const jt_i64 i = tile + threadIdx.x;
        bool flag = false;
        jt_i64 off[2] = {0, 0};
        if (i < end) {
            strided_offsets<2>(s, i, off);
            flag = mask[off[1]] != 0;
        }
        int total;
        const jt_i64 at = position + block_exclusive_scan(flag, warp_totals, &total);
        if (flag && at < capacity) out[at] = self[off[0]];
        position += total;
    }
}

}  // namespace jt

using namespace jt;

// Bool elements are read as bytes by the compaction kernels, so any nonzero byte counts as true.
#define JT_INDEX_ENTRIES(T, R, suffix) \
    extern "C" __global__ void jt_index_gather_##suffix(T* out, const T* src, jt_i64 n, IndexGeometry g) { \
        index_gather<T>(out, src, n, g); } \
    extern "C" __global__ void jt_index_scatter_##suffix(T* dst, const T* values, jt_i64 n, IndexGeometry g) { \
        index_scatter<T>(dst, values, n, g); } \
    extern "C" __global__ void jt_index_scatter_add_##suffix(T* dst, const T* values, jt_i64 n, IndexGeometry g, double alpha, \
                                                            jt_i64 alpha_long) { \
        index_scatter_add<T>(dst, values, n, g, alpha, alpha_long); } \
    extern "C" __global__ void jt_index_count_nonzero_##suffix(const R* x, jt_i64 n, Strided s, jt_i64 chunk, \
                                                              jt_i64* block_counts) { \
        count_nonzero<R>(x, n, s, chunk, block_counts); } \
    extern "C" __global__ void jt_index_nonzero_##suffix(const R* x, jt_i64 n, Strided s, jt_i64 chunk, const jt_i64* block_counts, \
                                                        jt_i64* out, jt_i64 rows) { \
        nonzero<R>(x, n, s, chunk, block_counts, out, rows); } \
    extern "C" __global__ void jt_index_masked_select_##suffix(const T* self, const jt_u8* mask, jt_i64 n, Strided s, jt_i64 chunk, \
                                                              const jt_i64* block_counts, T* out, jt_i64 capacity) { \
        masked_select<T>(self, mask, n, s, chunk, block_counts, out, capacity); }

JT_INDEX_ENTRIES(bool, jt_u8, bool)
JT_INDEX_ENTRIES(jt_u8, jt_u8, u8)
JT_INDEX_ENTRIES(jt_i8, jt_i8, i8)
JT_INDEX_ENTRIES(jt_i16, jt_i16, i16)
JT_INDEX_ENTRIES(jt_i32, jt_i32, i32)
JT_INDEX_ENTRIES(jt_i64, jt_i64, i64)
JT_INDEX_ENTRIES(half, half, f16)
JT_INDEX_ENTRIES(bfloat16, bfloat16, bf16)
JT_INDEX_ENTRIES(float, float, f32)
JT_INDEX_ENTRIES(double, double, f64)

extern "C" __global__ void jt_index_check_i32(const jt_i32* index, jt_i64 n, Strided s, jt_i64 low, jt_i64 high, jt_u64* first_bad) {
    index_check<jt_i32>(index, n, s, low, high, first_bad);
}
extern "C" __global__ void jt_index_check_i64(const jt_i64* index, jt_i64 n, Strided s, jt_i64 low, jt_i64 high, jt_u64* first_bad) {
    index_check<jt_i64>(index, n, s, low, high, first_bad);
}
extern "C" __global__ void jt_index_check_value_i32(const jt_i32* index, Strided s, jt_u64* record) {
    index_check_value<jt_i32>(index, s, record);
}
extern "C" __global__ void jt_index_check_value_i64(const jt_i64* index, Strided s, jt_u64* record) {
    index_check_value<jt_i64>(index, s, record);
}
