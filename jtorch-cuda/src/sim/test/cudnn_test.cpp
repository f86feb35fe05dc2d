// Tests of the simulated cuDNN (libcudnn.so.9) through its public C API only, run against the stand-in
// driver jtsim_stub_cudnn.cpp (libcuda.so.1). Every convolution is checked against a direct convolution in
// double written here from its definition; 16-bit roundings against hand-computed bit patterns. Exits 1 on
// any failure. Built and run by run-cudnn-test.sh.
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

// ---- the API under test, declared from cuDNN's documentation (enums as int, descriptors opaque) ----------

struct Perf {  // cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t
    int algo;
    int status;
    float time;
    size_t memory;
    int determinism;
    int mathType;
    int reserved[3];
};
// The offsets jtorch's CudnnConstants reads (PERF_*_OFFSET, PERF_SIZE).
static_assert(offsetof(Perf, algo) == 0 && offsetof(Perf, status) == 4 && offsetof(Perf, time) == 8 &&
                  offsetof(Perf, memory) == 16 && offsetof(Perf, determinism) == 24 && offsetof(Perf, mathType) == 28 &&
                  offsetof(Perf, reserved) == 32 && sizeof(Perf) == 48 && alignof(Perf) == 8,
              "perf struct layout");

extern "C" {
size_t cudnnGetVersion(void);
const char* cudnnGetErrorString(int status);
int cudnnCreate(void** handle);
int cudnnDestroy(void* handle);
int cudnnSetStream(void* handle, uintptr_t stream);
int cudnnCreateTensorDescriptor(void** desc);
int cudnnDestroyTensorDescriptor(void* desc);
int cudnnSetTensor4dDescriptor(void* desc, int format, int type, int n, int c, int h, int w);
int cudnnSetTensor4dDescriptorEx(void* desc, int type, int n, int c, int h, int w, int ns, int cs, int hs, int ws);
int cudnnCreateFilterDescriptor(void** desc);
int cudnnDestroyFilterDescriptor(void* desc);
int cudnnSetFilter4dDescriptor(void* desc, int type, int format, int k, int c, int h, int w);
int cudnnCreateConvolutionDescriptor(void** desc);
int cudnnDestroyConvolutionDescriptor(void* desc);
int cudnnSetConvolution2dDescriptor(void* desc, int padH, int padW, int u, int v, int dilH, int dilW, int mode, int computeType);
int cudnnSetConvolutionGroupCount(void* desc, int groups);
int cudnnSetConvolutionMathType(void* desc, int mathType);
int cudnnGetConvolution2dForwardOutputDim(void* conv, void* x, void* w, int* n, int* c, int* h, int* wOut);
int cudnnGetConvolutionForwardAlgorithm_v7(void* h, void* x, void* w, void* conv, void* y, int requested, int* returned, Perf* r);
int cudnnGetConvolutionBackwardDataAlgorithm_v7(void* h, void* w, void* dy, void* conv, void* dx, int requested, int* returned,
                                                Perf* r);
int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void* h, void* x, void* dy, void* conv, void* dw, int requested, int* returned,
                                                  Perf* r);
int cudnnGetConvolutionForwardWorkspaceSize(void* h, void* x, void* w, void* conv, void* y, int algo, size_t* bytes);
int cudnnGetConvolutionBackwardDataWorkspaceSize(void* h, void* w, void* dy, void* conv, void* dx, int algo, size_t* bytes);
int cudnnGetConvolutionBackwardFilterWorkspaceSize(void* h, void* x, void* dy, void* conv, void* dw, int algo, size_t* bytes);
int cudnnConvolutionForward(void* h, const void* alpha, void* xd, const void* x, void* wd, const void* w, void* conv, int algo,
                            void* ws, size_t wsBytes, const void* beta, void* yd, void* y);
int cudnnConvolutionBackwardData(void* h, const void* alpha, void* wd, const void* w, void* dyd, const void* dy, void* conv,
                                 int algo, void* ws, size_t wsBytes, const void* beta, void* dxd, void* dx);
int cudnnConvolutionBackwardFilter(void* h, const void* alpha, void* xd, const void* x, void* dyd, const void* dy, void* conv,
                                   int algo, void* ws, size_t wsBytes, const void* beta, void* dwd, void* dw);
int cudnnConvolutionBackwardBias(void* h, const void* alpha, void* dyd, const void* dy, const void* beta, void* dbd, void* db);
int cudnnAddTensor(void* h, const void* alpha, void* ad, const void* a, const void* beta, void* cd, void* c);

// The stand-in driver's hooks.
void jtsim_stub_add_block(const void* start, size_t bytes);
void jtsim_stub_remove_block(const void* start);
void jtsim_stub_reset(void);
const char* jtsim_last_failure(void);
}

namespace {

constexpr int OK = 0, BAD_PARAM = 2000, NOT_SUPPORTED = 3000, EXECUTION_FAILED = 5000;
constexpr int NCHW = 0, NHWC = 1, CONVOLUTION = 0, CROSS_CORRELATION = 1;
constexpr int FMA_MATH = 3, TENSOR_OP_MATH = 1, DEFAULT_MATH = 0;
constexpr uintptr_t BAD_STREAM = 0xbad;  // the stub's nonexistent stream

int failures = 0;

void fail(const char* format, ...) {
    va_list args;
    va_start(args, format);
    std::fprintf(stderr, "FAIL: ");
    std::vfprintf(stderr, format, args);
    std::fprintf(stderr, "\n");
    va_end(args);
    failures++;
}

void expectStatus(int got, int expected, const char* what) {
    if (got != expected) fail("%s: status %d (%s), expected %d", what, got, cudnnGetErrorString(got), expected);
}

// ---- element types -----------------------------------------------------------------------------------

enum class DType { F32, F64, F16, BF16 };

const char* nameOf(DType t) {
    static const char* names[] = {"f32", "f64", "f16", "bf16"};
    return names[int(t)];
}
int cudnnTypeOf(DType t) { return t == DType::F32 ? 0 : t == DType::F64 ? 1 : t == DType::F16 ? 2 : 9; }
size_t sizeOf(DType t) { return t == DType::F64 ? 8 : t == DType::F32 ? 4 : 2; }

double halfValue(uint16_t b) {
    int exp = (b >> 10) & 31, mant = b & 1023;
    double v = exp == 31 ? (mant ? NAN : INFINITY) : exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
    return (b & 0x8000) ? -v : v;
}

double bfloat16Value(uint16_t b) {
    uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

double decode(DType t, const uint8_t* p) {
    switch (t) {
        case DType::F32: { float f; std::memcpy(&f, p, 4); return f; }
        case DType::F64: { double d; std::memcpy(&d, p, 8); return d; }
        case DType::F16: { uint16_t b; std::memcpy(&b, p, 2); return halfValue(b); }
        default: { uint16_t b; std::memcpy(&b, p, 2); return bfloat16Value(b); }
    }
}

// Writes v, which must be exact in t (the test only writes such values), or NaN.
void encode(DType t, double v, uint8_t* p) {
    if (t == DType::F64) { std::memcpy(p, &v, 8); return; }
    float f = float(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (t == DType::F32) { std::memcpy(p, &f, 4); return; }
    uint16_t b;
    if (t == DType::BF16) {
        b = std::isnan(v) ? 0x7fc0 : uint16_t(u >> 16);
    } else if (std::isnan(v)) {
        b = 0x7e00;
    } else {  // a normal half: rebias; the exactness requirement means no bits are lost
        uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff;
        b = f == 0 ? uint16_t(sign) : uint16_t(sign | (exp - 112) << 10 | (u >> 13 & 0x3ff));
    }
    std::memcpy(p, &b, 2);
    if (!std::isnan(v) && decode(t, p) != v) fail("test bug: %g is not exact in %s", v, nameOf(t));
}

std::mt19937_64 rng(20240601);

// A random value exact in t, of magnitude about 0.03 to 1 (16-bit types: random bit patterns).
double randomValue(DType t) {
    std::uniform_real_distribution<double> u(-1, 1);
    if (t == DType::F64) return u(rng);
    if (t == DType::F32) return double(float(u(rng)));
    uint16_t sign = (rng() & 1) << 15;
    if (t == DType::F16) return halfValue(uint16_t(sign | (10 + rng() % 6) << 10 | (rng() & 1023)));
    return bfloat16Value(uint16_t(sign | (122 + rng() % 6) << 7 | (rng() & 127)));
}

// ---- "device" tensors: host blocks registered with the stand-in driver -----------------------------------

enum class Form { Nchw, Nhwc, Padded };  // Padded: NCHW with gaps after rows and images (SetTensor4dDescriptorEx)

struct Tensor {
    DType type;
    int dim[4];
    int64_t stride[4];
    std::vector<double> value;  // logical (n, c, h, w) order
    std::unique_ptr<uint8_t[]> raw;
    size_t bytes = 0;

    Tensor(DType t, int n, int c, int h, int w, Form form = Form::Nchw) : type(t), dim{n, c, h, w} {
        if (form == Form::Nhwc) {
            stride[1] = 1, stride[3] = c, stride[2] = int64_t(w) * c, stride[0] = int64_t(h) * w * c;
        } else {
            int64_t row = form == Form::Padded ? w + 3 : w;
            stride[3] = 1, stride[2] = row, stride[1] = row * h, stride[0] = row * h * c + (form == Form::Padded ? 5 : 0);
        }
        value.resize(size_t(count()));
        bytes = size_t((n - 1) * stride[0] + (c - 1) * stride[1] + (h - 1) * stride[2] + (w - 1) * stride[3] + 1) * sizeOf(t);
        raw.reset(new uint8_t[bytes + 8]);  // the slack keeps GCC 12's -Warray-bounds quiet about encode()
        jtsim_stub_add_block(raw.get(), bytes);
    }
    ~Tensor() { jtsim_stub_remove_block(raw.get()); }
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;

    int64_t count() const { return int64_t(dim[0]) * dim[1] * dim[2] * dim[3]; }
    int64_t index(int n, int c, int h, int w) const { return ((int64_t(n) * dim[1] + c) * dim[2] + h) * dim[3] + w; }
    uint8_t* at(int64_t i) const {
        int w = int(i % dim[3]), h = int(i / dim[3] % dim[2]), c = int(i / dim[3] / dim[2] % dim[1]), n = int(i / dim[3] / dim[2] / dim[1]);
        return raw.get() + (n * stride[0] + c * stride[1] + h * stride[2] + w * stride[3]) * int64_t(sizeOf(type));
    }
    void randomize() {
        for (int64_t i = 0; i < count(); i++) value[size_t(i)] = randomValue(type);
        upload();
    }
    // Every byte NaN-patterned (gaps included), values NaN.
    void fillNaN() {
        for (size_t b = 0; b < bytes; b += sizeOf(type)) encode(type, NAN, raw.get() + b);
        for (double& v : value) v = NAN;
    }
    void upload() {
        for (int64_t i = 0; i < count(); i++) encode(type, value[size_t(i)], at(i));
    }
    std::vector<double> download() const {
        std::vector<double> r(static_cast<size_t>(count()));
        for (int64_t i = 0; i < count(); i++) r[size_t(i)] = decode(type, at(i));
        return r;
    }
    std::vector<uint8_t> snapshot() const { return std::vector<uint8_t>(raw.get(), raw.get() + bytes); }
    // The bytes outside the tensor's elements are still those of `before`.
    bool gapsKept(const std::vector<uint8_t>& before) const {
        std::vector<bool> element(bytes, false);
        for (int64_t i = 0; i < count(); i++)
            for (size_t b = 0; b < sizeOf(type); b++) element[size_t(at(i) - raw.get()) + b] = true;
        for (size_t b = 0; b < bytes; b++)
            if (!element[b] && raw[b] != before[b]) return false;
        return true;
    }
};

struct Workspace {
    std::unique_ptr<uint8_t[]> raw;
    size_t bytes;
    explicit Workspace(size_t n) : raw(n ? new uint8_t[n] : nullptr), bytes(n) {
        if (n) jtsim_stub_add_block(raw.get(), n);
    }
    ~Workspace() {
        if (bytes) jtsim_stub_remove_block(raw.get());
    }
};

// Host scalars as the API takes them: double for f64 data, float otherwise.
struct Scalar {
    double d;
    float f;
    bool isDouble;
    Scalar(double v, DType t) : d(v), f(float(v)), isDouble(t == DType::F64) {}
    const void* ptr() const { return isDouble ? static_cast<const void*>(&d) : static_cast<const void*>(&f); }
};

// ---- descriptors ------------------------------------------------------------------------------------

void* tensorDesc(const Tensor& t, Form form) {
    void* d = nullptr;
    expectStatus(cudnnCreateTensorDescriptor(&d), OK, "cudnnCreateTensorDescriptor");
    int type = cudnnTypeOf(t.type);
    int status = form == Form::Padded
                     ? cudnnSetTensor4dDescriptorEx(d, type, t.dim[0], t.dim[1], t.dim[2], t.dim[3], int(t.stride[0]), int(t.stride[1]),
                                                    int(t.stride[2]), int(t.stride[3]))
                     : cudnnSetTensor4dDescriptor(d, form == Form::Nhwc ? NHWC : NCHW, type, t.dim[0], t.dim[1], t.dim[2], t.dim[3]);
    expectStatus(status, OK, "cudnnSetTensor4dDescriptor");
    return d;
}

void* filterDesc(const Tensor& t, Form form) {
    void* d = nullptr;
    expectStatus(cudnnCreateFilterDescriptor(&d), OK, "cudnnCreateFilterDescriptor");
    expectStatus(cudnnSetFilter4dDescriptor(d, cudnnTypeOf(t.type), form == Form::Nhwc ? NHWC : NCHW, t.dim[0], t.dim[1], t.dim[2],
                                            t.dim[3]),
                 OK, "cudnnSetFilter4dDescriptor");
    return d;
}

struct Geometry {
    int n, c, h, w, k, r, s;
    int padH, padW, strideH, strideW, dilH, dilW, groups;
    int oh() const { return (h + 2 * padH - dilH * (r - 1) - 1) / strideH + 1; }
    int ow() const { return (w + 2 * padW - dilW * (s - 1) - 1) / strideW + 1; }
    int cg() const { return c / groups; }
    int kg() const { return k / groups; }
};

void* convDesc(const Geometry& g, DType t, int mode = CROSS_CORRELATION) {
    void* d = nullptr;
    expectStatus(cudnnCreateConvolutionDescriptor(&d), OK, "cudnnCreateConvolutionDescriptor");
    int compute = t == DType::F64 ? 1 : 0;
    expectStatus(cudnnSetConvolution2dDescriptor(d, g.padH, g.padW, g.strideH, g.strideW, g.dilH, g.dilW, mode, compute), OK,
                 "cudnnSetConvolution2dDescriptor");
    expectStatus(cudnnSetConvolutionGroupCount(d, g.groups), OK, "cudnnSetConvolutionGroupCount");
    // As jtorch's ConvPlan: strict FMA for f32, DEFAULT for f64, tensor ops for 16-bit types.
    int math = t == DType::F32 ? FMA_MATH : t == DType::F64 ? DEFAULT_MATH : TENSOR_OP_MATH;
    expectStatus(cudnnSetConvolutionMathType(d, math), OK, "cudnnSetConvolutionMathType");
    return d;
}

// ---- the reference: direct convolution in double -------------------------------------------------------

// Each result with the sum of its terms' magnitudes, for the rounding bound.
struct Reference {
    std::vector<double> value, magnitude;
    int terms = 0;  // the most terms one result sums
};

// The filter element (k, c, r, s) a true convolution (mode CONVOLUTION) uses: the kernel reversed.
int64_t filterIndex(const Geometry& g, int k, int c, int r, int s, int mode) {
    if (mode == CONVOLUTION) r = g.r - 1 - r, s = g.s - 1 - s;
    return ((int64_t(k) * g.cg() + c) * g.r + r) * g.s + s;
}

// Visits every (image, output channel, output position, input channel of its group, kernel tap) whose
// input position lies inside the image: f(xIndex, wIndex, yIndex).
template <typename F>
void forEachTerm(const Geometry& g, int mode, F f) {
    for (int n = 0; n < g.n; n++)
        for (int k = 0; k < g.k; k++)
            for (int oy = 0; oy < g.oh(); oy++)
                for (int ox = 0; ox < g.ow(); ox++)
                    for (int c = 0; c < g.cg(); c++)
                        for (int r = 0; r < g.r; r++)
                            for (int s = 0; s < g.s; s++) {
                                int iy = oy * g.strideH - g.padH + r * g.dilH, ix = ox * g.strideW - g.padW + s * g.dilW;
                                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                                int ci = (k / g.kg()) * g.cg() + c;
                                f(((int64_t(n) * g.c + ci) * g.h + iy) * g.w + ix, filterIndex(g, k, c, r, s, mode),
                                  ((int64_t(n) * g.k + k) * g.oh() + oy) * g.ow() + ox);
                            }
}

enum class Dir { Forward, Data, Filter };
const char* nameOf(Dir d) { return d == Dir::Forward ? "forward" : d == Dir::Data ? "backward data" : "backward filter"; }

// y = conv(x, w), dx = sum of dy * w, dw = sum of dy * x over the same terms.
Reference reference(Dir dir, const Geometry& g, int mode, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& y) {
    Reference r;
    size_t size = dir == Dir::Forward ? y.size() : dir == Dir::Data ? x.size() : w.size();
    r.value.assign(size, 0);
    r.magnitude.assign(size, 0);
    std::vector<int> terms(size, 0);
    forEachTerm(g, mode, [&](int64_t xi, int64_t wi, int64_t yi) {
        double t = dir == Dir::Forward ? x[size_t(xi)] * w[size_t(wi)] : dir == Dir::Data ? y[size_t(yi)] * w[size_t(wi)]
                                                                                          : y[size_t(yi)] * x[size_t(xi)];
        size_t o = size_t(dir == Dir::Forward ? yi : dir == Dir::Data ? xi : wi);
        r.value[o] += t;
        r.magnitude[o] += std::fabs(t);
        terms[o]++;
    });
    for (int t : terms) r.terms = std::max(r.terms, t);
    return r;
}

// Unit roundoff of the computation (float for all but f64) and of the stored type.
double computeEps(DType t) { return t == DType::F64 ? 0x1p-53 : 0x1p-24; }
double storeEps(DType t) { return t == DType::F16 ? 0x1p-11 : t == DType::BF16 ? 0x1p-8 : 0; }
double storeTiny(DType t) { return t == DType::F16 ? 0x1p-25 : t == DType::BF16 ? 0x1p-134 : 0; }

// got == alpha * ref + beta * before, within the rounding bound of a sum of `terms` products, the blend
// and the store. NaN anywhere fails (beta == 0 must not read a NaN destination).
void compare(const char* what, DType t, const std::vector<double>& got, const Reference& ref, double alpha, double beta,
             const std::vector<double>& before) {
    int bad = 0;
    for (size_t i = 0; i < got.size(); i++) {
        double prior = beta == 0 ? 0 : beta * before[i];
        double expected = alpha * ref.value[i] + prior;
        double bound = (ref.terms + 4) * computeEps(t) * (std::fabs(alpha) * ref.magnitude[i] + std::fabs(prior)) * 2 +
                       storeEps(t) * std::fabs(expected) + storeTiny(t);
        if (!(std::fabs(got[i] - expected) <= bound)) {
            if (bad++ < 3) fail("%s: element %zu is %.9g, expected %.9g (bound %.3g)", what, i, got[i], expected, bound);
        }
    }
    if (bad > 3) fail("%s: %d elements wrong in all", what, bad);
}

// ---- convolution cases ----------------------------------------------------------------------------------

struct Case {
    const char* name;
    Geometry g;
    DType type;
    double alpha, beta;
    int mode = CROSS_CORRELATION;
    Form form = Form::Nchw;  // of x, y and (Nhwc only) the filter
};

void* handle = nullptr;

// The heuristic's results for one direction, each checked: success, deterministic, the conv's math type,
// memory equal to the workspace query for its algorithm.
std::vector<Perf> algorithms(Dir dir, void* x, void* w, void* conv, void* y, int mathType, const char* what) {
    Perf results[8] = {};
    int requested = dir == Dir::Forward ? 8 : dir == Dir::Data ? 6 : 7, returned = -1;
    int status = dir == Dir::Forward ? cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y, requested, &returned, results)
                 : dir == Dir::Data  ? cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w, y, conv, x, requested, &returned, results)
                                     : cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x, y, conv, w, requested, &returned, results);
    expectStatus(status, OK, what);
    if (returned < 1 || returned > requested) {
        fail("%s: %d algorithms returned", what, returned);
        return {};
    }
    for (int i = 0; i < returned; i++) {
        const Perf& p = results[i];
        size_t bytes = 12345;
        int q = dir == Dir::Forward ? cudnnGetConvolutionForwardWorkspaceSize(handle, x, w, conv, y, p.algo, &bytes)
                : dir == Dir::Data  ? cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w, y, conv, x, p.algo, &bytes)
                                    : cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, x, y, conv, w, p.algo, &bytes);
        expectStatus(q, OK, what);
        if (p.status != OK || p.determinism != 1 || p.mathType != mathType || p.memory != bytes || p.algo < 0 || p.algo >= requested ||
            p.reserved[0] || p.reserved[1] || p.reserved[2]) {
            fail("%s: result %d: algo %d status %d determinism %d math %d memory %zu (workspace query %zu)", what, i, p.algo, p.status,
                 p.determinism, p.mathType, p.memory, bytes);
        }
    }
    return std::vector<Perf>(results, results + returned);
}

int convolve(Dir dir, const Scalar& alpha, void* xd, const Tensor& x, void* wd, const Tensor& w, void* conv, int algo, Workspace& ws,
             const Scalar& beta, void* yd, const Tensor& y) {
    switch (dir) {
        case Dir::Forward:
            return cudnnConvolutionForward(handle, alpha.ptr(), xd, x.raw.get(), wd, w.raw.get(), conv, algo, ws.raw.get(), ws.bytes,
                                           beta.ptr(), yd, y.raw.get());
        case Dir::Data:
            return cudnnConvolutionBackwardData(handle, alpha.ptr(), wd, w.raw.get(), yd, y.raw.get(), conv, algo, ws.raw.get(),
                                                ws.bytes, beta.ptr(), xd, x.raw.get());
        default:
            return cudnnConvolutionBackwardFilter(handle, alpha.ptr(), xd, x.raw.get(), yd, y.raw.get(), conv, algo, ws.raw.get(),
                                                  ws.bytes, beta.ptr(), wd, w.raw.get());
    }
}

// All three directions with every algorithm the heuristic offers, and the bias calls.
void runCase(const Case& c) {
    const Geometry& g = c.g;
    Form filterForm = c.form == Form::Nhwc ? Form::Nhwc : Form::Nchw;
    Tensor x(c.type, g.n, g.c, g.h, g.w, c.form), w(c.type, g.k, g.cg(), g.r, g.s, filterForm), y(c.type, g.n, g.k, g.oh(), g.ow(), c.form);
    void* xd = tensorDesc(x, c.form);
    void* wd = filterDesc(w, filterForm);
    void* yd = tensorDesc(y, c.form);
    void* conv = convDesc(g, c.type, c.mode);
    int mathType = c.type == DType::F32 ? FMA_MATH : c.type == DType::F64 ? DEFAULT_MATH : TENSOR_OP_MATH;

    int dims[4] = {};
    expectStatus(cudnnGetConvolution2dForwardOutputDim(conv, xd, wd, &dims[0], &dims[1], &dims[2], &dims[3]), OK, c.name);
    if (dims[0] != g.n || dims[1] != g.k || dims[2] != g.oh() || dims[3] != g.ow())
        fail("%s: output dims %d %d %d %d, expected %d %d %d %d", c.name, dims[0], dims[1], dims[2], dims[3], g.n, g.k, g.oh(), g.ow());

    Scalar alpha(c.alpha, c.type), beta(c.beta, c.type);
    for (Dir dir : {Dir::Forward, Dir::Data, Dir::Filter}) {
        char what[200];
        std::snprintf(what, sizeof what, "%s %s %s alpha %g beta %g", c.name, nameOf(c.type), nameOf(dir), c.alpha, c.beta);
        Tensor& out = dir == Dir::Forward ? y : dir == Dir::Data ? x : w;
        x.randomize(), w.randomize(), y.randomize();
        Reference ref = reference(dir, g, c.mode, x.value, w.value, y.value);  // of the inputs, which the calls keep
        for (const Perf& p : algorithms(dir, xd, wd, conv, yd, mathType, what)) {
            if (c.beta == 0) out.fillNaN();
            else out.randomize();
            std::vector<double> before = out.value;
            std::vector<uint8_t> bytes = out.snapshot();
            Workspace ws(p.memory);
            if (p.memory) std::memset(ws.raw.get(), 0xab, p.memory);
            expectStatus(convolve(dir, alpha, xd, x, wd, w, conv, p.algo, ws, beta, yd, y), OK, what);
            bool wsUsed = false;
            for (size_t b = 0; b < p.memory && !wsUsed; b++) wsUsed = ws.raw[b] != 0xab;
            if (p.memory && !wsUsed) fail("%s algo %d: the %zu bytes of workspace it asked for were not used", what, p.algo, p.memory);
            char algoWhat[240];
            std::snprintf(algoWhat, sizeof algoWhat, "%s algo %d", what, p.algo);
            compare(algoWhat, c.type, out.download(), ref, c.alpha, c.beta, before);
            if (!out.gapsKept(bytes)) fail("%s: bytes between the elements were written", algoWhat);
        }
    }

    // Bias gradient db = alpha * sum(dy) + beta * db, then y = alpha * db (broadcast) + beta * y.
    Tensor db(c.type, 1, g.k, 1, 1);
    void* dbd = tensorDesc(db, Form::Nchw);
    y.randomize();
    if (c.beta == 0) db.fillNaN();
    else db.randomize();
    std::vector<double> before = db.value;
    expectStatus(cudnnConvolutionBackwardBias(handle, alpha.ptr(), yd, y.raw.get(), beta.ptr(), dbd, db.raw.get()), OK, "backward bias");
    Reference sums;
    sums.value.assign(size_t(g.k), 0), sums.magnitude.assign(size_t(g.k), 0);
    sums.terms = g.n * g.oh() * g.ow();
    for (int64_t i = 0; i < y.count(); i++) {
        size_t k = size_t(i / (int64_t(g.oh()) * g.ow()) % g.k);
        sums.value[k] += y.value[size_t(i)], sums.magnitude[k] += std::fabs(y.value[size_t(i)]);
    }
    std::string what = std::string(c.name) + " " + nameOf(c.type) + " backward bias";
    compare(what.c_str(), c.type, db.download(), sums, c.alpha, c.beta, before);

    db.randomize();
    if (c.beta == 0) y.fillNaN();
    else y.randomize();
    before = y.value;
    std::vector<uint8_t> bytes = y.snapshot();
    expectStatus(cudnnAddTensor(handle, alpha.ptr(), dbd, db.raw.get(), beta.ptr(), yd, y.raw.get()), OK, "add tensor");
    Reference bias;
    bias.terms = 1;
    for (int64_t i = 0; i < y.count(); i++) {
        double v = db.value[size_t(i / (int64_t(g.oh()) * g.ow()) % g.k)];
        bias.value.push_back(v), bias.magnitude.push_back(std::fabs(v));
    }
    what = std::string(c.name) + " " + nameOf(c.type) + " add tensor";
    compare(what.c_str(), c.type, y.download(), bias, c.alpha, c.beta, before);
    if (!y.gapsKept(bytes)) fail("%s: bytes between the elements were written", what.c_str());

    cudnnDestroyTensorDescriptor(dbd);
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyTensorDescriptor(xd);
    if (std::strlen(jtsim_last_failure()) != 0) fail("%s: the context failed: %s", c.name, jtsim_last_failure());
}

//                                  n  c  h   w   k  r  s  pH pW sH sW dH dW groups
const Geometry BASIC =            { 2, 3, 7,  6,  4, 3, 3, 1, 1, 1, 1, 1, 1, 1};
const Geometry STRIDE_2 =         { 3, 4, 9,  8,  5, 3, 3, 1, 1, 2, 2, 1, 1, 1};
const Geometry DILATION_2 =       { 2, 2, 10, 9,  3, 3, 3, 2, 2, 1, 1, 2, 2, 1};
const Geometry GROUPS_2 =         { 2, 4, 6,  7,  6, 3, 3, 1, 0, 1, 1, 1, 1, 2};
const Geometry DEPTHWISE =        { 2, 5, 8,  8,  5, 3, 3, 1, 1, 2, 2, 1, 1, 5};
const Geometry POINTWISE =        { 3, 8, 5,  4,  3, 1, 1, 0, 0, 1, 1, 1, 1, 1};
const Geometry POINTWISE_STRIDE = { 2, 6, 7,  7,  4, 1, 1, 0, 0, 2, 2, 1, 1, 1};
const Geometry NON_SQUARE =       { 2, 3, 9,  11, 4, 2, 5, 1, 2, 1, 2, 2, 1, 1};
const Geometry NO_PADDING_WIDE =  { 1, 2, 5,  12, 2, 5, 3, 0, 0, 3, 1, 1, 3, 1};
const Geometry TWO_WORKERS =      { 8, 32, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1};  // large enough to be split over two threads
const Geometry GROUPED_WORKERS =  { 6, 32, 14, 14, 48, 3, 3, 1, 1, 1, 1, 1, 1, 4};

void convolutionCases() {
    const Case cases[] = {
        {"basic", BASIC, DType::F32, 1, 0},
        {"basic", BASIC, DType::F32, 0.5, 0.25},
        {"basic", BASIC, DType::F64, 1, 0},
        {"basic", BASIC, DType::F64, -1.5, 1},
        {"basic", BASIC, DType::F16, 1, 0},
        {"basic", BASIC, DType::BF16, 1, 0},
        {"stride 2", STRIDE_2, DType::F32, 1, 0},
        {"stride 2", STRIDE_2, DType::F64, 2, 0.5},
        {"stride 2", STRIDE_2, DType::F16, 0.5, 1},
        {"dilation 2", DILATION_2, DType::F32, 1, 0},
        {"dilation 2", DILATION_2, DType::BF16, 1, 1},
        {"groups 2", GROUPS_2, DType::F32, 1, 0},
        {"groups 2", GROUPS_2, DType::F64, 1, 1},
        {"depthwise", DEPTHWISE, DType::F32, 1, 0},
        {"depthwise", DEPTHWISE, DType::F16, 1, 0},
        {"pointwise", POINTWISE, DType::F32, 1, 0},
        {"pointwise", POINTWISE, DType::F32, 3, -2},
        {"pointwise", POINTWISE, DType::BF16, 1, 0},
        {"1x1 stride 2", POINTWISE_STRIDE, DType::F32, 1, 0},
        {"non-square kernel", NON_SQUARE, DType::F32, 1, 0},
        {"non-square kernel", NON_SQUARE, DType::F64, 0.75, 0},
        {"no padding, wide", NO_PADDING_WIDE, DType::F32, 1, 0},
        {"two workers", TWO_WORKERS, DType::F32, 1, 0},
        {"two workers", TWO_WORKERS, DType::F64, 1, 0.5},
        {"grouped, two workers", GROUPED_WORKERS, DType::F32, 1, 0},
        {"true convolution", NON_SQUARE, DType::F32, 1, 0, CONVOLUTION},
        {"true convolution", GROUPS_2, DType::F64, 1, 0.5, CONVOLUTION},
        {"NHWC", STRIDE_2, DType::F32, 1, 0, CROSS_CORRELATION, Form::Nhwc},
        {"NHWC", GROUPS_2, DType::F16, 1, 0.5, CROSS_CORRELATION, Form::Nhwc},
        {"padded strides", DILATION_2, DType::F32, 1, 0, CROSS_CORRELATION, Form::Padded},
        {"padded strides", BASIC, DType::F64, 0.5, 2, CROSS_CORRELATION, Form::Padded},
    };
    for (const Case& c : cases) runCase(c);
}

// jtorch's pattern: weight gradients of image chunks summed with beta = 1.
void chunkedWeightGradient(DType t) {
    const Geometry g = STRIDE_2;
    Tensor x(t, g.n, g.c, g.h, g.w), w(t, g.k, g.cg(), g.r, g.s), y(t, g.n, g.k, g.oh(), g.ow());
    x.randomize(), y.randomize(), w.fillNaN();
    void* wd = filterDesc(w, Form::Nchw);
    void* conv = convDesc(g, t);
    Scalar one(1, t), zero(0, t);
    int first = 1;  // images [0, 1), then [1, n)
    for (int chunk = 0; chunk < 2; chunk++) {
        int start = chunk == 0 ? 0 : first, images = chunk == 0 ? first : g.n - first;
        void* xd = nullptr;
        void* yd = nullptr;
        cudnnCreateTensorDescriptor(&xd), cudnnCreateTensorDescriptor(&yd);
        cudnnSetTensor4dDescriptor(xd, NCHW, cudnnTypeOf(t), images, g.c, g.h, g.w);
        cudnnSetTensor4dDescriptor(yd, NCHW, cudnnTypeOf(t), images, g.k, g.oh(), g.ow());
        size_t bytes = 0;
        expectStatus(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, xd, yd, conv, wd, 1, &bytes), OK, "chunk workspace");
        Workspace ws(bytes);
        const uint8_t* xp = x.raw.get() + int64_t(start) * g.c * g.h * g.w * int64_t(sizeOf(t));
        const uint8_t* yp = y.raw.get() + int64_t(start) * g.k * g.oh() * g.ow() * int64_t(sizeOf(t));
        expectStatus(cudnnConvolutionBackwardFilter(handle, one.ptr(), xd, xp, yd, yp, conv, 1, ws.raw.get(), bytes,
                                                    chunk == 0 ? zero.ptr() : one.ptr(), wd, w.raw.get()),
                     OK, "chunked backward filter");
        cudnnDestroyTensorDescriptor(xd), cudnnDestroyTensorDescriptor(yd);
    }
    std::string what = std::string("chunked weight gradient, beta = 1 for the second chunk, ") + nameOf(t);
    compare(what.c_str(), t, w.download(), reference(Dir::Filter, g, CROSS_CORRELATION, x.value, w.value, y.value), 1, 0, w.value);
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(wd);
}

// ---- 16-bit rounding: one element through a 1x1 convolution with w = 1, scaled by alpha ---------------

struct Rounding {
    uint16_t x;
    float alpha;
    uint16_t expected;
    const char* why;
};

void roundingCase(DType t, const Rounding& r) {
    Geometry g{1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1};
    Tensor x(t, 1, 1, 1, 1), w(t, 1, 1, 1, 1), y(t, 1, 1, 1, 1);
    std::memcpy(x.raw.get(), &r.x, 2);
    encode(t, 1.0, w.raw.get());
    y.fillNaN();
    void* xd = tensorDesc(x, Form::Nchw);
    void* wd = filterDesc(w, Form::Nchw);
    void* yd = tensorDesc(y, Form::Nchw);
    void* conv = convDesc(g, t);
    float zero = 0;
    expectStatus(cudnnConvolutionForward(handle, &r.alpha, xd, x.raw.get(), wd, w.raw.get(), conv, 0, nullptr, 0, &zero, yd, y.raw.get()),
                 OK, r.why);
    uint16_t got;
    std::memcpy(&got, y.raw.get(), 2);
    bool nan = t == DType::F16 ? (got & 0x7c00) == 0x7c00 && (got & 0x3ff) : (got & 0x7f80) == 0x7f80 && (got & 0x7f);
    bool expectNaN = r.expected == 0xffff;
    if (expectNaN ? !nan : got != r.expected) fail("%s rounding, %s: got 0x%04x, expected 0x%04x", nameOf(t), r.why, got, r.expected);
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyTensorDescriptor(xd);
}

void roundingCases() {
    const uint16_t NAN_EXPECTED = 0xffff;
    const Rounding half[] = {
        {0x3c00, 1 + 0x1p-11f, 0x3c00, "a tie rounds to the even 1.0"},
        {0x3c00, 1 + 3 * 0x1p-11f, 0x3c02, "a tie rounds up to the even neighbour"},
        {0x3c00, 1 + 0x1p-11f + 0x1p-20f, 0x3c01, "just above a tie rounds up"},
        {0x3c00, 65519.0f, 0x7bff, "below 65520 stays the largest finite"},
        {0x3c00, 65520.0f, 0x7c00, "65520 overflows to infinity"},
        {0xbc00, 65520.0f, 0xfc00, "and to minus infinity"},
        {0x3c00, 0x1p-25f, 0x0000, "half the smallest subnormal ties to zero"},
        {0x3c00, 3 * 0x1p-25f, 0x0002, "a subnormal tie rounds to even"},
        {0x3c00, 0x1p-25f + 0x1p-30f, 0x0001, "just above half the smallest subnormal"},
        {0x3c00, 0x1p-14f - 0x1p-25f, 0x0400, "a tie below the smallest normal rounds up to it"},
        {0x0001, 1.0f, 0x0001, "the smallest subnormal survives widening"},
        {0x7e00, 1.0f, NAN_EXPECTED, "NaN stays NaN"},
    };
    for (const Rounding& r : half) roundingCase(DType::F16, r);
    const Rounding bfloat16[] = {
        {0x3f80, 1 + 0x1p-8f, 0x3f80, "a tie rounds to the even 1.0"},
        {0x3f80, 1 + 3 * 0x1p-8f, 0x3f82, "a tie rounds up to the even neighbour"},
        {0x3f80, 1 + 0x1p-8f + 0x1p-20f, 0x3f81, "just above a tie rounds up"},
        {0x3f80, 3.4028235e38f, 0x7f80, "the largest float rounds to infinity"},
        {0x0001, 1.0f, 0x0001, "a subnormal survives"},
        {0x7fc0, 1.0f, NAN_EXPECTED, "NaN stays NaN"},
    };
    for (const Rounding& r : bfloat16) roundingCase(DType::BF16, r);
}

// ---- statuses --------------------------------------------------------------------------------------------

void statusCases() {
    if (cudnnGetVersion() != 91900) fail("cudnnGetVersion: %zu", cudnnGetVersion());
    const std::pair<int, const char*> names[] = {{0, "CUDNN_STATUS_SUCCESS"}, {2000, "CUDNN_STATUS_BAD_PARAM"},
                                                 {3000, "CUDNN_STATUS_NOT_SUPPORTED"}, {5000, "CUDNN_STATUS_EXECUTION_FAILED"},
                                                 {1001, "CUDNN_STATUS_NOT_INITIALIZED"}, {4000, "CUDNN_STATUS_INTERNAL_ERROR"}};
    for (const auto& [status, name] : names)
        if (std::strcmp(cudnnGetErrorString(status), name) != 0) fail("cudnnGetErrorString(%d): %s", status, cudnnGetErrorString(status));

    void* t = nullptr;
    void* f = nullptr;
    void* conv = nullptr;
    cudnnCreateTensorDescriptor(&t), cudnnCreateFilterDescriptor(&f), cudnnCreateConvolutionDescriptor(&conv);
    expectStatus(cudnnSetTensor4dDescriptor(t, NCHW, 0, 1, 0, 3, 3), BAD_PARAM, "a tensor with no channels");
    expectStatus(cudnnSetTensor4dDescriptor(t, NCHW, 99, 1, 1, 3, 3), BAD_PARAM, "an unknown data type");
    expectStatus(cudnnSetTensor4dDescriptor(t, 7, 0, 1, 1, 3, 3), BAD_PARAM, "an unknown format");
    expectStatus(cudnnSetTensor4dDescriptor(t, 2, 0, 1, 1, 3, 3), NOT_SUPPORTED, "NCHW_VECT_C for float");
    expectStatus(cudnnSetTensor4dDescriptor(t, NCHW, 0, 65536, 65536, 1, 1), NOT_SUPPORTED, "2^32 elements");
    expectStatus(cudnnSetTensor4dDescriptorEx(t, 0, 1, 2, 3, 3, 18, 9, 3, 0), BAD_PARAM, "a zero stride");
    expectStatus(cudnnSetFilter4dDescriptor(f, 0, NCHW, 4, -1, 3, 3), BAD_PARAM, "a negative filter dim");
    expectStatus(cudnnSetConvolution2dDescriptor(conv, 0, 0, 0, 1, 1, 1, CROSS_CORRELATION, 0), BAD_PARAM, "stride 0");
    expectStatus(cudnnSetConvolution2dDescriptor(conv, -1, 0, 1, 1, 1, 1, CROSS_CORRELATION, 0), BAD_PARAM, "negative padding");
    expectStatus(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1, 5, 0), BAD_PARAM, "an unknown mode");
    expectStatus(cudnnSetConvolutionGroupCount(conv, 0), BAD_PARAM, "group count 0");
    expectStatus(cudnnSetConvolutionMathType(conv, 4), BAD_PARAM, "an unknown math type");
    int n, c, h, w;
    expectStatus(cudnnGetConvolution2dForwardOutputDim(conv, t, f, &n, &c, &h, &w), BAD_PARAM, "output dims of unset descriptors");
    int dummy = 0;
    expectStatus(cudnnSetConvolutionGroupCount(&dummy, 1), BAD_PARAM, "a pointer that is no descriptor");
    expectStatus(cudnnSetTensor4dDescriptor(f, NCHW, 0, 1, 1, 1, 1), BAD_PARAM, "a filter descriptor passed as a tensor's");
    cudnnDestroyConvolutionDescriptor(conv), cudnnDestroyFilterDescriptor(f), cudnnDestroyTensorDescriptor(t);
    expectStatus(cudnnSetTensor4dDescriptor(t, NCHW, 0, 1, 1, 1, 1), BAD_PARAM, "a destroyed descriptor");

    // The output-dim query: 1 + (in + 2 pad - dilation (k - 1) - 1) / stride.
    Geometry g{2, 6, 10, 9, 4, 3, 4, 1, 2, 3, 2, 2, 1, 2};
    Tensor x(DType::F32, g.n, g.c, g.h, g.w), wt(DType::F32, g.k, g.cg(), g.r, g.s);
    void* xd = tensorDesc(x, Form::Nchw);
    void* wd = filterDesc(wt, Form::Nchw);
    conv = convDesc(g, DType::F32);
    expectStatus(cudnnGetConvolution2dForwardOutputDim(conv, xd, wd, &n, &c, &h, &w), OK, "output dims");
    if (n != 2 || c != 4 || h != 3 || w != 5) fail("output dims %d %d %d %d, expected 2 4 3 5", n, c, h, w);
    expectStatus(cudnnGetConvolution2dForwardOutputDim(conv, xd, wd, &n, &c, &h, nullptr), BAD_PARAM, "a null output");
    cudnnSetConvolutionGroupCount(conv, 4);  // 6 channels in 4 groups
    expectStatus(cudnnGetConvolution2dForwardOutputDim(conv, xd, wd, &n, &c, &h, &w), BAD_PARAM, "channels not divisible by groups");
    cudnnSetConvolutionGroupCount(conv, 3);  // 6 / 3 = 2 channels a group, but the filter has 3
    expectStatus(cudnnGetConvolution2dForwardOutputDim(conv, xd, wd, &n, &c, &h, &w), BAD_PARAM, "filter channels != channels / groups");
    cudnnSetConvolutionGroupCount(conv, 2);
    cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 6, 1, CROSS_CORRELATION, 0);  // dilated kernel 13 > 10 rows
    expectStatus(cudnnGetConvolution2dForwardOutputDim(conv, xd, wd, &n, &c, &h, &w), BAD_PARAM, "a kernel larger than the input");
    cudnnSetConvolution2dDescriptor(conv, g.padH, g.padW, g.strideH, g.strideW, g.dilH, g.dilW, CROSS_CORRELATION, 0);

    // Calls with descriptors that disagree.
    Tensor y(DType::F32, g.n, g.k, g.oh(), g.ow());
    void* yd = tensorDesc(y, Form::Nchw);
    float one = 1, zero = 0;
    auto forward = [&](void* xdesc, void* ydesc, const void* alpha, int algo) {
        return cudnnConvolutionForward(handle, alpha, xdesc, x.raw.get(), wd, wt.raw.get(), conv, algo, nullptr, 0, &zero, ydesc, y.raw.get());
    };
    expectStatus(forward(xd, yd, &one, 0), OK, "a consistent forward call");
    expectStatus(forward(xd, yd, nullptr, 0), BAD_PARAM, "alpha null");
    expectStatus(forward(xd, yd, &one, 8), BAD_PARAM, "algorithm 8");
    void* bad = nullptr;
    cudnnCreateTensorDescriptor(&bad);
    cudnnSetTensor4dDescriptor(bad, NCHW, 0, g.n, g.k + 1, g.oh(), g.ow());
    expectStatus(forward(xd, bad, &one, 0), BAD_PARAM, "y with a channel too many");
    cudnnSetTensor4dDescriptor(bad, NCHW, 0, g.n, g.k, g.oh() + 1, g.ow());
    expectStatus(forward(xd, bad, &one, 0), NOT_SUPPORTED, "y of another spatial size (forward)");
    expectStatus(cudnnConvolutionBackwardData(handle, &one, wd, wt.raw.get(), bad, y.raw.get(), conv, 0, nullptr, 0, &zero, xd, x.raw.get()),
                 BAD_PARAM, "dy of another spatial size (backward data)");
    cudnnSetTensor4dDescriptor(bad, NCHW, 1, g.n, g.k, g.oh(), g.ow());
    expectStatus(forward(xd, bad, &one, 0), BAD_PARAM, "float x and w with a double y");
    cudnnSetTensor4dDescriptor(bad, NCHW, 3, g.n, g.c, g.h, g.w);
    void* int8Filter = nullptr;
    cudnnCreateFilterDescriptor(&int8Filter);
    cudnnSetFilter4dDescriptor(int8Filter, 3, NCHW, g.k, g.cg(), g.r, g.s);
    void* int8Y = nullptr;
    cudnnCreateTensorDescriptor(&int8Y);
    cudnnSetTensor4dDescriptor(int8Y, NCHW, 3, g.n, g.k, g.oh(), g.ow());
    expectStatus(cudnnConvolutionForward(handle, &one, bad, x.raw.get(), int8Filter, wt.raw.get(), conv, 0, nullptr, 0, &zero, int8Y,
                                         y.raw.get()),
                 NOT_SUPPORTED, "int8 data");
    cudnnSetConvolution2dDescriptor(conv, g.padH, g.padW, g.strideH, g.strideW, g.dilH, g.dilW, CROSS_CORRELATION, 1);
    expectStatus(forward(xd, yd, &one, 0), NOT_SUPPORTED, "float data with a double compute type");
    cudnnSetConvolution2dDescriptor(conv, g.padH, g.padW, g.strideH, g.strideW, g.dilH, g.dilW, CROSS_CORRELATION, 0);
    Perf results[8];
    int returned = 0;
    expectStatus(cudnnGetConvolutionForwardAlgorithm_v7(handle, xd, wd, conv, yd, 0, &returned, results), BAD_PARAM, "0 results requested");
    expectStatus(cudnnGetConvolutionForwardAlgorithm_v7(handle, xd, wd, conv, yd, 1, &returned, results), OK, "1 result requested");
    if (returned != 1) fail("1 result requested, %d returned", returned);

    // The workspace the workspace algorithm needs.
    size_t bytes = 0;
    cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, conv, yd, results[0].algo, &bytes);
    if (bytes == 0) fail("forward algorithm %d needs no workspace for a 3x4 kernel", results[0].algo);
    Workspace ws(bytes);
    expectStatus(cudnnConvolutionForward(handle, &one, xd, x.raw.get(), wd, wt.raw.get(), conv, results[0].algo, ws.raw.get(), bytes - 1,
                                         &zero, yd, y.raw.get()),
                 BAD_PARAM, "a workspace a byte short");
    expectStatus(cudnnConvolutionForward(handle, &one, xd, x.raw.get(), wd, wt.raw.get(), conv, results[0].algo, nullptr, bytes, &zero, yd,
                                         y.raw.get()),
                 BAD_PARAM, "a null workspace");

    // Bias descriptors that disagree.
    void* db = nullptr;
    cudnnCreateTensorDescriptor(&db);
    cudnnSetTensor4dDescriptor(db, NCHW, 0, 1, g.k, 2, 1);
    expectStatus(cudnnConvolutionBackwardBias(handle, &one, yd, y.raw.get(), &zero, db, wt.raw.get()), BAD_PARAM, "db of 1 x K x 2 x 1");
    cudnnSetTensor4dDescriptor(db, NCHW, 0, 1, g.k + 1, 1, 1);
    expectStatus(cudnnAddTensor(handle, &one, db, wt.raw.get(), &one, yd, y.raw.get()), BAD_PARAM, "a bias of K + 1 channels");
    expectStatus(cudnnAddTensor(nullptr, &one, db, wt.raw.get(), &one, yd, y.raw.get()), BAD_PARAM, "a null handle");

    for (void* d : {db, bad, int8Y, yd, xd}) cudnnDestroyTensorDescriptor(d);
    cudnnDestroyFilterDescriptor(int8Filter), cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(conv);
    if (std::strlen(jtsim_last_failure()) != 0) fail("status cases: the context failed: %s", jtsim_last_failure());
}

// ---- ranges: a bad operand fails the context when the work runs --------------------------------------

void rangeCases() {
    Geometry g = BASIC;
    Tensor x(DType::F32, g.n, g.c, g.h, g.w), w(DType::F32, g.k, g.cg(), g.r, g.s);
    void* xd = tensorDesc(x, Form::Nchw);
    void* wd = filterDesc(w, Form::Nchw);
    void* conv = convDesc(g, DType::F32);
    void* yd = nullptr;
    cudnnCreateTensorDescriptor(&yd);
    cudnnSetTensor4dDescriptor(yd, NCHW, 0, g.n, g.k, g.oh(), g.ow());
    size_t yBytes = size_t(g.n) * g.k * g.oh() * g.ow() * 4;
    std::vector<float> y(yBytes / 4, 7.0f);
    jtsim_stub_add_block(y.data(), yBytes - 4);  // the allocation ends an element short
    float one = 1, zero = 0;
    x.randomize(), w.randomize();
    expectStatus(cudnnConvolutionForward(handle, &one, xd, x.raw.get(), wd, w.raw.get(), conv, 0, nullptr, 0, &zero, yd, y.data()), OK,
                 "enqueueing a forward call with y out of range");
    char expected[200];
    std::snprintf(expected, sizeof expected, "cudnnConvolutionForward: operand y [0x%llx, +%zu bytes) is outside any allocation",
                  static_cast<unsigned long long>(uintptr_t(y.data())), yBytes);
    if (std::strcmp(jtsim_last_failure(), expected) != 0) fail("out-of-range y: failure \"%s\", expected \"%s\"", jtsim_last_failure(), expected);
    for (float v : y)
        if (v != 7.0f) {
            fail("out-of-range y: the computation ran anyway");
            break;
        }
    expectStatus(cudnnConvolutionForward(handle, &one, xd, x.raw.get(), wd, w.raw.get(), conv, 0, nullptr, 0, &zero, yd, y.data()),
                 EXECUTION_FAILED, "a call after the context failed");
    jtsim_stub_reset();
    jtsim_stub_remove_block(y.data());

    // A workspace whose allocation is smaller than the size passed.
    jtsim_stub_add_block(y.data(), yBytes);
    size_t bytes = 0;
    cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, conv, yd, 2, &bytes);
    std::vector<float> ws(bytes / 4 + 1);
    jtsim_stub_add_block(ws.data(), bytes / 2);
    expectStatus(cudnnConvolutionForward(handle, &one, xd, x.raw.get(), wd, w.raw.get(), conv, 2, ws.data(), bytes, &zero, yd, y.data()),
                 OK, "enqueueing a forward call with a short workspace");
    if (std::strstr(jtsim_last_failure(), "cudnnConvolutionForward: operand workspace [0x") == nullptr)
        fail("short workspace: failure \"%s\"", jtsim_last_failure());
    jtsim_stub_reset();
    jtsim_stub_remove_block(ws.data());

    // Backward data and filter name their operands too; a backward-bias db outside any allocation.
    float stray[4];
    expectStatus(cudnnConvolutionBackwardFilter(handle, &one, xd, x.raw.get(), yd, y.data(), conv, 0, nullptr, 0, &zero, wd, stray), OK,
                 "enqueueing backward filter with dw out of range");
    if (std::strstr(jtsim_last_failure(), "cudnnConvolutionBackwardFilter: operand dw [0x") == nullptr)
        fail("out-of-range dw: failure \"%s\"", jtsim_last_failure());
    jtsim_stub_reset();
    void* dbd = nullptr;
    cudnnCreateTensorDescriptor(&dbd);
    cudnnSetTensor4dDescriptor(dbd, NCHW, 0, 1, g.k, 1, 1);
    expectStatus(cudnnConvolutionBackwardBias(handle, &one, yd, y.data(), &zero, dbd, stray), OK, "enqueueing backward bias");
    if (std::strstr(jtsim_last_failure(), "cudnnConvolutionBackwardBias: operand db [0x") == nullptr)
        fail("out-of-range db: failure \"%s\"", jtsim_last_failure());
    jtsim_stub_reset();

    // A stream the driver does not know: the enqueue fails, the call says so.
    cudnnSetStream(handle, BAD_STREAM);
    expectStatus(cudnnConvolutionForward(handle, &one, xd, x.raw.get(), wd, w.raw.get(), conv, 0, nullptr, 0, &zero, yd, y.data()),
                 EXECUTION_FAILED, "a call on a bad stream");
    cudnnSetStream(handle, 0);
    jtsim_stub_remove_block(y.data());
    cudnnDestroyTensorDescriptor(dbd), cudnnDestroyTensorDescriptor(yd), cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyFilterDescriptor(wd), cudnnDestroyConvolutionDescriptor(conv);
}

// ---- speed: ResNet-20's middle layer shape, as jtorch calls it -----------------------------------------

void timing() {
    const Geometry g{32, 32, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    DType t = DType::F32;
    Tensor x(t, g.n, g.c, g.h, g.w), w(t, g.k, g.cg(), g.r, g.s), y(t, g.n, g.k, g.oh(), g.ow());
    x.randomize(), w.randomize(), y.randomize();
    void* xd = tensorDesc(x, Form::Nchw);
    void* wd = filterDesc(w, Form::Nchw);
    void* yd = tensorDesc(y, Form::Nchw);
    void* conv = convDesc(g, t);
    Scalar one(1, t), zero(0, t);
    int algos[3];
    size_t most = 0;
    for (Dir d : {Dir::Forward, Dir::Data, Dir::Filter}) {
        std::vector<Perf> r = algorithms(d, xd, wd, conv, yd, FMA_MATH, "timing");
        if (r.empty()) return;
        algos[int(d)] = r[0].algo;
        most = std::max(most, r[0].memory);
    }
    Workspace ws(most);
    const int reps = 5;
    double best = 1e9;
    for (int rep = 0; rep < reps; rep++) {
        auto start = std::chrono::steady_clock::now();
        for (Dir d : {Dir::Forward, Dir::Data, Dir::Filter})
            expectStatus(convolve(d, one, xd, x, wd, w, conv, algos[int(d)], ws, zero, yd, y), OK, "timing");
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    double flops = 3 * 2.0 * g.n * g.k * g.c * g.r * g.s * g.oh() * g.ow();
    std::printf("f32 [32,32,16,16] * [32,32,3,3] pad 1, forward + backward data + backward filter: %.1f ms (best of %d, %.1f GFLOP/s)\n",
                best * 1e3, reps, flops / best / 1e9);
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyTensorDescriptor(yd), cudnnDestroyFilterDescriptor(wd), cudnnDestroyTensorDescriptor(xd);
}

}  // namespace

int main() {
    expectStatus(cudnnCreate(&handle), OK, "cudnnCreate");
    expectStatus(cudnnSetStream(handle, 0), OK, "cudnnSetStream");
    statusCases();
    rangeCases();
    roundingCases();
    convolutionCases();
    chunkedWeightGradient(DType::F32);
    chunkedWeightGradient(DType::F64);
    timing();
    expectStatus(cudnnDestroy(handle), OK, "cudnnDestroy");
    expectStatus(cudnnSetStream(handle, 0), BAD_PARAM, "a destroyed handle");
    if (failures) {
        std::printf("cudnn_test: %d failures\n", failures);
        return 1;
    }
    std::printf("cudnn_test: all passed\n");
    return 0;
}
