// The CUDA simulator's cuDNN (libcudnn.so.9): the legacy convolution API jtorch binds
// (jtorch-cuda's cudnn/Cudnn.java), with cuDNN 9's C ABI, enum values and statuses, computed on the host
// by reference math. Device pointers are host addresses of blocks the simulated driver allocated
// (jtsim.h); every computing call is enqueued on the handle's stream and checks its operands' ranges when
// it runs there, where a GPU kernel would fault.
//
// Numerics: float32 is computed in float, float64 in double, float16 and bfloat16 widened to float and
// rounded once to nearest-even on store (NaN kept). y = alpha * op + beta * y, where beta == 0 never reads
// the destination. Convolutions are im2col (or its adjoint, col2im) around a cache-blocked matrix product.
// Every algorithm enumerant computes the same result; the "GEMM" ones keep their column matrices in the
// caller's workspace (so that the caller's workspace handling is exercised), the others on the host heap.

#include "half.h"
#include "jtsim.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace {

// ---- cuDNN 9's numbers (cudnn_graph.h, cudnn_cnn.h) ------------------------------------------------

constexpr int SUCCESS = 0;
constexpr int BAD_PARAM = 2000;
constexpr int NOT_SUPPORTED = 3000;
constexpr int HOST_ALLOCATION_FAILED = 4003;  // CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED
constexpr int EXECUTION_FAILED = 5000;

constexpr int VERSION = 91900;  // 9.19.0, the release jtorch was tested with on a GPU

struct StatusName {
    int status;
    const char* name;
};
constexpr StatusName STATUS_NAMES[] = {
    {0, "CUDNN_STATUS_SUCCESS"},
    {1001, "CUDNN_STATUS_NOT_INITIALIZED"},
    {1002, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"},
    {1003, "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH"},
    {1004, "CUDNN_STATUS_DEPRECATED"},
    {1005, "CUDNN_STATUS_LICENSE_ERROR"},
    {1006, "CUDNN_STATUS_RUNTIME_IN_PROGRESS"},
    {1007, "CUDNN_STATUS_RUNTIME_FP_OVERFLOW"},
    {1008, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"},
    {2000, "CUDNN_STATUS_BAD_PARAM"},
    {2001, "CUDNN_STATUS_INVALID_VALUE"},
    {2002, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"},
    {2003, "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER"},
    {2004, "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED"},
    {2005, "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND"},
    {2006, "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT"},
    {2007, "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH"},
    {2008, "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH"},
    {2009, "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES"},
    {2010, "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE"},
    {2011, "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH"},
    {2012, "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE"},
    {3000, "CUDNN_STATUS_NOT_SUPPORTED"},
    {3001, "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN"},
    {3002, "CUDNN_STATUS_NOT_SUPPORTED_SHAPE"},
    {3003, "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE"},
    {3004, "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT"},
    {3005, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER"},
    {3006, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART"},
    {3007, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"},
    {3008, "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING"},
    {3009, "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE"},
    {3010, "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT"},
    {3011, "CUDNN_STATUS_NOT_SUPPORTED_PADDING"},
    {3012, "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM"},
    {3013, "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API"},
    {3014, "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE"},
    {4000, "CUDNN_STATUS_INTERNAL_ERROR"},
    {4001, "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED"},
    {4002, "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE"},
    {4003, "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED"},
    {4004, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"},
    {4005, "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM"},
    {4006, "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED"},
    {5000, "CUDNN_STATUS_EXECUTION_FAILED"},
    {5001, "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER"},
    {5002, "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS"},
    {5003, "CUDNN_STATUS_EXECUTION_FAILED_CUDART"},
    {5004, "CUDNN_STATUS_EXECUTION_FAILED_CURAND"},
};

// cudnnDataType_t: the four computed here; the enum runs to 21 (CUDNN_DATA_COMPLEX_FP64) in 9.19.
constexpr int DATA_FLOAT = 0, DATA_DOUBLE = 1, DATA_HALF = 2, DATA_BFLOAT16 = 9, DATA_LAST = 21;
// cudnnTensorFormat_t
constexpr int FORMAT_NCHW = 0, FORMAT_NHWC = 1, FORMAT_NCHW_VECT_C = 2;
// cudnnConvolutionMode_t
constexpr int CONVOLUTION = 0, CROSS_CORRELATION = 1;
// cudnnMathType_t runs from CUDNN_DEFAULT_MATH (0) to CUDNN_FMA_MATH (3); none changes the numerics here.
constexpr int MATH_LAST = 3;
constexpr int DETERMINISTIC = 1;  // cudnnDeterminism_t

enum class Direction { Forward, BackwardData, BackwardFilter };

const char* callName(Direction d) {
    switch (d) {
        case Direction::Forward: return "cudnnConvolutionForward";
        case Direction::BackwardData: return "cudnnConvolutionBackwardData";
        default: return "cudnnConvolutionBackwardFilter";
    }
}

// Algorithm enumerants: how many each direction has (the *_ALGO_COUNT values), the one whose column
// matrices live in the workspace (FWD_ALGO_GEMM, BWD_DATA_ALGO_1, BWD_FILTER_ALGO_1) and the one without
// workspace offered after it (FWD_ALGO_IMPLICIT_GEMM, BWD_DATA_ALGO_0, BWD_FILTER_ALGO_0).
int algoCount(Direction d) { return d == Direction::Forward ? 8 : d == Direction::BackwardData ? 6 : 7; }
int workspaceAlgo(Direction d) { return d == Direction::Forward ? 2 : 1; }
constexpr int NO_WORKSPACE_ALGO = 0;

// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the same layout for all three.
struct AlgoPerf {
    int algo;
    int status;
    float time;
    size_t memory;
    int determinism;
    int mathType;
    int reserved[3];
};
static_assert(offsetof(AlgoPerf, status) == 4 && offsetof(AlgoPerf, time) == 8 && offsetof(AlgoPerf, memory) == 16 &&
                  offsetof(AlgoPerf, determinism) == 24 && offsetof(AlgoPerf, mathType) == 28 &&
                  offsetof(AlgoPerf, reserved) == 32 && sizeof(AlgoPerf) == 48,
              "the layout of cudnn.h's perf structs, which jtorch reads at these offsets");

// ---- 16-bit floats -----------------------------------------------------------------------------

struct Half {
    uint16_t bits;
};
struct BFloat16 {
    uint16_t bits;
};

float widen(Half h) { return jtsim16::half_to_float(h.bits); }
float widen(BFloat16 b) { return jtsim16::bf16_to_float(b.bits); }
Half toHalf(float f) { return {jtsim16::float_to_half(f)}; }
BFloat16 toBFloat16(float f) { return {jtsim16::float_to_bf16(f)}; }
float widen(float f) { return f; }
double widen(double d) { return d; }

// The storage type S from the computation type (float for float32/16-bit data, double for float64).
template <typename S, typename C>
S narrow(C v) {
    if constexpr (std::is_same_v<S, Half>) return toHalf(v);
    else if constexpr (std::is_same_v<S, BFloat16>) return toBFloat16(v);
    else return v;
}

size_t elementSize(int type) { return type == DATA_DOUBLE ? 8 : type == DATA_FLOAT ? 4 : 2; }
size_t computeSize(int type) { return type == DATA_DOUBLE ? 8 : 4; }
bool isComputed(int type) {
    return type == DATA_FLOAT || type == DATA_DOUBLE || type == DATA_HALF || type == DATA_BFLOAT16;
}

// Legacy descriptors hold int sizes and strides: no tensor spans more elements.
constexpr int64_t MAX_ELEMENTS = std::numeric_limits<int32_t>::max();

// ---- layouts ------------------------------------------------------------------------------------

// A 4-d strided view, in elements: dims (n, c, h, w) of a tensor or (k, c, r, s) of a filter; element
// (i0, i1, i2, i3) at base + sum of ij * stride[j]. Strides may be negative: a filter read flipped.
struct Layout {
    int64_t dim[4] = {1, 1, 1, 1};
    int64_t stride[4] = {1, 1, 1, 1};
    int64_t base = 0;

    int64_t count() const { return dim[0] * dim[1] * dim[2] * dim[3]; }

    bool packed() const {
        return base == 0 && stride[3] == 1 && stride[2] == dim[3] && stride[1] == dim[2] * dim[3] &&
               stride[0] == dim[1] * dim[2] * dim[3];
    }

    // The lowest element offset touched, and one past the highest.
    int64_t low() const {
        int64_t o = base;
        for (int i = 0; i < 4; i++) o += std::min<int64_t>(0, (dim[i] - 1) * stride[i]);
        return o;
    }
    int64_t high() const {
        int64_t o = base;
        for (int i = 0; i < 4; i++) o += std::max<int64_t>(0, (dim[i] - 1) * stride[i]);
        return o + 1;
    }
};

Layout packedLayout(int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    Layout l;
    int64_t d[4] = {d0, d1, d2, d3};
    int64_t s = 1;
    for (int i = 3; i >= 0; i--) {
        l.dim[i] = d[i];
        l.stride[i] = s;
        s *= d[i];
    }
    return l;
}

// Dims (n, c, h, w) stored with c innermost.
Layout nhwcLayout(int64_t n, int64_t c, int64_t h, int64_t w) {
    Layout l = packedLayout(n, c, h, w);
    l.stride[1] = 1;
    l.stride[3] = c;
    l.stride[2] = w * c;
    l.stride[0] = h * w * c;
    return l;
}

// Calls f(offset in a, offset in b) for every element of a's dims, in (n, c, h, w) order.
template <typename F>
void forEachOffsetPair(const Layout& a, const Layout& b, F f) {
    for (int64_t i0 = 0; i0 < a.dim[0]; i0++)
        for (int64_t i1 = 0; i1 < a.dim[1]; i1++)
            for (int64_t i2 = 0; i2 < a.dim[2]; i2++) {
                int64_t rowA = a.base + i0 * a.stride[0] + i1 * a.stride[1] + i2 * a.stride[2];
                int64_t rowB = b.base + i0 * b.stride[0] + i1 * b.stride[1] + i2 * b.stride[2];
                for (int64_t i3 = 0; i3 < a.dim[3]; i3++) f(rowA + i3 * a.stride[3], rowB + i3 * b.stride[3]);
            }
}

template <typename F>
void forEachOffset(const Layout& l, F f) {
    forEachOffsetPair(l, l, [&](int64_t o, int64_t) { f(o); });
}

// The elements of `data` (stored as S) as a packed array of C: `data` itself when it already is one.
template <typename S, typename C>
const C* packedCopy(const void* data, const Layout& l, std::vector<C>& copy) {
    const S* src = static_cast<const S*>(data);
    if constexpr (std::is_same_v<S, C>) {
        if (l.packed()) return src;
    }
    copy.resize(size_t(l.count()));
    C* out = copy.data();
    forEachOffset(l, [&](int64_t o) { *out++ = widen(src[o]); });
    return copy.data();
}

// data = alpha * result + beta * data over the layout; beta == 0 does not read data (NaN there stays out).
template <typename S, typename C>
void blendInto(void* data, const Layout& l, const C* result, C alpha, C beta) {
    S* dst = static_cast<S*>(data);
    forEachOffset(l, [&](int64_t o) {
        C v = alpha * *result++;
        if (beta != 0) v += beta * widen(dst[o]);
        dst[o] = narrow<S, C>(v);
    });
}

}  // namespace

// ---- descriptors (cudnn.h's opaque struct names) --------------------------------------------------

struct cudnnContext {
    uintptr_t stream = 0;  // 0: the legacy default stream
};

struct cudnnTensorStruct {
    bool set = false;
    int type = DATA_FLOAT;
    Layout layout;  // (n, c, h, w)
};

struct cudnnFilterStruct {
    bool set = false;
    int type = DATA_FLOAT;
    Layout layout;  // (k, c, r, s)
};

struct cudnnConvolutionStruct {
    bool set = false;
    int pad[2] = {0, 0}, stride[2] = {1, 1}, dilation[2] = {1, 1};
    int mode = CROSS_CORRELATION;
    int computeType = DATA_FLOAT;
    int groups = 1;
    int mathType = 0;
};

namespace {

// ---- live objects: a stale or foreign pointer is refused with BAD_PARAM, never dereferenced ----------

enum class Kind { Handle, Tensor, Filter, Convolution };
template <typename T> constexpr Kind kindOf();
template <> constexpr Kind kindOf<cudnnContext>() { return Kind::Handle; }
template <> constexpr Kind kindOf<cudnnTensorStruct>() { return Kind::Tensor; }
template <> constexpr Kind kindOf<cudnnFilterStruct>() { return Kind::Filter; }
template <> constexpr Kind kindOf<cudnnConvolutionStruct>() { return Kind::Convolution; }

std::mutex liveMutex;
std::unordered_map<const void*, Kind> liveObjects;

template <typename T>
int createObject(T** out) {
    if (out == nullptr) return BAD_PARAM;
    T* p = new (std::nothrow) T();
    if (p == nullptr) return HOST_ALLOCATION_FAILED;
    try {
        std::lock_guard<std::mutex> lock(liveMutex);
        liveObjects.emplace(p, kindOf<T>());
    } catch (...) {
        delete p;
        return HOST_ALLOCATION_FAILED;
    }
    *out = p;
    return SUCCESS;
}

template <typename T>
int destroyObject(T* p) {
    if (p == nullptr) return SUCCESS;
    {
        std::lock_guard<std::mutex> lock(liveMutex);
        auto it = liveObjects.find(p);
        if (it == liveObjects.end() || it->second != kindOf<T>()) return BAD_PARAM;
        liveObjects.erase(it);
    }
    delete p;
    return SUCCESS;
}

// `p` when it is a live object of its type, else null.
template <typename T>
T* live(T* p) {
    if (p == nullptr) return nullptr;
    std::lock_guard<std::mutex> lock(liveMutex);
    auto it = liveObjects.find(p);
    return it != liveObjects.end() && it->second == kindOf<T>() ? p : nullptr;
}

template <typename T>
const T* liveAndSet(const T* p) {
    const T* q = live(const_cast<T*>(p));
    return q != nullptr && q->set ? q : nullptr;
}

// ---- convolution geometry --------------------------------------------------------------------------

struct Geometry {
    int64_t n, c, h, w;   // input
    int64_t k, r, s;      // filter: output channels, kernel height and width
    int64_t oh, ow;       // output
    int64_t padH, padW, strideH, strideW, dilH, dilW, groups;

    int64_t cg() const { return c / groups; }
    int64_t kg() const { return k / groups; }
    int64_t colRows() const { return cg() * r * s; }  // rows of one group's column matrix
    int64_t plane() const { return oh * ow; }
    // An image already is its column matrix.
    bool pointwise() const { return r == 1 && s == 1 && strideH == 1 && strideW == 1 && padH == 0 && padW == 0; }
};

// Everything a convolution needs, copied out of the descriptors.
struct Convolution {
    Geometry g;
    int type;         // of x, w and y alike
    int computeType;  // of the convolution descriptor
    int mathType;
    Layout x, w, y;   // w flipped for CUDNN_CONVOLUTION
};

// 1 + (in + 2 pad - dilation (k - 1) - 1) / stride, or 0 when the dilated kernel exceeds the padded input.
int64_t outputSize(int64_t in, int64_t pad, int64_t k, int64_t dilation, int64_t stride) {
    int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
    return span < 0 ? 0 : 1 + span / stride;
}

// The geometry of x and w under conv, or BAD_PARAM for an unset descriptor, channels that do not match
// the groups, a kernel larger than the padded input, or x and w of different types.
int describe(const cudnnTensorStruct* xd, const cudnnFilterStruct* wd, const cudnnConvolutionStruct* cd, Convolution* out) {
    const cudnnTensorStruct* x = liveAndSet(xd);
    const cudnnFilterStruct* w = liveAndSet(wd);
    const cudnnConvolutionStruct* conv = liveAndSet(cd);
    if (x == nullptr || w == nullptr || conv == nullptr) return BAD_PARAM;
    Geometry& g = out->g;
    g.n = x->layout.dim[0], g.c = x->layout.dim[1], g.h = x->layout.dim[2], g.w = x->layout.dim[3];
    g.k = w->layout.dim[0], g.r = w->layout.dim[2], g.s = w->layout.dim[3];
    g.padH = conv->pad[0], g.padW = conv->pad[1], g.strideH = conv->stride[0], g.strideW = conv->stride[1];
    g.dilH = conv->dilation[0], g.dilW = conv->dilation[1], g.groups = conv->groups;
    if (g.c % g.groups != 0 || g.k % g.groups != 0 || w->layout.dim[1] != g.c / g.groups) return BAD_PARAM;
    g.oh = outputSize(g.h, g.padH, g.r, g.dilH, g.strideH);
    g.ow = outputSize(g.w, g.padW, g.s, g.dilW, g.strideW);
    if (g.oh == 0 || g.ow == 0 || g.oh > MAX_ELEMENTS || g.ow > MAX_ELEMENTS) return BAD_PARAM;
    out->type = x->type;
    out->computeType = conv->computeType;
    out->mathType = conv->mathType;
    out->x = x->layout;
    out->w = w->layout;
    if (conv->mode == CONVOLUTION) {  // true convolution: read and write the filter's r and s reversed
        for (int i = 2; i < 4; i++) {
            out->w.base += (out->w.dim[i] - 1) * out->w.stride[i];
            out->w.stride[i] = -out->w.stride[i];
        }
    }
    if (x->type != w->type) return BAD_PARAM;
    return SUCCESS;
}

bool supportedTypes(int data, int compute) {
    switch (data) {
        case DATA_FLOAT: return compute == DATA_FLOAT;
        case DATA_DOUBLE: return compute == DATA_DOUBLE;
        case DATA_HALF: return compute == DATA_FLOAT || compute == DATA_HALF;
        case DATA_BFLOAT16: return compute == DATA_FLOAT;
        default: return false;
    }
}

// describe() plus y's agreement, for one direction's descriptors in (x, w, y) order. cuDNN documents a y
// whose spatial size differs from cudnnGetConvolutionNdForwardOutputDim's as NOT_SUPPORTED for the
// forward call and as BAD_PARAM for the backward ones; other disagreements are BAD_PARAM.
int describeAll(Direction dir, const cudnnTensorStruct* xd, const cudnnFilterStruct* wd,
                const cudnnConvolutionStruct* cd, const cudnnTensorStruct* yd, Convolution* out) {
    int status = describe(xd, wd, cd, out);
    if (status != SUCCESS) return status;
    const cudnnTensorStruct* y = liveAndSet(yd);
    if (y == nullptr || y->type != out->type) return BAD_PARAM;
    const Geometry& g = out->g;
    if (y->layout.dim[0] != g.n || y->layout.dim[1] != g.k) return BAD_PARAM;
    if (y->layout.dim[2] != g.oh || y->layout.dim[3] != g.ow) return dir == Direction::Forward ? NOT_SUPPORTED : BAD_PARAM;
    if (!supportedTypes(out->type, out->computeType)) return NOT_SUPPORTED;
    out->y = y->layout;
    return SUCCESS;
}

// Threads one call uses: two for problems of more than a few milliseconds (a function of the geometry
// alone, so that the workspace a query reports is what the call uses).
int workersFor(const Geometry& g) {
    double flops = 2.0 * double(g.n) * double(g.k) * double(g.colRows()) * double(g.plane());
    return g.n >= 2 && flops >= double(1 << 24) ? 2 : 1;
}

// Elements of one worker's column matrix (one group of one image), 0 when the image is its own.
int64_t columnElements(const Geometry& g) { return g.pointwise() ? 0 : g.colRows() * g.plane(); }

// Saturates where the product would not fit a size_t (no allocation could hold it anyway).
size_t workspaceBytes(const Convolution& conv, Direction dir, int algo) {
    if (algo != workspaceAlgo(dir)) return 0;
    size_t perElement = size_t(workersFor(conv.g)) * computeSize(conv.type), elements = size_t(columnElements(conv.g));
    return elements > std::numeric_limits<size_t>::max() / perElement ? std::numeric_limits<size_t>::max() : elements * perElement;
}

// ---- the matrix product ----------------------------------------------------------------------------

// A matrix read through strides: element (i, j) at p[i * rowStride + j * colStride].
template <typename C>
struct MatrixView {
    const C* p;
    int64_t rowStride, colStride;
};

// Register tile of the micro-kernel: 4 rows by two 16-byte vectors (8 accumulators in SSE registers).
constexpr int TILE_ROWS = 4;
template <typename C> constexpr int TILE_COLS = int(32 / sizeof(C));
// Cache blocks: a KC x NC panel of B in L2, a KC x TILE_COLS sliver of it in L1.
constexpr int64_t KC = 256, MC = 64, NC = 512;

// Packed panels of A and B, one set a worker, allocated before the work starts.
template <typename C>
struct Panels {
    std::vector<C> a = std::vector<C>(size_t(KC * MC));
    std::vector<C> b = std::vector<C>(size_t(KC * NC));
};

// c[0..mr) x [0..nr) += a sliver (kc x 4, packed by k) times b sliver (kc x TILE_COLS, packed by k).
template <typename C>
void microKernel(int64_t kc, const C* __restrict a, const C* __restrict b, C* __restrict c, int64_t ldc, int mr, int nr) {
    constexpr int R = TILE_ROWS, S = TILE_COLS<C>;
    C acc[R][S] = {};
    for (int64_t p = 0; p < kc; p++) {
        // Unrolled fully so that the accumulators stay in registers and the columns vectorise.
#pragma GCC unroll 8
        for (int i = 0; i < R; i++)
#pragma GCC unroll 8
            for (int j = 0; j < S; j++) acc[i][j] += a[p * R + i] * b[p * S + j];
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) c[i * ldc + j] += acc[i][j];
}

// c (m x n, row stride ldc) += a (m x k) * b (k x n).
template <typename C>
void multiplyAdd(int64_t m, int64_t n, int64_t k, MatrixView<C> a, MatrixView<C> b, C* c, int64_t ldc, Panels<C>& panels) {
    constexpr int R = TILE_ROWS, S = TILE_COLS<C>;
    for (int64_t jc = 0; jc < n; jc += NC) {
        int64_t nc = std::min(NC, n - jc);
        for (int64_t pc = 0; pc < k; pc += KC) {
            int64_t kc = std::min(KC, k - pc);
            // B's block in slivers of S columns, zero-padded to whole slivers.
            for (int64_t j0 = 0; j0 < nc; j0 += S) {
                C* dst = &panels.b[size_t(j0 * kc)];
                int64_t cols = std::min<int64_t>(S, nc - j0);
                for (int64_t p = 0; p < kc; p++) {
                    const C* src = b.p + (pc + p) * b.rowStride + (jc + j0) * b.colStride;
                    for (int64_t j = 0; j < S; j++) dst[p * S + j] = j < cols ? src[j * b.colStride] : C(0);
                }
            }
            for (int64_t ic = 0; ic < m; ic += MC) {
                int64_t mc = std::min(MC, m - ic);
                for (int64_t i0 = 0; i0 < mc; i0 += R) {
                    C* dst = &panels.a[size_t(i0 * kc)];
                    int64_t rows = std::min<int64_t>(R, mc - i0);
                    for (int64_t p = 0; p < kc; p++) {
                        const C* src = a.p + (ic + i0) * a.rowStride + (pc + p) * a.colStride;
                        for (int64_t i = 0; i < R; i++) dst[p * R + i] = i < rows ? src[i * a.rowStride] : C(0);
                    }
                }
                for (int64_t j0 = 0; j0 < nc; j0 += S)
                    for (int64_t i0 = 0; i0 < mc; i0 += R)
                        microKernel<C>(kc, &panels.a[size_t(i0 * kc)], &panels.b[size_t(j0 * kc)], c + (ic + i0) * ldc + jc + j0,
                                       ldc, int(std::min<int64_t>(R, mc - i0)), int(std::min<int64_t>(S, nc - j0)));
            }
        }
    }
}

// ---- im2col and its adjoint ------------------------------------------------------------------------

// col (colRows x plane) = the receptive fields of `channels` (cg planes of h x w); row (c, r, s) in
// the filter's order.
template <typename C>
void im2col(const Geometry& g, const C* channels, C* col) {
    for (int64_t c = 0; c < g.cg(); c++)
        for (int64_t r = 0; r < g.r; r++)
            for (int64_t s = 0; s < g.s; s++) {
                C* row = col + ((c * g.r + r) * g.s + s) * g.plane();
                for (int64_t oy = 0; oy < g.oh; row += g.ow, oy++) {
                    int64_t iy = oy * g.strideH - g.padH + r * g.dilH;
                    if (iy < 0 || iy >= g.h) {
                        std::fill(row, row + g.ow, C(0));
                        continue;
                    }
                    const C* in = channels + (c * g.h + iy) * g.w;
                    for (int64_t ox = 0; ox < g.ow; ox++) {
                        int64_t ix = ox * g.strideW - g.padW + s * g.dilW;
                        row[ox] = ix >= 0 && ix < g.w ? in[ix] : C(0);
                    }
                }
            }
}

// channels += col2im(col): each column entry added back to the input element it was read from.
template <typename C>
void col2imAdd(const Geometry& g, const C* col, C* channels) {
    for (int64_t c = 0; c < g.cg(); c++)
        for (int64_t r = 0; r < g.r; r++)
            for (int64_t s = 0; s < g.s; s++) {
                const C* row = col + ((c * g.r + r) * g.s + s) * g.plane();
                for (int64_t oy = 0; oy < g.oh; row += g.ow, oy++) {
                    int64_t iy = oy * g.strideH - g.padH + r * g.dilH;
                    if (iy < 0 || iy >= g.h) continue;
                    C* in = channels + (c * g.h + iy) * g.w;
                    for (int64_t ox = 0; ox < g.ow; ox++) {
                        int64_t ix = ox * g.strideW - g.padW + s * g.dilW;
                        if (ix >= 0 && ix < g.w) in[ix] += row[ox];
                    }
                }
            }
}

// ---- the three directions on packed arrays (x: n c h w, w: k cg r s, y: n k oh ow) -------------------

// Per-worker scratch: a column matrix (in the workspace or on the heap) and GEMM panels.
template <typename C>
struct Workers {
    int count = 1;
    C* columns = nullptr;  // count * columnElements
    std::vector<C> heapColumns;
    std::vector<Panels<C>> panels;
};

// body(worker, firstImage, images) for `workers` contiguous ranges of n images, worker 0 on this thread.
template <typename F>
void splitImages(int workers, int64_t n, F body) {
    std::vector<std::thread> threads;
    threads.reserve(size_t(workers));
    for (int t = 1; t < workers; t++) {
        int64_t first = n * t / workers, last = n * (t + 1) / workers;
        try {
            threads.emplace_back(body, t, first, last - first);
        } catch (const std::system_error&) {
            body(t, first, last - first);  // no thread to be had: run that range here
        }
    }
    body(0, int64_t(0), n / workers);
    for (std::thread& t : threads) t.join();
}

// y += conv(x, w)
template <typename C>
void forward(const Geometry& g, const C* x, const C* w, C* y, Workers<C>& work) {
    int64_t kk = g.colRows(), l = g.plane();
    splitImages(work.count, g.n, [&](int t, int64_t first, int64_t images) {
        C* col = work.columns + t * columnElements(g);
        for (int64_t i = first; i < first + images; i++)
            for (int64_t grp = 0; grp < g.groups; grp++) {
                const C* channels = x + (i * g.c + grp * g.cg()) * g.h * g.w;
                if (!g.pointwise()) im2col(g, channels, col);
                const C* b = g.pointwise() ? channels : col;
                multiplyAdd<C>(g.kg(), l, kk, {w + grp * g.kg() * kk, kk, 1}, {b, l, 1}, y + (i * g.k + grp * g.kg()) * l, l,
                               work.panels[size_t(t)]);
            }
    });
}

// dx += conv's adjoint in x applied to dy: col = w_g^T dy_g, then col2im.
template <typename C>
void backwardData(const Geometry& g, const C* w, const C* dy, C* dx, Workers<C>& work) {
    int64_t kk = g.colRows(), l = g.plane();
    splitImages(work.count, g.n, [&](int t, int64_t first, int64_t images) {
        C* col = work.columns + t * columnElements(g);
        for (int64_t i = first; i < first + images; i++)
            for (int64_t grp = 0; grp < g.groups; grp++) {
                C* channels = dx + (i * g.c + grp * g.cg()) * g.h * g.w;
                C* target = g.pointwise() ? channels : col;
                if (!g.pointwise()) std::fill(col, col + kk * l, C(0));
                multiplyAdd<C>(kk, l, g.kg(), {w + grp * g.kg() * kk, 1, kk}, {dy + (i * g.k + grp * g.kg()) * l, l, 1}, target, l,
                               work.panels[size_t(t)]);
                if (!g.pointwise()) col2imAdd(g, col, channels);
            }
    });
}

// dw += dy_g col_g^T summed over images; each worker sums its images into its own buffer, added in
// worker order, so that the result does not depend on timing.
template <typename C>
void backwardFilter(const Geometry& g, const C* x, const C* dy, C* dw, Workers<C>& work) {
    int64_t kk = g.colRows(), l = g.plane(), size = g.k * kk;
    std::vector<C> partial(size_t(size * (work.count - 1)), C(0));
    splitImages(work.count, g.n, [&](int t, int64_t first, int64_t images) {
        C* col = work.columns + t * columnElements(g);
        C* sum = t == 0 ? dw : partial.data() + (t - 1) * size;
        for (int64_t i = first; i < first + images; i++)
            for (int64_t grp = 0; grp < g.groups; grp++) {
                const C* channels = x + (i * g.c + grp * g.cg()) * g.h * g.w;
                if (!g.pointwise()) im2col(g, channels, col);
                const C* b = g.pointwise() ? channels : col;
                multiplyAdd<C>(g.kg(), kk, l, {dy + (i * g.k + grp * g.kg()) * l, l, 1}, {b, 1, l}, sum + grp * g.kg() * kk, kk,
                               work.panels[size_t(t)]);
            }
    });
    for (int t = 1; t < work.count; t++)
        for (int64_t e = 0; e < size; e++) dw[e] += partial[size_t((t - 1) * size + e)];
}

// ---- enqueued work ---------------------------------------------------------------------------------

// The operand [p + low, p + high) elements lies in one allocation; else the context fails as a faulting
// kernel would, naming the call and the operand.
bool inRange(const char* call, const char* operand, const void* p, const Layout& l, size_t elementBytes) {
    uintptr_t start = uintptr_t(p) + uintptr_t(l.low() * int64_t(elementBytes));
    size_t bytes = size_t(l.high() - l.low()) * elementBytes;
    if (jtsim_check_device_range(start, bytes) == JTSIM_SUCCESS) return true;
    char message[256];
    std::snprintf(message, sizeof message, "%s: operand %s [0x%llx, +%zu bytes) is outside any allocation", call, operand,
                  static_cast<unsigned long long>(start), bytes);
    jtsim_fail(JTSIM_ERROR_ILLEGAL_ADDRESS, message);
    return false;
}

void failOutOfMemory(const char* call) {
    char message[160];
    std::snprintf(message, sizeof message, "%s: the simulator ran out of host memory", call);
    jtsim_fail(JTSIM_ERROR_LAUNCH_FAILED, message);
}

struct ConvolutionJob {
    Direction dir;
    Convolution conv;
    const void* x;  // the input, or the input gradient for backward data
    const void* w;  // the filter, or its gradient for backward filter
    const void* y;  // the output, or the output gradient for the backward directions
    double alpha, beta;
    void* workspace;
    size_t workspaceBytes;  // what this call uses of it (0: the heap instead)
};

template <typename S, typename C>
void runConvolution(const ConvolutionJob& job) {
    const Convolution& cv = job.conv;
    const Geometry& g = cv.g;
    Workers<C> work;
    work.count = workersFor(g);
    work.panels.resize(size_t(work.count));
    if (job.workspaceBytes > 0) {
        work.columns = static_cast<C*>(job.workspace);
    } else {
        work.heapColumns.resize(size_t(work.count * columnElements(g)));
        work.columns = work.heapColumns.data();
    }
    C alpha = C(job.alpha), beta = C(job.beta);
    std::vector<C> copyA, copyB, result;
    switch (job.dir) {
        case Direction::Forward: {
            const C* x = packedCopy<S, C>(job.x, cv.x, copyA);
            const C* w = packedCopy<S, C>(job.w, cv.w, copyB);
            result.assign(size_t(cv.y.count()), C(0));
            forward(g, x, w, result.data(), work);
            blendInto<S, C>(const_cast<void*>(job.y), cv.y, result.data(), alpha, beta);
            break;
        }
        case Direction::BackwardData: {
            const C* w = packedCopy<S, C>(job.w, cv.w, copyA);
            const C* dy = packedCopy<S, C>(job.y, cv.y, copyB);
            result.assign(size_t(cv.x.count()), C(0));
            backwardData(g, w, dy, result.data(), work);
            blendInto<S, C>(const_cast<void*>(job.x), cv.x, result.data(), alpha, beta);
            break;
        }
        case Direction::BackwardFilter: {
            const C* x = packedCopy<S, C>(job.x, cv.x, copyA);
            const C* dy = packedCopy<S, C>(job.y, cv.y, copyB);
            result.assign(size_t(cv.w.count()), C(0));
            backwardFilter(g, x, dy, result.data(), work);
            blendInto<S, C>(const_cast<void*>(job.w), cv.w, result.data(), alpha, beta);
            break;
        }
    }
}

void runConvolutionJob(void* arg) {
    const ConvolutionJob& job = *static_cast<const ConvolutionJob*>(arg);
    const Convolution& cv = job.conv;
    const char* call = callName(job.dir);
    bool data = job.dir == Direction::BackwardData, filter = job.dir == Direction::BackwardFilter;
    size_t esz = elementSize(cv.type);
    Layout workspace = packedLayout(1, 1, 1, int64_t(std::max<size_t>(job.workspaceBytes, 1)));
    if (!inRange(call, data ? "dx" : "x", job.x, cv.x, esz) || !inRange(call, filter ? "dw" : "w", job.w, cv.w, esz) ||
        !inRange(call, job.dir == Direction::Forward ? "y" : "dy", job.y, cv.y, esz) ||
        (job.workspaceBytes > 0 && !inRange(call, "workspace", job.workspace, workspace, 1))) {
        return;
    }
    try {
        switch (cv.type) {
            case DATA_FLOAT: runConvolution<float, float>(job); break;
            case DATA_DOUBLE: runConvolution<double, double>(job); break;
            case DATA_HALF: runConvolution<Half, float>(job); break;
            case DATA_BFLOAT16: runConvolution<BFloat16, float>(job); break;
        }
    } catch (const std::exception&) {  // bad_alloc, or length_error for sizes no vector can hold
        failOutOfMemory(call);
    }
}

// Host scalars alpha and beta: double for double data, float otherwise.
double hostScalar(const void* p, int type) {
    if (type == DATA_DOUBLE) return *static_cast<const double*>(p);
    return *static_cast<const float*>(p);
}

bool aligned(const void* p, size_t bytes) { return uintptr_t(p) % bytes == 0; }

// Enqueues `job` (taken over) with `run` on the handle's stream.
template <typename Job>
int enqueue(const cudnnContext* handle, const char* call, void (*run)(void*), Job* job) {
    int result = jtsim_stream_enqueue(handle->stream, call, run, job, [](void* p) { delete static_cast<Job*>(p); });
    return result == JTSIM_SUCCESS ? SUCCESS : EXECUTION_FAILED;
}

// One direction's call, descriptors and pointers in (x, w, y) order whatever the direction reads or writes.
int convolve(Direction dir, cudnnContext* handle, const void* alpha, const cudnnTensorStruct* xDesc, const void* x,
             const cudnnFilterStruct* wDesc, const void* w, const cudnnConvolutionStruct* convDesc, int algo, void* workspace,
             size_t workspaceSize, const void* beta, const cudnnTensorStruct* yDesc, const void* y) {
    const cudnnContext* h = live(handle);
    if (h == nullptr || alpha == nullptr || beta == nullptr || x == nullptr || w == nullptr || y == nullptr) return BAD_PARAM;
    ConvolutionJob job{};
    int status = describeAll(dir, xDesc, wDesc, convDesc, yDesc, &job.conv);
    if (status != SUCCESS) return status;
    if (algo < 0 || algo >= algoCount(dir)) return BAD_PARAM;
    size_t esz = elementSize(job.conv.type), needed = workspaceBytes(job.conv, dir, algo);
    if (!aligned(x, esz) || !aligned(w, esz) || !aligned(y, esz)) return BAD_PARAM;
    if (needed > 0 && (workspace == nullptr || workspaceSize < needed || !aligned(workspace, computeSize(job.conv.type)))) {
        return BAD_PARAM;
    }
    job.dir = dir;
    job.x = x, job.w = w, job.y = y;
    job.alpha = hostScalar(alpha, job.conv.type);
    job.beta = hostScalar(beta, job.conv.type);
    job.workspace = workspace;
    job.workspaceBytes = needed;
    ConvolutionJob* queued = new (std::nothrow) ConvolutionJob(job);
    if (queued == nullptr) return HOST_ALLOCATION_FAILED;
    return enqueue(h, callName(dir), runConvolutionJob, queued);
}

// The _v7 heuristic: the workspace algorithm, then the one without workspace; all deterministic.
int algorithms(Direction dir, cudnnContext* handle, const cudnnTensorStruct* x, const cudnnFilterStruct* w,
               const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y, int requested, int* returned, AlgoPerf* results) {
    if (live(handle) == nullptr || requested < 1 || returned == nullptr || results == nullptr) return BAD_PARAM;
    Convolution cv;
    int status = describeAll(dir, x, w, conv, y, &cv);
    if (status != SUCCESS) return status;
    int offered[] = {workspaceAlgo(dir), NO_WORKSPACE_ALGO};
    int count = std::min(requested, 2);
    for (int i = 0; i < count; i++) {
        AlgoPerf& r = results[i];
        r = AlgoPerf{};
        r.algo = offered[i];
        r.status = SUCCESS;
        r.time = -1.0f;  // a heuristic's estimate: nothing was timed
        r.memory = workspaceBytes(cv, dir, offered[i]);
        r.determinism = DETERMINISTIC;
        r.mathType = cv.mathType;
    }
    *returned = count;
    return SUCCESS;
}

int workspaceQuery(Direction dir, cudnnContext* handle, const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                   const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y, int algo, size_t* bytes) {
    if (live(handle) == nullptr || bytes == nullptr) return BAD_PARAM;
    Convolution cv;
    int status = describeAll(dir, x, w, conv, y, &cv);
    if (status != SUCCESS) return status;
    if (algo < 0 || algo >= algoCount(dir)) return BAD_PARAM;
    *bytes = workspaceBytes(cv, dir, algo);
    return SUCCESS;
}

// ---- bias: cudnnAddTensor and cudnnConvolutionBackwardBias ----------------------------------------------

enum class BiasOp { Add, Gradient };

struct BiasJob {
    BiasOp op;
    int type;
    Layout a, c;  // AddTensor: c = alpha a + beta c, a broadcast; Gradient: a = dy, c = db (1 x C x 1 x 1)
    const void* aData;
    void* cData;
    double alpha, beta;
};

template <typename S, typename C>
void runBias(const BiasJob& job) {
    const S* a = static_cast<const S*>(job.aData);
    S* c = static_cast<S*>(job.cData);
    C alpha = C(job.alpha), beta = C(job.beta);
    auto blend = [&](int64_t o, C v) {
        v *= alpha;
        if (beta != 0) v += beta * widen(c[o]);
        c[o] = narrow<S, C>(v);
    };
    if (job.op == BiasOp::Add) {
        // a read over c's dims, with stride 0 along the dims it broadcasts.
        Layout from = job.a;
        for (int i = 0; i < 4; i++) {
            if (from.dim[i] == 1) from.stride[i] = 0;
            from.dim[i] = job.c.dim[i];
        }
        forEachOffsetPair(job.c, from, [&](int64_t o, int64_t source) { blend(o, C(widen(a[source]))); });
        return;
    }
    for (int64_t ch = 0; ch < job.a.dim[1]; ch++) {
        Layout plane = job.a;  // dy's channel ch
        plane.dim[1] = 1;
        plane.base += ch * job.a.stride[1];
        double sum = 0;
        forEachOffset(plane, [&](int64_t o) { sum += double(widen(a[o])); });
        blend(job.c.base + ch * job.c.stride[1], C(sum));
    }
}

void runBiasJob(void* arg) {
    const BiasJob& job = *static_cast<const BiasJob*>(arg);
    bool add = job.op == BiasOp::Add;
    const char* call = add ? "cudnnAddTensor" : "cudnnConvolutionBackwardBias";
    size_t esz = elementSize(job.type);
    if (!inRange(call, add ? "A" : "dy", job.aData, job.a, esz) || !inRange(call, add ? "C" : "db", job.cData, job.c, esz)) return;
    try {
        switch (job.type) {
            case DATA_FLOAT: runBias<float, float>(job); break;
            case DATA_DOUBLE: runBias<double, double>(job); break;
            case DATA_HALF: runBias<Half, float>(job); break;
            case DATA_BFLOAT16: runBias<BFloat16, float>(job); break;
        }
    } catch (const std::exception&) {  // bad_alloc, or length_error for sizes no vector can hold
        failOutOfMemory(call);
    }
}

int biasCall(BiasOp op, cudnnContext* handle, const void* alpha, const cudnnTensorStruct* aDesc, const void* a, const void* beta,
             const cudnnTensorStruct* cDesc, void* c) {
    const cudnnContext* h = live(handle);
    const cudnnTensorStruct* at = liveAndSet(aDesc);
    const cudnnTensorStruct* ct = liveAndSet(cDesc);
    if (h == nullptr || at == nullptr || ct == nullptr || alpha == nullptr || beta == nullptr || a == nullptr || c == nullptr) {
        return BAD_PARAM;
    }
    if (at->type != ct->type) return BAD_PARAM;
    for (int i = 0; i < 4; i++) {
        if (op == BiasOp::Add && at->layout.dim[i] != 1 && at->layout.dim[i] != ct->layout.dim[i]) return BAD_PARAM;
        if (op == BiasOp::Gradient && ct->layout.dim[i] != (i == 1 ? at->layout.dim[1] : 1)) return BAD_PARAM;
    }
    if (!isComputed(at->type)) return NOT_SUPPORTED;
    size_t esz = elementSize(at->type);
    if (!aligned(a, esz) || !aligned(c, esz)) return BAD_PARAM;
    BiasJob* job = new (std::nothrow) BiasJob{op, at->type, at->layout, ct->layout, a, c, hostScalar(alpha, at->type),
                                              hostScalar(beta, at->type)};
    if (job == nullptr) return HOST_ALLOCATION_FAILED;
    return enqueue(h, op == BiasOp::Add ? "cudnnAddTensor" : "cudnnConvolutionBackwardBias", runBiasJob, job);
}

// ---- descriptor setters --------------------------------------------------------------------------

int checkTypeAndDims(int type, int n, int c, int h, int w) {
    if (type < 0 || type > DATA_LAST || n <= 0 || c <= 0 || h <= 0 || w <= 0) return BAD_PARAM;
    int64_t count = 1;
    for (int d : {n, c, h, w}) {
        count *= d;  // below 2^62: checked at each step
        if (count > MAX_ELEMENTS) return NOT_SUPPORTED;
    }
    return SUCCESS;
}

int checkFormat(int format) {
    if (format == FORMAT_NCHW || format == FORMAT_NHWC) return SUCCESS;
    return format == FORMAT_NCHW_VECT_C ? NOT_SUPPORTED : BAD_PARAM;  // vectorised layouts are for int8 data
}

}  // namespace

// ---- the C API -----------------------------------------------------------------------------------------

extern "C" {

size_t cudnnGetVersion(void) { return VERSION; }

const char* cudnnGetErrorString(int status) {
    for (const StatusName& s : STATUS_NAMES)
        if (s.status == status) return s.name;
    return "CUDNN_UNKNOWN_STATUS";
}

int cudnnCreate(cudnnContext** handle) { return createObject(handle); }

int cudnnDestroy(cudnnContext* handle) { return handle == nullptr ? BAD_PARAM : destroyObject(handle); }

int cudnnSetStream(cudnnContext* handle, uintptr_t stream) {
    cudnnContext* h = live(handle);
    if (h == nullptr) return BAD_PARAM;
    h->stream = stream;  // a bad stream shows at the first enqueue, as the real library's first launch
    return SUCCESS;
}

int cudnnCreateTensorDescriptor(cudnnTensorStruct** desc) { return createObject(desc); }

int cudnnDestroyTensorDescriptor(cudnnTensorStruct* desc) { return destroyObject(desc); }

int cudnnSetTensor4dDescriptor(cudnnTensorStruct* desc, int format, int type, int n, int c, int h, int w) {
    cudnnTensorStruct* d = live(desc);
    if (d == nullptr) return BAD_PARAM;
    int status = checkTypeAndDims(type, n, c, h, w);
    if (status == SUCCESS) status = checkFormat(format);
    if (status != SUCCESS) return status;
    d->type = type;
    d->layout = format == FORMAT_NHWC ? nhwcLayout(n, c, h, w) : packedLayout(n, c, h, w);
    d->set = true;
    return SUCCESS;
}

int cudnnSetTensor4dDescriptorEx(cudnnTensorStruct* desc, int type, int n, int c, int h, int w, int nStride, int cStride,
                                 int hStride, int wStride) {
    cudnnTensorStruct* d = live(desc);
    if (d == nullptr) return BAD_PARAM;
    int status = checkTypeAndDims(type, n, c, h, w);
    if (status != SUCCESS) return status;
    if (nStride <= 0 || cStride <= 0 || hStride <= 0 || wStride <= 0) return BAD_PARAM;
    Layout l = packedLayout(n, c, h, w);
    l.stride[0] = nStride, l.stride[1] = cStride, l.stride[2] = hStride, l.stride[3] = wStride;
    for (int i = 0; i < 4; i++)
        if ((l.dim[i] - 1) * l.stride[i] > MAX_ELEMENTS) return NOT_SUPPORTED;  // each term below 2^62
    if (l.high() > MAX_ELEMENTS) return NOT_SUPPORTED;
    d->type = type;
    d->layout = l;
    d->set = true;
    return SUCCESS;
}

int cudnnCreateFilterDescriptor(cudnnFilterStruct** desc) { return createObject(desc); }

int cudnnDestroyFilterDescriptor(cudnnFilterStruct* desc) { return destroyObject(desc); }

// Note the order: data type before format here, unlike cudnnSetTensor4dDescriptor.
int cudnnSetFilter4dDescriptor(cudnnFilterStruct* desc, int type, int format, int k, int c, int h, int w) {
    cudnnFilterStruct* d = live(desc);
    if (d == nullptr) return BAD_PARAM;
    int status = checkTypeAndDims(type, k, c, h, w);
    if (status == SUCCESS) status = checkFormat(format);
    if (status != SUCCESS) return status;
    d->type = type;
    d->layout = format == FORMAT_NHWC ? nhwcLayout(k, c, h, w) : packedLayout(k, c, h, w);  // NHWC filters are KRSC
    d->set = true;
    return SUCCESS;
}

int cudnnCreateConvolutionDescriptor(cudnnConvolutionStruct** desc) { return createObject(desc); }

int cudnnDestroyConvolutionDescriptor(cudnnConvolutionStruct* desc) { return destroyObject(desc); }

int cudnnSetConvolution2dDescriptor(cudnnConvolutionStruct* desc, int padH, int padW, int strideH, int strideW, int dilationH,
                                    int dilationW, int mode, int computeType) {
    cudnnConvolutionStruct* d = live(desc);
    if (d == nullptr || padH < 0 || padW < 0 || strideH <= 0 || strideW <= 0 || dilationH <= 0 || dilationW <= 0) return BAD_PARAM;
    if ((mode != CONVOLUTION && mode != CROSS_CORRELATION) || computeType < 0 || computeType > DATA_LAST) return BAD_PARAM;
    d->pad[0] = padH, d->pad[1] = padW;
    d->stride[0] = strideH, d->stride[1] = strideW;
    d->dilation[0] = dilationH, d->dilation[1] = dilationW;
    d->mode = mode;
    d->computeType = computeType;
    d->set = true;
    return SUCCESS;
}

int cudnnSetConvolutionGroupCount(cudnnConvolutionStruct* desc, int groups) {
    cudnnConvolutionStruct* d = live(desc);
    if (d == nullptr || groups < 1) return BAD_PARAM;
    d->groups = groups;
    return SUCCESS;
}

int cudnnSetConvolutionMathType(cudnnConvolutionStruct* desc, int mathType) {
    cudnnConvolutionStruct* d = live(desc);
    if (d == nullptr || mathType < 0 || mathType > MATH_LAST) return BAD_PARAM;
    d->mathType = mathType;
    return SUCCESS;
}

int cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionStruct* conv, const cudnnTensorStruct* x,
                                          const cudnnFilterStruct* w, int* n, int* c, int* h, int* wOut) {
    if (n == nullptr || c == nullptr || h == nullptr || wOut == nullptr) return BAD_PARAM;
    Convolution cv;
    int status = describe(x, w, conv, &cv);
    if (status != SUCCESS) return status;
    *n = int(cv.g.n), *c = int(cv.g.k), *h = int(cv.g.oh), *wOut = int(cv.g.ow);
    return SUCCESS;
}

int cudnnGetConvolutionForwardAlgorithm_v7(cudnnContext* handle, const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                                           const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y, int requested,
                                           int* returned, AlgoPerf* results) {
    return algorithms(Direction::Forward, handle, x, w, conv, y, requested, returned, results);
}

int cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnContext* handle, const cudnnFilterStruct* w, const cudnnTensorStruct* dy,
                                                const cudnnConvolutionStruct* conv, const cudnnTensorStruct* dx, int requested,
                                                int* returned, AlgoPerf* results) {
    return algorithms(Direction::BackwardData, handle, dx, w, conv, dy, requested, returned, results);
}

int cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnContext* handle, const cudnnTensorStruct* x, const cudnnTensorStruct* dy,
                                                  const cudnnConvolutionStruct* conv, const cudnnFilterStruct* dw, int requested,
                                                  int* returned, AlgoPerf* results) {
    return algorithms(Direction::BackwardFilter, handle, x, dw, conv, dy, requested, returned, results);
}

int cudnnGetConvolutionForwardWorkspaceSize(cudnnContext* handle, const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                                            const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y, int algo, size_t* bytes) {
    return workspaceQuery(Direction::Forward, handle, x, w, conv, y, algo, bytes);
}

int cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnContext* handle, const cudnnFilterStruct* w, const cudnnTensorStruct* dy,
                                                 const cudnnConvolutionStruct* conv, const cudnnTensorStruct* dx, int algo,
                                                 size_t* bytes) {
    return workspaceQuery(Direction::BackwardData, handle, dx, w, conv, dy, algo, bytes);
}

int cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnContext* handle, const cudnnTensorStruct* x, const cudnnTensorStruct* dy,
                                                   const cudnnConvolutionStruct* conv, const cudnnFilterStruct* dw, int algo,
                                                   size_t* bytes) {
    return workspaceQuery(Direction::BackwardFilter, handle, x, dw, conv, dy, algo, bytes);
}

int cudnnConvolutionForward(cudnnContext* handle, const void* alpha, const cudnnTensorStruct* xDesc, const void* x,
                            const cudnnFilterStruct* wDesc, const void* w, const cudnnConvolutionStruct* conv, int algo,
                            void* workspace, size_t workspaceSize, const void* beta, const cudnnTensorStruct* yDesc, void* y) {
    return convolve(Direction::Forward, handle, alpha, xDesc, x, wDesc, w, conv, algo, workspace, workspaceSize, beta, yDesc, y);
}

int cudnnConvolutionBackwardData(cudnnContext* handle, const void* alpha, const cudnnFilterStruct* wDesc, const void* w,
                                 const cudnnTensorStruct* dyDesc, const void* dy, const cudnnConvolutionStruct* conv, int algo,
                                 void* workspace, size_t workspaceSize, const void* beta, const cudnnTensorStruct* dxDesc, void* dx) {
    return convolve(Direction::BackwardData, handle, alpha, dxDesc, dx, wDesc, w, conv, algo, workspace, workspaceSize, beta, dyDesc,
                    dy);
}

int cudnnConvolutionBackwardFilter(cudnnContext* handle, const void* alpha, const cudnnTensorStruct* xDesc, const void* x,
                                   const cudnnTensorStruct* dyDesc, const void* dy, const cudnnConvolutionStruct* conv, int algo,
                                   void* workspace, size_t workspaceSize, const void* beta, const cudnnFilterStruct* dwDesc,
                                   void* dw) {
    return convolve(Direction::BackwardFilter, handle, alpha, xDesc, x, dwDesc, dw, conv, algo, workspace, workspaceSize, beta,
                    dyDesc, dy);
}

int cudnnConvolutionBackwardBias(cudnnContext* handle, const void* alpha, const cudnnTensorStruct* dyDesc, const void* dy,
                                 const void* beta, const cudnnTensorStruct* dbDesc, void* db) {
    return biasCall(BiasOp::Gradient, handle, alpha, dyDesc, dy, beta, dbDesc, db);
}

int cudnnAddTensor(cudnnContext* handle, const void* alpha, const cudnnTensorStruct* aDesc, const void* a, const void* beta,
                   const cudnnTensorStruct* cDesc, void* c) {
    return biasCall(BiasOp::Add, handle, alpha, aDesc, a, beta, cDesc, c);
}

}  // extern "C"
