// Simulated cuBLASLt (libcublasLt.so.13): the C ABI of NVIDIA's cublasLt.h for what jtorch binds,
// computing D = alpha * op(A) op(B) + beta * C on the host. Device pointers are host addresses of
// blocks the simulated driver allocated (jtsim.h); each cublasLtMatmul is enqueued on its stream and
// checks its operands' ranges when it runs, as a kernel would fault on a GPU.
//
// Supported, as the real library: column- (and row-) ordered f32, f64, f16 and bf16 matrices;
// compute 32F (also 32F_PEDANTIC and the 32F_FAST_* variants, computed exactly in f32 here: the
// TF32/bf16x3 shortcuts are allowed to be less accurate, never required to be), 64F for f64;
// f16/bf16 inputs with f16/bf16 or f32 outputs in 32F with f32 alpha/beta. Accumulation is in f32
// (f64 for 64F), with one rounding to the storage type at the end. One algorithm, no workspace.
//
// Epilogues (cublasLtEpilogue_t), as NVIDIA documents them: D = act(alpha op(A) op(B) + beta C + bias)
// with bias a packed vector of D's type, one element per row of D (BIAS_BATCH_STRIDE elements apart
// between batch entries), broadcast over the columns; act is ReLU, max(x, 0), or GELU in its tanh form,
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (cuBLASLt's GELU is the tanh approximation). The
// _AUX forms of GELU also store act's input, rounded to D's type, in the aux matrix (D's type,
// column-major, EPILOGUE_AUX_LD elements apart, a multiple of 8 and at least D's rows). Not simulated
// (NOT_SUPPORTED here, though the real library runs them): the ReLU bit-mask aux forms, the DRELU/DGELU
// backward forms and the bias gradients (BGRADA/BGRADB).
#include "half.h"
#include "jtsim.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

// ---- numbers from NVIDIA's headers (cublas_api.h, library_types.h, cublasLt.h) ------------------

enum Status {
    SUCCESS = 0,
    NOT_INITIALIZED = 1,
    ALLOC_FAILED = 3,
    INVALID_VALUE = 7,
    ARCH_MISMATCH = 8,
    MAPPING_ERROR = 11,
    EXECUTION_FAILED = 13,
    INTERNAL_ERROR = 14,
    NOT_SUPPORTED = 15,
    LICENSE_ERROR = 16,
};

enum DataType { R_32F = 0, R_64F = 1, R_16F = 2, R_16BF = 14 };

enum ComputeType {
    COMPUTE_32F = 68,
    COMPUTE_32F_PEDANTIC = 69,
    COMPUTE_64F = 70,
    COMPUTE_64F_PEDANTIC = 71,
    COMPUTE_32F_FAST_16F = 74,
    COMPUTE_32F_FAST_16BF = 75,
    COMPUTE_32F_FAST_TF32 = 77,
};

enum Operation { OP_N = 0, OP_T = 1, OP_C = 2 };  // OP_C (conjugate transpose) is OP_T for real types
enum Order { ORDER_COL = 0, ORDER_ROW = 1 };
enum PointerMode { POINTER_MODE_HOST = 0, POINTER_MODE_DEVICE = 1 };
constexpr int32_t FILL_MODE_FULL = 2;
constexpr uint32_t EPILOGUE_DEFAULT = 1;

// cublasLtEpilogue_t: bits of one value (RELU 2, BIAS 4, GELU 32, AUX 128).
enum Epilogue : uint32_t {
    EPILOGUE_RELU = 2,
    EPILOGUE_BIAS = 4,
    EPILOGUE_RELU_BIAS = 6,
    EPILOGUE_GELU = 32,
    EPILOGUE_GELU_BIAS = 36,
    EPILOGUE_GELU_AUX = 160,
    EPILOGUE_GELU_AUX_BIAS = 164,
};
constexpr uint32_t EPILOGUE_BIAS_BIT = 4, EPILOGUE_AUX_BIT = 128;
enum class Activation { None, Relu, Gelu };

// ---- live objects ---------------------------------------------------------------------------------
// Every handle and descriptor is registered with its kind, so that a null, freed or foreign pointer,
// or a descriptor of another kind, is answered with a status instead of being dereferenced.

enum class Kind { Handle, MatmulDesc, Layout, Preference };

struct Handle {
    static constexpr Kind kKind = Kind::Handle;
};

struct MatmulDesc {
    static constexpr Kind kKind = Kind::MatmulDesc;
    int32_t computeType = 0, scaleType = 0, pointerMode = POINTER_MODE_HOST;
    int32_t transA = OP_N, transB = OP_N, transC = OP_N, fillMode = FILL_MODE_FULL;
    uint32_t epilogue = EPILOGUE_DEFAULT;
    uint64_t biasPointer = 0, auxPointer = 0;
    int64_t biasBatchStride = 0, auxLd = 0, auxBatchStride = 0, alphaVectorBatchStride = 0;
    int32_t smCountTarget = 0;
};

struct Layout {
    static constexpr Kind kKind = Kind::Layout;
    uint32_t type = 0;
    int32_t order = ORDER_COL;
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0;
    int32_t batchCount = 1;
    int64_t batchStride = 0, planeOffset = 0;
};

struct Preference {
    static constexpr Kind kKind = Kind::Preference;
    uint32_t searchMode = 0, reductionSchemeMask = 0xff;
    uint64_t maxWorkspaceBytes = 0, implMask = ~uint64_t(0);
    uint32_t minAlignment[4] = {256, 256, 256, 256};
    float maxWavesCount = 0;
};

std::mutex registryMutex;
// Leaked on purpose: calls made while the process's static objects are destroyed still find it.
auto& live = *new std::unordered_map<const void*, Kind>();

// The object p when it is a live T, else null; registryMutex must be held.
template <class T>
T* find(const void* p) {
    auto it = live.find(p);
    return it != live.end() && it->second == T::kKind ? static_cast<T*>(const_cast<void*>(p)) : nullptr;
}

template <class T>
int create(T** out) {
    if (out == nullptr) return INVALID_VALUE;
    T* obj = new (std::nothrow) T();
    if (obj == nullptr) return ALLOC_FAILED;
    try {
        std::lock_guard<std::mutex> lock(registryMutex);
        live.emplace(obj, T::kKind);
    } catch (...) {
        delete obj;
        return ALLOC_FAILED;
    }
    *out = obj;
    return SUCCESS;
}

template <class T>
int destroy(T* obj, int notFound) {
    {
        std::lock_guard<std::mutex> lock(registryMutex);
        if (find<T>(obj) == nullptr) return notFound;
        live.erase(obj);
    }
    delete obj;
    return SUCCESS;
}

// ---- attributes -----------------------------------------------------------------------------------
// An attribute is a field of the object with the exact size the header documents; Set and Get copy
// bytes after checking it.

struct Field {
    void* at;
    size_t size;
};

template <class V>
Field field(V& v) {
    return {&v, sizeof(V)};
}

bool descField(MatmulDesc& d, int attr, Field* f) {
    switch (attr) {
        case 0: *f = field(d.computeType); return true;
        case 1: *f = field(d.scaleType); return true;
        case 2: *f = field(d.pointerMode); return true;
        case 3: *f = field(d.transA); return true;
        case 4: *f = field(d.transB); return true;
        case 5: *f = field(d.transC); return true;
        case 6: *f = field(d.fillMode); return true;
        case 7: *f = field(d.epilogue); return true;
        case 8: *f = field(d.biasPointer); return true;
        case 10: *f = field(d.biasBatchStride); return true;
        case 11: *f = field(d.auxPointer); return true;
        case 12: *f = field(d.auxLd); return true;
        case 13: *f = field(d.auxBatchStride); return true;
        case 14: *f = field(d.alphaVectorBatchStride); return true;
        case 15: *f = field(d.smCountTarget); return true;
        default: return false;
    }
}

bool layoutField(Layout& l, int attr, Field* f) {
    switch (attr) {
        case 0: *f = field(l.type); return true;
        case 1: *f = field(l.order); return true;
        case 2: *f = field(l.rows); return true;
        case 3: *f = field(l.cols); return true;
        case 4: *f = field(l.ld); return true;
        case 5: *f = field(l.batchCount); return true;
        case 6: *f = field(l.batchStride); return true;
        case 7: *f = field(l.planeOffset); return true;
        default: return false;
    }
}

bool preferenceField(Preference& p, int attr, Field* f) {
    switch (attr) {
        case 0: *f = field(p.searchMode); return true;
        case 1: *f = field(p.maxWorkspaceBytes); return true;
        case 3: *f = field(p.reductionSchemeMask); return true;
        case 5: case 6: case 7: case 8: *f = field(p.minAlignment[attr - 5]); return true;
        case 9: *f = field(p.maxWavesCount); return true;
        case 12: *f = field(p.implMask); return true;
        default: return false;
    }
}

template <class T>
int setAttribute(T* obj, bool (*fieldOf)(T&, int, Field*), int attr, const void* buf, size_t size) {
    std::lock_guard<std::mutex> lock(registryMutex);
    T* o = find<T>(obj);
    Field f;
    if (o == nullptr || !fieldOf(*o, attr, &f) || buf == nullptr || size != f.size) return INVALID_VALUE;
    std::memcpy(f.at, buf, size);
    return SUCCESS;
}

// sizeInBytes 0 asks for the size (into sizeWritten); otherwise it must be the attribute's size.
template <class T>
int getAttribute(T* obj, bool (*fieldOf)(T&, int, Field*), int attr, void* buf, size_t size, size_t* written) {
    std::lock_guard<std::mutex> lock(registryMutex);
    T* o = find<T>(obj);
    Field f;
    if (o == nullptr || !fieldOf(*o, attr, &f)) return INVALID_VALUE;
    if (size == 0) {
        if (written == nullptr) return INVALID_VALUE;
        *written = f.size;
        return SUCCESS;
    }
    if (buf == nullptr || size != f.size) return INVALID_VALUE;
    std::memcpy(buf, f.at, size);
    if (written != nullptr) *written = size;
    return SUCCESS;
}

// ---- f16 / bf16 -----------------------------------------------------------------------------------

using jtsim16::bf16_to_float;
using jtsim16::float_to_bf16;
using jtsim16::float_to_half;
using jtsim16::half_to_float;

// Storage types: how an element is read into the accumulator type and written back.
struct F32 {
    using Raw = float;
    static constexpr int kType = R_32F;
    static float load(float r) { return r; }
    static float store(float v) { return v; }
};
struct F64 {
    using Raw = double;
    static constexpr int kType = R_64F;
    static double load(double r) { return r; }
    static double store(double v) { return v; }
};
struct F16 {
    using Raw = uint16_t;
    static constexpr int kType = R_16F;
    static float load(uint16_t r) { return half_to_float(r); }
    static uint16_t store(float v) { return float_to_half(v); }
};
struct BF16 {
    using Raw = uint16_t;
    static constexpr int kType = R_16BF;
    static float load(uint16_t r) { return bf16_to_float(r); }
    static uint16_t store(float v) { return float_to_bf16(v); }
};

size_t elementSize(int type) {
    return type == R_64F ? 8 : type == R_32F ? 4 : 2;
}

// Device memory may hold an element at any address (a sliced tensor): read and write through memcpy.
template <class S>
auto load(const unsigned char* base, int64_t index) {
    typename S::Raw r;
    std::memcpy(&r, base + index * int64_t(sizeof r), sizeof r);
    return S::load(r);
}

template <class S, class Acc>
void store(unsigned char* base, int64_t index, Acc v) {
    typename S::Raw r = S::store(v);
    std::memcpy(base + index * int64_t(sizeof r), &r, sizeof r);
}

// ---- the problem ----------------------------------------------------------------------------------

// One operand as the product sees it: element (x, y) of op(M) is at index x * sx + y * sy, entry b of
// the batch batchStride * b elements further (for A (x, y) = (i, p), B (p, j), C and D (i, j)).
struct Operand {
    int type = 0;
    int64_t sx = 0, sy = 0, batchStride = 0;
    uint64_t rows = 0, cols = 0;  // as stored (before op), for the extent
    int64_t rowStride = 0, colStride = 0;
};

struct Problem {
    int computeType = 0, abType = 0, cdType = 0;
    bool f64 = false;
    int64_t m = 0, n = 0, k = 0;
    int32_t batch = 1;
    Operand a, b, c, d;
    // The epilogue: bias (m elements, biasBatchStride apart) and aux (D's shape, column-major, auxLd).
    Activation activation = Activation::None;
    bool bias = false, aux = false;
    int64_t biasBatchStride = 0;
    Operand auxMatrix;
};

// The epilogue's parts, NOT_SUPPORTED for one the simulator does not run.
int epilogueOf(uint32_t e, Problem* p) {
    switch (e) {
        case EPILOGUE_DEFAULT: case EPILOGUE_BIAS: p->activation = Activation::None; break;
        case EPILOGUE_RELU: case EPILOGUE_RELU_BIAS: p->activation = Activation::Relu; break;
        case EPILOGUE_GELU: case EPILOGUE_GELU_BIAS: case EPILOGUE_GELU_AUX: case EPILOGUE_GELU_AUX_BIAS:
            p->activation = Activation::Gelu;
            break;
        default: return NOT_SUPPORTED;
    }
    p->bias = e != EPILOGUE_DEFAULT && (e & EPILOGUE_BIAS_BIT) != 0;
    p->aux = (e & EPILOGUE_AUX_BIT) != 0;
    return SUCCESS;
}

// Validates the stored matrix: order, sizes, leading dimension and batch count.
int storedOperand(const Layout& l, Operand* o) {
    if (l.order != ORDER_COL && l.order != ORDER_ROW) return NOT_SUPPORTED;
    if (l.planeOffset != 0) return NOT_SUPPORTED;  // planar complex only
    if (l.rows > INT32_MAX || l.cols > INT32_MAX) return NOT_SUPPORTED;
    // An empty matrix: NVIDIA documents no answer; "impossible configuration" (jtorch never sends one).
    if (l.rows == 0 || l.cols == 0) return INVALID_VALUE;
    // The leading dimension must keep columns (rows for ORDER_ROW) apart.
    uint64_t minLd = l.order == ORDER_COL ? l.rows : l.cols;
    if (l.ld < 0 || uint64_t(l.ld) < minLd) return INVALID_VALUE;
    if (l.batchCount < 1) return INVALID_VALUE;
    o->type = int(l.type);
    o->rows = l.rows;
    o->cols = l.cols;
    o->rowStride = l.order == ORDER_COL ? 1 : l.ld;
    o->colStride = l.order == ORDER_COL ? l.ld : 1;
    o->batchStride = l.batchStride;
    return SUCCESS;
}

bool transposes(int32_t op) {
    return op == OP_T || op == OP_C;
}

// Which (compute, scale, A/B, C/D) combinations run, as in the real library's table for these types.
int checkTypes(int compute, int scale, int ab, int cd) {
    switch (compute) {
        case COMPUTE_64F:
        case COMPUTE_64F_PEDANTIC:
            return scale == R_64F && ab == R_64F && cd == R_64F ? SUCCESS : NOT_SUPPORTED;
        case COMPUTE_32F_FAST_TF32:
        case COMPUTE_32F_FAST_16F:
        case COMPUTE_32F_FAST_16BF:
            return scale == R_32F && ab == R_32F && cd == R_32F ? SUCCESS : NOT_SUPPORTED;
        case COMPUTE_32F:
        case COMPUTE_32F_PEDANTIC:
            if (scale != R_32F) return NOT_SUPPORTED;
            if (ab == R_32F) return cd == R_32F ? SUCCESS : NOT_SUPPORTED;
            if (ab == R_16F || ab == R_16BF) return cd == ab || cd == R_32F ? SUCCESS : NOT_SUPPORTED;
            return NOT_SUPPORTED;
        default:
            return NOT_SUPPORTED;
    }
}

int makeProblem(const MatmulDesc& desc, const Layout& la, const Layout& lb, const Layout& lc, const Layout& ld,
        Problem* p) {
    if (desc.pointerMode != POINTER_MODE_HOST && desc.pointerMode != POINTER_MODE_DEVICE) return NOT_SUPPORTED;
    if (desc.transC != OP_N || desc.fillMode != FILL_MODE_FULL) return NOT_SUPPORTED;
    int rc = epilogueOf(desc.epilogue, p);
    if (rc != SUCCESS) return rc;
    for (int32_t op : {desc.transA, desc.transB}) {
        if (op != OP_N && !transposes(op)) return INVALID_VALUE;
    }
    if (la.type != lb.type || lc.type != ld.type) return NOT_SUPPORTED;
    rc = checkTypes(desc.computeType, desc.scaleType, int(la.type), int(lc.type));
    if (rc != SUCCESS) return rc;
    Operand a, b, c, d;
    const Layout* stored[4] = {&la, &lb, &lc, &ld};
    Operand* operands[4] = {&a, &b, &c, &d};
    for (int i = 0; i < 4; ++i) {
        if ((rc = storedOperand(*stored[i], operands[i])) != SUCCESS) return rc;
    }
    // op(A) is m x k, op(B) k x n, C and D m x n.
    bool ta = transposes(desc.transA), tb = transposes(desc.transB);
    int64_t m = int64_t(d.rows), n = int64_t(d.cols);
    int64_t k = int64_t(ta ? a.rows : a.cols);
    if (int64_t(ta ? a.cols : a.rows) != m || int64_t(tb ? b.cols : b.rows) != k || int64_t(tb ? b.rows : b.cols) != n
            || c.rows != d.rows || c.cols != d.cols) {
        return INVALID_VALUE;
    }
    if (la.batchCount != ld.batchCount || lb.batchCount != ld.batchCount || lc.batchCount != ld.batchCount) {
        return INVALID_VALUE;
    }
    a.sx = ta ? a.colStride : a.rowStride;
    a.sy = ta ? a.rowStride : a.colStride;
    b.sx = tb ? b.colStride : b.rowStride;
    b.sy = tb ? b.rowStride : b.colStride;
    for (Operand* o : {&c, &d}) {
        o->sx = o->rowStride;
        o->sy = o->colStride;
    }
    p->computeType = desc.computeType;
    p->abType = int(la.type);
    p->cdType = int(lc.type);
    p->f64 = desc.computeType == COMPUTE_64F || desc.computeType == COMPUTE_64F_PEDANTIC;
    p->m = m;
    p->n = n;
    p->k = k;
    p->batch = ld.batchCount;
    p->a = a;
    p->b = b;
    p->c = c;
    p->d = d;
    p->biasBatchStride = desc.biasBatchStride;
    if (p->aux) {
        // The GELU input matrix: D's type and rows, leading dimension a multiple of 8 and not below D's rows.
        if (desc.auxLd < m || desc.auxLd % 8 != 0) return INVALID_VALUE;
        Operand& x = p->auxMatrix;
        x.type = int(ld.type);
        x.rows = d.rows;
        x.cols = d.cols;
        x.rowStride = x.sx = 1;
        x.colStride = x.sy = desc.auxLd;
        x.batchStride = desc.auxBatchStride;
    }
    return SUCCESS;
}

// The descriptors' settings, copied under the registry lock (the caller may destroy them right after).
int snapshot(const void* handle, const void* desc, const void* la, const void* lb, const void* lc, const void* ld,
        MatmulDesc* d, Layout* layouts) {
    std::lock_guard<std::mutex> lock(registryMutex);
    if (find<Handle>(handle) == nullptr) return NOT_INITIALIZED;
    const MatmulDesc* md = find<MatmulDesc>(desc);
    if (md == nullptr) return INVALID_VALUE;
    *d = *md;
    const void* ls[4] = {la, lb, lc, ld};
    for (int i = 0; i < 4; ++i) {
        const Layout* l = find<Layout>(ls[i]);
        if (l == nullptr) return INVALID_VALUE;
        layouts[i] = *l;
    }
    return SUCCESS;
}

// ---- the algorithm --------------------------------------------------------------------------------
// One algorithm: its descriptor carries a tag so that cublasLtMatmul can tell it from garbage.

constexpr uint64_t kAlgoTag = 0x4a5453494d414c47ull;  // "JTSIMALG"

struct Algo {
    uint64_t data[8];
};

struct HeuristicResult {
    Algo algo;
    size_t workspaceSize;
    int state;
    float wavesCount;
    int reserved[4];
};
static_assert(sizeof(Algo) == 64 && sizeof(HeuristicResult) == 96, "cublasLt.h layout");
static_assert(offsetof(HeuristicResult, workspaceSize) == 64 && offsetof(HeuristicResult, state) == 72
                && offsetof(HeuristicResult, wavesCount) == 76 && offsetof(HeuristicResult, reserved) == 80,
        "cublasLt.h layout");

// ---- the product on the host ----------------------------------------------------------------------
// Blocked as usual for caches: a tile of D (MB x NB) accumulates in W over K in KC-deep slices, each
// slice's op(A) and op(B) panels first packed contiguously (converted to the accumulator type, zero
// padded to whole MR x NR micro-tiles) so that the micro-kernel's fixed-size loops vectorise.

template <class Acc>
struct Blocking;
template <>
struct Blocking<float> {
    static constexpr int MR = 8, NR = 8, MB = 128, NB = 128, KC = 256;
};
template <>
struct Blocking<double> {
    static constexpr int MR = 4, NR = 8, MB = 128, NB = 128, KC = 256;
};

// W[MR x NR] (column-major, leading dimension ldw) += A panel (kc x MR) * B panel (kc x NR).
template <class Acc>
void microKernel(int kc, const Acc* __restrict a, const Acc* __restrict b, Acc* __restrict w, int ldw) {
    constexpr int MR = Blocking<Acc>::MR, NR = Blocking<Acc>::NR;
    Acc acc[NR][MR] = {};
    for (int p = 0; p < kc; ++p, a += MR, b += NR) {
        for (int j = 0; j < NR; ++j) {
            for (int i = 0; i < MR; ++i) acc[j][i] += a[i] * b[j];
        }
    }
    for (int j = 0; j < NR; ++j) {
        for (int i = 0; i < MR; ++i) w[i + j * ldw] += acc[j][i];
    }
}

// Addresses of one batch entry, in bytes, and the element strides.
struct View {
    const unsigned char* base;
    int64_t sx, sy;
};

// Packs rows [x0, x0 + xs) and depth [y0, y0 + kc) of an operand into panels of R rows:
// dst[(x / R) * R * kc + y * R + x % R], rows past xs zero.
template <class Acc, class S, int R>
void pack(Acc* dst, const View& v, int64_t x0, int64_t xs, int64_t y0, int kc) {
    for (int64_t xr = 0; xr < xs; xr += R, dst += R * kc) {
        int rows = int(xs - xr < R ? xs - xr : R);
        for (int y = 0; y < kc; ++y) {
            int64_t at = (x0 + xr) * v.sx + (y0 + y) * v.sy;
            Acc* out = dst + y * R;
            for (int x = 0; x < rows; ++x) out[x] = load<S>(v.base, at + x * v.sx);
            for (int x = rows; x < R; ++x) out[x] = 0;
        }
    }
}

// The whole problem, with pointers and scalars resolved.
template <class Acc>
struct Work {
    int64_t m, n, k, batch;
    const unsigned char *a, *b, *c;
    unsigned char* d;
    int64_t aI, aP, aBatch, bP, bJ, bBatch, cI, cJ, cBatch, dI, dJ, dBatch;
    Acc alpha, beta;
    bool readC;
    // The epilogue: bias indexed by D's row (by its column once compute() has transposed the problem).
    Activation activation = Activation::None;
    const unsigned char* bias = nullptr;
    int64_t biasBatch = 0;
    bool biasByColumn = false;
    unsigned char* aux = nullptr;
    int64_t auxI = 0, auxJ = 0, auxBatch = 0;
};

template <class Acc>
Acc activate(Activation act, Acc x) {
    switch (act) {
        // NaN gives 0, as fmaxf(x, 0) does on the GPU (NVIDIA does not document the epilogue's NaN rule).
        case Activation::Relu: return x > 0 ? x : Acc(0);
        case Activation::Gelu: {
            const Acc k = Acc(0.7978845608028654), c = Acc(0.044715);  // sqrt(2 / pi)
            return Acc(0.5) * x * (Acc(1) + std::tanh(k * (x + c * x * x * x)));
        }
        default: return x;
    }
}

// Computes tiles taken from *next until none is left; throws only before taking one (no memory).
template <class Acc, class SAB, class SCD>
void computeTiles(const Work<Acc>& w, std::atomic<int64_t>* next) {
    using B = Blocking<Acc>;
    constexpr int MR = B::MR, NR = B::NR, MB = B::MB, NB = B::NB, KC = B::KC;
    // Buffers no larger than the problem needs: small products are frequent.
    auto upTo = [](int64_t x, int64_t block, int64_t unit) { return size_t(std::min(block, (x + unit - 1) / unit * unit)); };
    size_t mp = upTo(w.m, MB, MR), np = upTo(w.n, NB, NR), kp = size_t(std::min<int64_t>(KC, w.k));
    std::vector<Acc> aPack(mp * kp), bPack(kp * np), tile(size_t(MB) * np);  // W, column-major, ld MB
    int64_t tilesM = (w.m + MB - 1) / MB, tilesN = (w.n + NB - 1) / NB, tiles = tilesM * tilesN * w.batch;
    for (int64_t t; (t = next->fetch_add(1)) < tiles;) {
        int64_t entry = t / (tilesM * tilesN), i0 = (t % tilesM) * MB, j0 = (t / tilesM % tilesN) * NB;
        int64_t mb = w.m - i0 < MB ? w.m - i0 : MB, nb = w.n - j0 < NB ? w.n - j0 : NB;
        View a{w.a + entry * w.aBatch * int64_t(sizeof(typename SAB::Raw)), w.aI, w.aP};
        View b{w.b + entry * w.bBatch * int64_t(sizeof(typename SAB::Raw)), w.bJ, w.bP};  // packed by column j
        std::fill(tile.begin(), tile.end(), Acc(0));
        for (int64_t p0 = 0; p0 < w.k; p0 += KC) {
            int kc = int(w.k - p0 < KC ? w.k - p0 : KC);
            pack<Acc, SAB, MR>(aPack.data(), a, i0, mb, p0, kc);
            pack<Acc, SAB, NR>(bPack.data(), b, j0, nb, p0, kc);
            for (int64_t jr = 0; jr < nb; jr += NR) {
                for (int64_t ir = 0; ir < mb; ir += MR) {
                    microKernel<Acc>(kc, aPack.data() + ir * kc, bPack.data() + jr * kc, tile.data() + ir + jr * MB, MB);
                }
            }
        }
        // D = alpha * W + beta * C, C read only when beta != 0 (its NaNs must not reach D otherwise).
        const unsigned char* c = w.readC ? w.c + entry * w.cBatch * int64_t(sizeof(typename SCD::Raw)) : nullptr;
        unsigned char* d = w.d + entry * w.dBatch * int64_t(sizeof(typename SCD::Raw));
        // Then the epilogue: + bias, the activation's input kept in aux (rounded to D's type), the activation.
        const unsigned char* bias = w.bias ? w.bias + entry * w.biasBatch * int64_t(sizeof(typename SCD::Raw)) : nullptr;
        unsigned char* aux = w.aux ? w.aux + entry * w.auxBatch * int64_t(sizeof(typename SCD::Raw)) : nullptr;
        for (int64_t j = 0; j < nb; ++j) {
            for (int64_t i = 0; i < mb; ++i) {
                Acc v = w.alpha * tile[size_t(i + j * MB)];
                if (w.readC) v += w.beta * load<SCD>(c, (i0 + i) * w.cI + (j0 + j) * w.cJ);
                if (bias != nullptr) v += load<SCD>(bias, w.biasByColumn ? j0 + j : i0 + i);
                if (aux != nullptr) store<SCD>(aux, (i0 + i) * w.auxI + (j0 + j) * w.auxJ, v);
                store<SCD>(d, (i0 + i) * w.dI + (j0 + j) * w.dJ, activate(w.activation, v));
            }
        }
    }
}

template <class Acc, class SAB, class SCD>
void compute(Work<Acc> w) {
    // A product with fewer rows than a micro-tile wastes most of it: compute D^T = op(B)^T op(A)^T.
    if (w.m < Blocking<Acc>::MR && w.n > w.m) {
        std::swap(w.m, w.n);
        std::swap(w.a, w.b);
        std::swap(w.aBatch, w.bBatch);
        int64_t aI = w.aI, aP = w.aP;
        w.aI = w.bJ;
        w.aP = w.bP;
        w.bJ = aI;
        w.bP = aP;
        std::swap(w.cI, w.cJ);
        std::swap(w.dI, w.dJ);
        std::swap(w.auxI, w.auxJ);
        w.biasByColumn = !w.biasByColumn;
    }
    std::atomic<int64_t> next{0};
    using B = Blocking<Acc>;
    int64_t tiles = ((w.m + B::MB - 1) / B::MB) * ((w.n + B::NB - 1) / B::NB) * w.batch;
    // A second thread pays off above about a million multiply-adds (CI has two cores).
    double work = double(w.m) * double(w.n) * double(w.k) * double(w.batch);
    // A worker that finds no memory takes no tile, so the other one does them all.
    auto worker = [&w, &next]() noexcept {
        try {
            computeTiles<Acc, SAB, SCD>(w, &next);
            return true;
        } catch (...) {
            return false;
        }
    };
    bool helperDone = false;
    std::thread helper;
    static const unsigned cores = std::thread::hardware_concurrency();
    if (tiles > 1 && work >= double(1 << 20) && cores > 1) {
        try {
            helper = std::thread([&] { helperDone = worker(); });
        } catch (...) {
            // No thread: this one does all tiles.
        }
    }
    bool done = worker();
    if (helper.joinable()) helper.join();
    if (!done && !helperDone) throw std::bad_alloc();
}

// ---- the enqueued call ----------------------------------------------------------------------------

struct Job {
    Problem p;
    uintptr_t a, b, c, d, bias, aux;
    int pointerMode;
    double alpha, beta;             // host mode: the values at the call
    uintptr_t alphaPtr, betaPtr;    // device mode: read when the work runs
};

// [lo, hi) in bytes of every element an operand's batch touches; false when it leaves the address space.
bool extent(uintptr_t base, const Operand& o, int32_t batch, size_t es, uintptr_t* lo, size_t* bytes) {
    __int128 first = 0, last = __int128(o.rows - 1) * o.rowStride + __int128(o.cols - 1) * o.colStride;
    __int128 shift = __int128(batch - 1) * o.batchStride;
    (shift < 0 ? first : last) += shift;
    __int128 from = __int128(base) + first * __int128(es), to = __int128(base) + (last + 1) * __int128(es);
    if (from < 0 || to > __int128(UINTPTR_MAX)) return false;
    *lo = uintptr_t(from);
    *bytes = size_t(to - from);
    return true;
}

bool checkRange(const char* name, uintptr_t lo, size_t bytes, bool inAddressSpace) {
    if (inAddressSpace && jtsim_check_device_range(lo, bytes) == JTSIM_SUCCESS) return true;
    char message[160];
    std::snprintf(message, sizeof message, "cublasLtMatmul: %s [0x%llx, +%llu bytes) is outside any allocation", name,
            static_cast<unsigned long long>(lo), static_cast<unsigned long long>(bytes));
    jtsim_fail(JTSIM_ERROR_ILLEGAL_ADDRESS, message);
    return false;
}

bool checkOperand(const char* name, uintptr_t base, const Operand& o, int32_t batch) {
    uintptr_t lo = base;
    size_t bytes = 0;
    bool ok = extent(base, o, batch, elementSize(o.type), &lo, &bytes);
    return checkRange(name, lo, bytes, ok);
}

// A device-mode scalar of the scale type, read after checking its range.
bool deviceScalar(const char* name, uintptr_t at, bool f64, double* value) {
    size_t bytes = f64 ? 8 : 4;
    if (!checkRange(name, at, bytes, true)) return false;
    if (f64) {
        std::memcpy(value, reinterpret_cast<const void*>(at), 8);
    } else {
        float f;
        std::memcpy(&f, reinterpret_cast<const void*>(at), 4);
        *value = f;
    }
    return true;
}

template <class Acc, class SAB, class SCD>
void run(const Job& job) {
    const Problem& p = job.p;
    Work<Acc> w;
    w.m = p.m;
    w.n = p.n;
    w.k = p.k;
    w.batch = p.batch;
    w.a = reinterpret_cast<const unsigned char*>(job.a);
    w.b = reinterpret_cast<const unsigned char*>(job.b);
    w.c = reinterpret_cast<const unsigned char*>(job.c);
    w.d = reinterpret_cast<unsigned char*>(job.d);
    w.aI = p.a.sx, w.aP = p.a.sy, w.aBatch = p.a.batchStride;
    w.bP = p.b.sx, w.bJ = p.b.sy, w.bBatch = p.b.batchStride;
    w.cI = p.c.sx, w.cJ = p.c.sy, w.cBatch = p.c.batchStride;
    w.dI = p.d.sx, w.dJ = p.d.sy, w.dBatch = p.d.batchStride;
    w.alpha = Acc(job.alpha);
    w.beta = Acc(job.beta);
    w.readC = job.beta != 0;
    w.activation = p.activation;
    w.bias = p.bias ? reinterpret_cast<const unsigned char*>(job.bias) : nullptr;
    w.biasBatch = p.biasBatchStride;
    w.aux = p.aux ? reinterpret_cast<unsigned char*>(job.aux) : nullptr;
    w.auxI = p.auxMatrix.sx, w.auxJ = p.auxMatrix.sy, w.auxBatch = p.auxMatrix.batchStride;
    compute<Acc, SAB, SCD>(w);
}

void runJob(void* arg) {
    Job job = *static_cast<Job*>(arg);
    const Problem& p = job.p;
    if (job.pointerMode == POINTER_MODE_DEVICE) {
        if (!deviceScalar("alpha", job.alphaPtr, p.f64, &job.alpha)) return;
        if (!deviceScalar("beta", job.betaPtr, p.f64, &job.beta)) return;
    }
    if (!checkOperand("operand A", job.a, p.a, p.batch) || !checkOperand("operand B", job.b, p.b, p.batch)) return;
    if (job.beta != 0 && !checkOperand("operand C", job.c, p.c, p.batch)) return;
    if (!checkOperand("operand D", job.d, p.d, p.batch)) return;
    if (p.bias) {
        Operand v;  // a column of m elements of D's type
        v.type = p.cdType;
        v.rows = uint64_t(p.m);
        v.cols = 1;
        v.rowStride = 1;
        v.batchStride = p.biasBatchStride;
        if (!checkOperand("the bias vector", job.bias, v, p.batch)) return;
    }
    if (p.aux && !checkOperand("the epilogue's aux matrix", job.aux, p.auxMatrix, p.batch)) return;
    try {
        if (p.f64) {
            run<double, F64, F64>(job);
        } else if (p.abType == R_32F) {
            run<float, F32, F32>(job);
        } else if (p.abType == R_16F) {
            p.cdType == R_16F ? run<float, F16, F16>(job) : run<float, F16, F32>(job);
        } else {
            p.cdType == R_16BF ? run<float, BF16, BF16>(job) : run<float, BF16, F32>(job);
        }
    } catch (...) {  // out of host memory for the packed panels
        jtsim_fail(JTSIM_ERROR_LAUNCH_FAILED, "cublasLtMatmul: the simulator ran out of host memory");
    }
}

void deleteJob(void* arg) {
    delete static_cast<Job*>(arg);
}

bool sameLayout(const Operand& x, const Operand& y) {
    return x.rowStride == y.rowStride && x.colStride == y.colStride && x.batchStride == y.batchStride;
}

}  // namespace

// ---- the C API ------------------------------------------------------------------------------------

extern "C" {

typedef void* cublasLtHandle_t;
typedef void* cublasLtMatmulDesc_t;
typedef void* cublasLtMatrixLayout_t;
typedef void* cublasLtMatmulPreference_t;

size_t cublasLtGetVersion(void) {
    return 130100;  // 13.1.0, the release jtorch ran on the H200
}

int cublasLtGetProperty(int type, int* value) {
    static const int parts[3] = {13, 1, 0};  // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
    if (value == nullptr || type < 0 || type > 2) return INVALID_VALUE;
    *value = parts[type];
    return SUCCESS;
}

const char* cublasLtGetStatusName(int status) {
    switch (status) {
        case SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
        case EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
        case NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        case LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
        default: return "<unknown>";
    }
}

const char* cublasLtGetStatusString(int status) {
    switch (status) {
        case SUCCESS: return "success";
        case NOT_INITIALIZED: return "the library was not initialized";
        case ALLOC_FAILED: return "the resource allocation failed";
        case INVALID_VALUE: return "an invalid numeric value was used as an argument";
        case ARCH_MISMATCH: return "an absent device architectural feature is required";
        case MAPPING_ERROR: return "an access to GPU memory space failed";
        case EXECUTION_FAILED: return "the GPU program failed to execute";
        case INTERNAL_ERROR: return "an internal operation failed";
        case NOT_SUPPORTED: return "the functionality requested is not supported";
        case LICENSE_ERROR: return "an error was detected when checking the current licensing";
        default: return "unknown error";
    }
}

int cublasLtCreate(cublasLtHandle_t* handle) {
    return create(reinterpret_cast<Handle**>(handle));
}

int cublasLtDestroy(cublasLtHandle_t handle) {
    return destroy(static_cast<Handle*>(handle), NOT_INITIALIZED);
}

int cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, int computeType, int scaleType) {
    MatmulDesc* d = nullptr;
    int rc = create(desc == nullptr ? nullptr : &d);
    if (rc != SUCCESS) return rc;
    d->computeType = computeType;  // checked against the data types at the heuristic and the matmul
    d->scaleType = scaleType;
    *desc = d;
    return SUCCESS;
}

int cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    return destroy(static_cast<MatmulDesc*>(desc), INVALID_VALUE);
}

int cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, int attr, const void* buf, size_t size) {
    return setAttribute(static_cast<MatmulDesc*>(desc), descField, attr, buf, size);
}

int cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc, int attr, void* buf, size_t size, size_t* written) {
    return getAttribute(static_cast<MatmulDesc*>(desc), descField, attr, buf, size, written);
}

int cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, int type, uint64_t rows, uint64_t cols, int64_t ld) {
    Layout* l = nullptr;
    int rc = create(layout == nullptr ? nullptr : &l);
    if (rc != SUCCESS) return rc;
    l->type = uint32_t(type);  // sizes and ld are checked where they are used, as the real library does
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    *layout = l;
    return SUCCESS;
}

int cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    return destroy(static_cast<Layout*>(layout), INVALID_VALUE);
}

int cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, int attr, const void* buf, size_t size) {
    return setAttribute(static_cast<Layout*>(layout), layoutField, attr, buf, size);
}

int cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout, int attr, void* buf, size_t size, size_t* written) {
    return getAttribute(static_cast<Layout*>(layout), layoutField, attr, buf, size, written);
}

int cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
    return create(reinterpret_cast<Preference**>(pref));
}

int cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    return destroy(static_cast<Preference*>(pref), INVALID_VALUE);
}

int cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref, int attr, const void* buf, size_t size) {
    return setAttribute(static_cast<Preference*>(pref), preferenceField, attr, buf, size);
}

int cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref, int attr, void* buf, size_t size,
        size_t* written) {
    return getAttribute(static_cast<Preference*>(pref), preferenceField, attr, buf, size, written);
}

int cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t aDesc,
        cublasLtMatrixLayout_t bDesc, cublasLtMatrixLayout_t cDesc, cublasLtMatrixLayout_t dDesc,
        cublasLtMatmulPreference_t pref, int requested, void* results, int* returned) {
    if (returned != nullptr) *returned = 0;
    MatmulDesc d;
    Layout layouts[4];
    int rc = snapshot(handle, desc, aDesc, bDesc, cDesc, dDesc, &d, layouts);
    if (rc != SUCCESS) return rc;
    {
        std::lock_guard<std::mutex> lock(registryMutex);
        if (find<Preference>(pref) == nullptr) return INVALID_VALUE;
    }
    if (requested <= 0 || results == nullptr || returned == nullptr) return INVALID_VALUE;
    Problem p;
    if ((rc = makeProblem(d, layouts[0], layouts[1], layouts[2], layouts[3], &p)) != SUCCESS) return rc;
    // One algorithm, needing no workspace and any alignment, so every preference admits it.
    HeuristicResult r{};
    r.algo.data[0] = kAlgoTag;
    r.workspaceSize = 0;
    r.state = SUCCESS;
    r.wavesCount = 1.0f;
    std::memcpy(results, &r, sizeof r);
    *returned = 1;
    return SUCCESS;
}

int cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
        cublasLtMatrixLayout_t aDesc, const void* B, cublasLtMatrixLayout_t bDesc, const void* beta, const void* C,
        cublasLtMatrixLayout_t cDesc, void* D, cublasLtMatrixLayout_t dDesc, const void* algo, void* workspace,
        size_t workspaceBytes, uintptr_t stream) {
    (void)workspace;
    (void)workspaceBytes;  // the algorithm needs none
    MatmulDesc d;
    Layout layouts[4];
    int rc = snapshot(handle, desc, aDesc, bDesc, cDesc, dDesc, &d, layouts);
    if (rc != SUCCESS) return rc;
    if (alpha == nullptr || beta == nullptr) return INVALID_VALUE;
    if (algo != nullptr) {  // null: the library picks (ours has one algorithm)
        Algo given;
        std::memcpy(&given, algo, sizeof given);
        if (given.data[0] != kAlgoTag) return INVALID_VALUE;
    }
    Job* job = new (std::nothrow) Job();
    if (job == nullptr) return ALLOC_FAILED;
    if ((rc = makeProblem(d, layouts[0], layouts[1], layouts[2], layouts[3], &job->p)) != SUCCESS) {
        delete job;
        return rc;
    }
    // In place (C == D) needs C laid out as D.
    if (C == D && !sameLayout(job->p.c, job->p.d)) {
        delete job;
        return INVALID_VALUE;
    }
    job->a = reinterpret_cast<uintptr_t>(A);
    job->b = reinterpret_cast<uintptr_t>(B);
    job->c = reinterpret_cast<uintptr_t>(C);
    job->d = reinterpret_cast<uintptr_t>(D);
    job->bias = uintptr_t(d.biasPointer);
    job->aux = uintptr_t(d.auxPointer);
    // An epilogue that reads a bias or writes an aux matrix needs its pointer.
    if ((job->p.bias && job->bias == 0) || (job->p.aux && job->aux == 0)) {
        delete job;
        return INVALID_VALUE;
    }
    job->pointerMode = d.pointerMode;
    if (d.pointerMode == POINTER_MODE_DEVICE) {
        job->alphaPtr = reinterpret_cast<uintptr_t>(alpha);
        job->betaPtr = reinterpret_cast<uintptr_t>(beta);
    } else if (job->p.f64) {
        std::memcpy(&job->alpha, alpha, 8);
        std::memcpy(&job->beta, beta, 8);
    } else {
        float fa, fb;
        std::memcpy(&fa, alpha, 4);
        std::memcpy(&fb, beta, 4);
        job->alpha = fa;
        job->beta = fb;
    }
    // On an error the driver has run deleteJob already.
    if (jtsim_stream_enqueue(stream, "cublasLtMatmul", runJob, job, deleteJob) != JTSIM_SUCCESS) return EXECUTION_FAILED;
    return SUCCESS;
}

}  // extern "C"
