// multinomial's draws on the device, from the buffer core's RandomOpKernels.multinomial fills there: the weights of
// `rows` rows of `c` categories as float64 (buf[r * c + j]), then the float64 uniforms (with replacement:
// buf[rows * c + r * k + s]) or log(1 - u) (without: buf[rows * c + r * c + j]), drawn by the Philox fills, so the
// numbers are the CPU's. One block a row (grid-stride over rows); each row's draws are the CPU host loop's
// (RandomOpKernels.Sampler), so the indices equal the CPU's bit for bit:
//   with replacement: the cumulative weights in the CPU's chunks (`chunk` categories a thread, at most
//     JT_MULTINOMIAL_THREADS chunks: each chunk's running sum, then the chunks' offsets in order, added), in place;
//     sample s = the count of cumulative weights at or below u_s * total, capped at the last category whose
//     cumulative weight reaches the total (a zero weight's empty interval is never drawn);
//   without: keys p / -log(1 - u) (a zero weight's key -1, after every positive one), in place of the logs;
//     the k largest in descending order, ties to the lower index, by k rounds of a block arg-max.
// Bad rows are not drawn from (their samples are 0): the row's check (a negative weight, an infinite or NaN one, a
// sum that is not positive: bits 1, 2, 4) goes into record[0] as (row << 3 | bits), the first bad row winning by
// atomicMin, in mapped pinned memory the host reads at its next synchronisation (IndexCheckLog), as index checks do.
// Entries: jt_multinomial_with_replacement(buf, rows, c, k, chunk, out, record)
//          jt_multinomial_without_replacement(buf, rows, c, k, out, record)
// launched with JT_MULTINOMIAL_THREADS threads a block.
#include "jtorch_cuda.cuh"

#define JT_MULTINOMIAL_THREADS 256

namespace jt {

// The row's check bits over its weights, every thread of the block taking part; shared `flags` returned to all.
__device__ __forceinline__ int row_check(const double* p, jt_i64 c, int* flags) {
    if (threadIdx.x == 0) *flags = 0;
    __syncthreads();
    int mine = 0;
    bool positive = false;
    for (jt_i64 j = threadIdx.x; j < c; j += blockDim.x) {
        double v = p[j];
        if (v < 0) mine |= 1;
        if (!(v - v == 0)) mine |= 2;  // inf or NaN
        positive |= v > 0;
    }
    // Without a negative, infinite or NaN weight the sum is positive exactly when one weight is (an overflow to
    // infinity is still positive): the CPU's sum > 0 in any order of additions.
    if (positive) mine |= 8;
    if (mine != 0) atomicOr(flags, mine);
    __syncthreads();
    int f = *flags;
    __syncthreads();
    int bad = f & 3;
    if (!(f & 8)) bad |= 4;
    return bad;
}

// Whether row r of weights p is bad: then reported into the record (the first bad row wins) and its k samples o set to 0.
__device__ __forceinline__ bool refuse_bad_row(const double* p, jt_i64 c, jt_i64 k, jt_i64 r, jt_i64* o, jt_u64* record, int* flags) {
    int bad = row_check(p, c, flags);
    if (bad == 0) return false;
    if (threadIdx.x == 0) atomicMin(record, ((jt_u64)r << 3) | (jt_u64)bad);
    for (jt_i64 s = threadIdx.x; s < k; s += blockDim.x) o[s] = 0;
    return true;
}

}  // namespace jt

using namespace jt;

extern "C" __global__ void jt_multinomial_with_replacement(double* buf, jt_i64 rows, jt_i64 c, jt_i64 k, jt_i64 chunk, jt_i64* out,
                                                           jt_u64* record) {
    __shared__ int flags;
    __shared__ jt_i64 last_positive;
    __shared__ double chunk_offset[JT_MULTINOMIAL_THREADS];
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        double* cdf = buf + r * c;
        const double* u = buf + rows * c + r * k;
        jt_i64* o = out + r * k;
        if (refuse_bad_row(cdf, c, k, r, o, record, &flags)) continue;
        // Each thread's chunk summed on its own, then the chunks' offsets in order by one thread, then added: the
        // CPU's chunks and additions (RandomOpKernels.multinomialScanChunk), so the same bits.
        const jt_i64 from = threadIdx.x * chunk, to = from + chunk < c ? from + chunk : c;
        double acc = 0;
        for (jt_i64 j = from; j < to; j++) cdf[j] = acc = __dadd_rn(acc, cdf[j]);
        __syncthreads();
        if (threadIdx.x == 0) {
            double offset = 0;
            for (int t = 0; t * chunk < c; t++) {
                chunk_offset[t] = offset;
                jt_i64 end = (t + 1) * chunk < c ? (t + 1) * chunk : c;
                if (t > 0) offset = __dadd_rn(offset, cdf[end - 1]);
                else offset = cdf[end - 1];
            }
        }
        __syncthreads();
        if (threadIdx.x > 0) for (jt_i64 j = from; j < to; j++) cdf[j] = __dadd_rn(chunk_offset[threadIdx.x], cdf[j]);
        __syncthreads();
        if (threadIdx.x == 0) {
            // the first category whose cumulative weight reaches the total (they never decrease)
            const double total = cdf[c - 1];
            jt_i64 lo = 0, hi = c - 1;
            while (lo < hi) {
                jt_i64 mid = (lo + hi) >> 1;
                if (cdf[mid] < total) lo = mid + 1;
                else hi = mid;
            }
            last_positive = lo;
        }
        __syncthreads();
        const double total = cdf[c - 1];
        for (jt_i64 s = threadIdx.x; s < k; s += blockDim.x) {
            double target = __dmul_rn(u[s], total);
            jt_i64 lo = 0, hi = c;  // the first index whose cumulative weight exceeds the target
            while (lo < hi) {
                jt_i64 mid = (lo + hi) >> 1;
                if (cdf[mid] <= target) lo = mid + 1;
                else hi = mid;
            }
            o[s] = lo < last_positive ? lo : last_positive;
        }
        __syncthreads();
    }
}

extern "C" __global__ void jt_multinomial_without_replacement(double* buf, jt_i64 rows, jt_i64 c, jt_i64 k, jt_i64* out,
                                                              jt_u64* record) {
    __shared__ int flags;
    __shared__ double best_key[JT_MULTINOMIAL_THREADS];
    __shared__ jt_i64 best_index[JT_MULTINOMIAL_THREADS];
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const double* p = buf + r * c;
        double* keys = buf + rows * c + r * c;  // log(1 - u), overwritten by the keys
        jt_i64* o = out + r * k;
        if (refuse_bad_row(p, c, k, r, o, record, &flags)) continue;
        for (jt_i64 j = threadIdx.x; j < c; j += blockDim.x) keys[j] = p[j] > 0 ? __ddiv_rn(p[j], -keys[j]) : -1.0;
        __syncthreads();
        for (jt_i64 s = 0; s < k; s++) {
            // this thread's largest key, the lowest index among equals (keys are never NaN: a positive weight over
            // -log(1 - u) in [0, inf))
            double key = -1.0 / 0.0;
            jt_i64 index = c;
            for (jt_i64 j = threadIdx.x; j < c; j += blockDim.x) {
                double v = keys[j];
                if (v > key) {
                    key = v;
                    index = j;
                }
            }
            best_key[threadIdx.x] = key;
            best_index[threadIdx.x] = index;
            __syncthreads();
            for (int half = blockDim.x >> 1; half > 0; half >>= 1) {
                if (threadIdx.x < half) {
                    double other = best_key[threadIdx.x + half];
                    jt_i64 other_index = best_index[threadIdx.x + half];
                    if (other > best_key[threadIdx.x] || (other == best_key[threadIdx.x] && other_index < best_index[threadIdx.x])) {
                        best_key[threadIdx.x] = other;
                        best_index[threadIdx.x] = other_index;
                    }
                }
                __syncthreads();
            }
            if (threadIdx.x == 0) {
                o[s] = best_index[0];
                keys[best_index[0]] = -1.0 / 0.0;  // drawn: below every key left
            }
            __syncthreads();
        }
    }
}
