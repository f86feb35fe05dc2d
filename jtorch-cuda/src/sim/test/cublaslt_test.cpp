// Tests of the simulated cuBLASLt through its public C API only (prototypes declared here as in
// cublasLt.h), against the stub driver (jtsim_stub.cpp). Products are checked against a triple loop
// in long double; f16/bf16 results bit for bit against a nearest-even rounding found by search over
// every finite value of the type. Exits 1 on any failure.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" {
size_t cublasLtGetVersion(void);
const char* cublasLtGetStatusName(int status);
const char* cublasLtGetStatusString(int status);
int cublasLtCreate(void** handle);
int cublasLtDestroy(void* handle);
int cublasLtMatmulDescCreate(void** desc, int computeType, int scaleType);
int cublasLtMatmulDescDestroy(void* desc);
int cublasLtMatmulDescSetAttribute(void* desc, int attr, const void* buf, size_t size);
int cublasLtMatmulDescGetAttribute(void* desc, int attr, void* buf, size_t size, size_t* written);
int cublasLtMatrixLayoutCreate(void** layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
int cublasLtMatrixLayoutDestroy(void* layout);
int cublasLtMatrixLayoutSetAttribute(void* layout, int attr, const void* buf, size_t size);
int cublasLtMatrixLayoutGetAttribute(void* layout, int attr, void* buf, size_t size, size_t* written);
int cublasLtMatmulPreferenceCreate(void** pref);
int cublasLtMatmulPreferenceDestroy(void* pref);
int cublasLtMatmulPreferenceSetAttribute(void* pref, int attr, const void* buf, size_t size);
int cublasLtMatmulAlgoGetHeuristic(void* handle, void* desc, void* a, void* b, void* c, void* d, void* pref,
        int requested, void* results, int* returned);
int cublasLtMatmul(void* handle, void* desc, const void* alpha, const void* A, void* aDesc, const void* B, void* bDesc,
        const void* beta, const void* C, void* cDesc, void* D, void* dDesc, const void* algo, void* workspace,
        size_t workspaceBytes, uintptr_t stream);

int cublasGetProperty(int type, int* value);  // libcublas.so.13

const char* jtsim_last_failure(void);
void jtsim_stub_register(const void* address, size_t bytes);
void jtsim_stub_unregister(const void* address);
int jtsim_stub_error(void);
void jtsim_stub_reset(void);
void jtsim_stub_set_deferred(int on);
void jtsim_stub_drain(void);
void jtsim_stub_counts(int* enqueued, int* ran, int* cleanedUp);
}

namespace {

// ---- the header's numbers ---------------------------------------------------------------------------
constexpr int SUCCESS = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, EXECUTION_FAILED = 13, NOT_SUPPORTED = 15;
constexpr int R_32F = 0, R_64F = 1, R_16F = 2, R_8I = 3, R_32I = 10, R_16BF = 14;
constexpr int COMPUTE_32F = 68, COMPUTE_64F = 70, COMPUTE_32F_FAST_TF32 = 77;
constexpr int DESC_COMPUTE_TYPE = 0, DESC_POINTER_MODE = 2, DESC_TRANSA = 3, DESC_TRANSB = 4, DESC_EPILOGUE = 7,
              DESC_BIAS_POINTER = 8, DESC_BIAS_BATCH_STRIDE = 10, DESC_EPILOGUE_AUX_POINTER = 11,
              DESC_EPILOGUE_AUX_LD = 12, DESC_EPILOGUE_AUX_BATCH_STRIDE = 13;
// cublasLtEpilogue_t
constexpr uint32_t EPI_DEFAULT = 1, EPI_RELU = 2, EPI_BIAS = 4, EPI_RELU_BIAS = 6, EPI_GELU = 32, EPI_GELU_BIAS = 36,
                   EPI_RELU_AUX_BIAS = 134, EPI_DRELU = 136, EPI_GELU_AUX = 160, EPI_GELU_AUX_BIAS = 164,
                   EPI_DGELU_BGRAD = 208, EPI_BGRADB = 512;
constexpr int LAYOUT_TYPE = 0, LAYOUT_ORDER = 1, LAYOUT_ROWS = 2, LAYOUT_LD = 4, LAYOUT_BATCH_COUNT = 5,
              LAYOUT_STRIDED_BATCH_OFFSET = 6;
constexpr int PREF_MAX_WORKSPACE_BYTES = 1, PREF_MIN_ALIGNMENT_A_BYTES = 5;
constexpr int ILLEGAL_ADDRESS = 700;

struct HeuristicResult {  // cublasLtMatmulHeuristicResult_t
    uint64_t algo[8];
    size_t workspaceSize;
    int state;
    float wavesCount;
    int reserved[4];
};
static_assert(sizeof(HeuristicResult) == 96, "96 bytes as in cublasLt.h");

int failures = 0;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            if (++failures <= 40) {                                                      \
                std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
                std::fprintf(stderr, __VA_ARGS__);                                       \
                std::fputc('\n', stderr);                                                \
            }                                                                            \
        }                                                                                \
    } while (0)

// ---- element types ------------------------------------------------------------------------------------

size_t elementSize(int type) {
    return type == R_64F ? 8 : type == R_32F ? 4 : 2;
}

double halfValue(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

double bf16Value(uint16_t b) {
    int e = (b >> 7) & 255, m = b & 127;
    double v = e == 255 ? (m ? NAN : INFINITY) : e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
    return b & 0x8000 ? -v : v;
}

// Every non-negative finite value of a 16-bit type in increasing order, with one more entry where the
// next binade would start (reached only by rounding up past the largest value: infinity).
struct Table {
    std::vector<double> value;
    std::vector<uint16_t> bits;
};

Table makeTable(int type) {
    Table t;
    for (uint32_t b = 0; b < 0x8000; ++b) {
        double v = type == R_16F ? halfValue(uint16_t(b)) : bf16Value(uint16_t(b));
        if (!std::isfinite(v)) break;
        t.value.push_back(v);
        t.bits.push_back(uint16_t(b));
    }
    t.value.push_back(type == R_16F ? 65536.0 : std::ldexp(1.0, 128));
    t.bits.push_back(type == R_16F ? 0x7c00 : 0x7f80);
    return t;
}

const Table& table(int type) {
    static const Table half = makeTable(R_16F), bf16 = makeTable(R_16BF);
    return type == R_16F ? half : bf16;
}

// x rounded to the nearest value of the type, ties to the even encoding.
uint16_t nearest(int type, double x) {
    if (std::isnan(x)) return type == R_16F ? 0x7e00 : 0x7fc0;
    const Table& t = table(type);
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    double a = std::fabs(x);
    if (a >= t.value.back()) return sign | t.bits.back();
    size_t i = size_t(std::upper_bound(t.value.begin(), t.value.end(), a) - t.value.begin()) - 1;
    double below = a - t.value[i], above = t.value[i + 1] - a;
    bool up = above < below || (above == below && (t.bits[i] & 1));
    return sign | t.bits[up ? i + 1 : i];
}

double get(int type, const unsigned char* base, int64_t index) {
    const unsigned char* at = base + index * int64_t(elementSize(type));
    if (type == R_64F) {
        double v;
        std::memcpy(&v, at, 8);
        return v;
    }
    if (type == R_32F) {
        float v;
        std::memcpy(&v, at, 4);
        return v;
    }
    uint16_t h;
    std::memcpy(&h, at, 2);
    return type == R_16F ? halfValue(h) : bf16Value(h);
}

// Stores v, which must be a value of the type (or NaN).
void put(int type, unsigned char* base, int64_t index, double v) {
    unsigned char* at = base + index * int64_t(elementSize(type));
    if (type == R_64F) {
        std::memcpy(at, &v, 8);
    } else if (type == R_32F) {
        float f = float(v);
        std::memcpy(at, &f, 4);
    } else {
        uint16_t h = nearest(type, v);
        std::memcpy(at, &h, 2);
    }
}

// ---- device memory (registered with the stub) ---------------------------------------------------------

struct DeviceBuffer {
    unsigned char* p;
    size_t bytes;
    explicit DeviceBuffer(size_t n) : p(static_cast<unsigned char*>(std::calloc(n ? n : 1, 1))), bytes(n) {
        jtsim_stub_register(p, bytes);
    }
    ~DeviceBuffer() {
        jtsim_stub_unregister(p);
        std::free(p);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// ---- one matmul's description -------------------------------------------------------------------------

struct Mat {
    int type = R_32F;
    uint64_t rows = 1, cols = 1;
    int64_t ld = 1;
    int32_t batch = 1;
    int64_t stride = 0;
    int order = 0;  // CUBLASLT_ORDER_COL, 1 = ROW

    int64_t index(int64_t t, int64_t r, int64_t c) const {
        return t * stride + (order == 0 ? r + c * ld : r * ld + c);
    }
    // Elements from the first to the last that any batch entry touches (strides here are >= 0).
    int64_t span() const {
        return (batch - 1) * stride + index(0, int64_t(rows) - 1, int64_t(cols) - 1) + 1;
    }
};

Mat mat(int type, uint64_t rows, uint64_t cols, int64_t pad = 0) {
    Mat m;
    m.type = type;
    m.rows = rows;
    m.cols = cols;
    m.ld = int64_t(rows) + pad;
    return m;
}

struct Spec {
    int compute = COMPUTE_32F, scale = R_32F;
    int ta = 0, tb = 0;
    Mat a, b, c, d;
    int pointerMode = 0;
    uint32_t epilogue = 1;  // CUBLASLT_EPILOGUE_DEFAULT
    // The epilogue's vector and matrix (set on the descriptor when not null).
    const void* bias = nullptr;
    int64_t biasStride = 0;
    void* aux = nullptr;
    int64_t auxLd = 0, auxStride = 0;
};

// A product m x n x k of one type, with ops and leading-dimension padding.
Spec product(int type, int64_t m, int64_t n, int64_t k, int ta, int tb, int64_t pad) {
    Spec s;
    bool f64 = type == R_64F;
    s.compute = f64 ? COMPUTE_64F : COMPUTE_32F;
    s.scale = f64 ? R_64F : R_32F;
    s.ta = ta;
    s.tb = tb;
    // With padding, each operand gets another ld, so that one used for another shows.
    s.a = ta ? mat(type, k, m, pad) : mat(type, m, k, pad);
    s.b = tb ? mat(type, n, k, pad ? pad + 1 : 0) : mat(type, k, n, pad ? pad + 1 : 0);
    s.c = mat(type, m, n, pad ? pad + 2 : 0);
    s.d = mat(type, m, n, pad);
    return s;
}

struct Descs {
    void *desc = nullptr, *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
};

int setLayout(void* l, const Mat& m) {
    int rc = cublasLtMatrixLayoutSetAttribute(l, LAYOUT_ORDER, &m.order, 4);
    if (rc == SUCCESS) rc = cublasLtMatrixLayoutSetAttribute(l, LAYOUT_BATCH_COUNT, &m.batch, 4);
    if (rc == SUCCESS) rc = cublasLtMatrixLayoutSetAttribute(l, LAYOUT_STRIDED_BATCH_OFFSET, &m.stride, 8);
    return rc;
}

void destroyDescs(Descs& d) {
    for (void* l : {d.a, d.b, d.c, d.d}) {
        if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
    }
    if (d.desc != nullptr) cublasLtMatmulDescDestroy(d.desc);
    d = Descs();
}

Descs makeDescs(const Spec& s) {
    Descs d;
    int rc = cublasLtMatmulDescCreate(&d.desc, s.compute, s.scale);
    CHECK(rc == SUCCESS, "cublasLtMatmulDescCreate: %d", rc);
    cublasLtMatmulDescSetAttribute(d.desc, DESC_TRANSA, &s.ta, 4);
    cublasLtMatmulDescSetAttribute(d.desc, DESC_TRANSB, &s.tb, 4);
    cublasLtMatmulDescSetAttribute(d.desc, DESC_POINTER_MODE, &s.pointerMode, 4);
    cublasLtMatmulDescSetAttribute(d.desc, DESC_EPILOGUE, &s.epilogue, 4);
    if (s.bias != nullptr) {
        cublasLtMatmulDescSetAttribute(d.desc, DESC_BIAS_POINTER, &s.bias, 8);
        cublasLtMatmulDescSetAttribute(d.desc, DESC_BIAS_BATCH_STRIDE, &s.biasStride, 8);
    }
    if (s.aux != nullptr || s.auxLd != 0) {
        cublasLtMatmulDescSetAttribute(d.desc, DESC_EPILOGUE_AUX_POINTER, &s.aux, 8);
        cublasLtMatmulDescSetAttribute(d.desc, DESC_EPILOGUE_AUX_LD, &s.auxLd, 8);
        cublasLtMatmulDescSetAttribute(d.desc, DESC_EPILOGUE_AUX_BATCH_STRIDE, &s.auxStride, 8);
    }
    void** outs[4] = {&d.a, &d.b, &d.c, &d.d};
    const Mat* ms[4] = {&s.a, &s.b, &s.c, &s.d};
    for (int i = 0; i < 4; ++i) {
        rc = cublasLtMatrixLayoutCreate(outs[i], ms[i]->type, ms[i]->rows, ms[i]->cols, ms[i]->ld);
        CHECK(rc == SUCCESS, "cublasLtMatrixLayoutCreate: %d", rc);
        rc = setLayout(*outs[i], *ms[i]);
        CHECK(rc == SUCCESS, "layout attributes: %d", rc);
    }
    return d;
}

void* handle() {
    static void* h = [] {
        void* p = nullptr;
        int rc = cublasLtCreate(&p);
        CHECK(rc == SUCCESS && p != nullptr, "cublasLtCreate: %d", rc);
        return p;
    }();
    return h;
}

int heuristic(const Spec& s, HeuristicResult* r, int* count) {
    Descs d = makeDescs(s);
    void* pref = nullptr;
    cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = 1 << 20;
    cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES, &ws, 8);
    int rc = cublasLtMatmulAlgoGetHeuristic(handle(), d.desc, d.a, d.b, d.c, d.d, pref, 1, r, count);
    cublasLtMatmulPreferenceDestroy(pref);
    destroyDescs(d);
    return rc;
}

// Runs one matmul (with the heuristic's algorithm when useAlgo), descriptors destroyed at once.
int matmul(const Spec& s, const void* alpha, const void* A, const void* B, const void* beta, const void* C, void* D,
        bool useAlgo = true, uintptr_t stream = 0) {
    HeuristicResult r{};
    int count = 0;
    if (useAlgo) {
        int rc = heuristic(s, &r, &count);
        if (rc != SUCCESS) return rc;
        CHECK(count == 1 && r.state == SUCCESS, "heuristic: %d results, state %d", count, r.state);
    }
    Descs d = makeDescs(s);
    int rc = cublasLtMatmul(handle(), d.desc, alpha, A, d.a, B, d.b, beta, C, d.c, D, d.d, useAlgo ? r.algo : nullptr,
            nullptr, 0, stream);
    destroyDescs(d);
    return rc;
}

// ---- the reference and the checks ---------------------------------------------------------------------

enum class Values { Uniform, Grid };  // uniform in [-1, 1], or small dyadic values exact in every type

struct Operands {
    DeviceBuffer a, b, c, d;
    Operands(const Spec& s, bool inPlace)
        : a(size_t(s.a.span()) * elementSize(s.a.type)), b(size_t(s.b.span()) * elementSize(s.b.type)),
          c(inPlace ? 0 : size_t(s.c.span()) * elementSize(s.c.type)), d(size_t(s.d.span()) * elementSize(s.d.type)) {}
};

void fill(const Mat& m, DeviceBuffer& buf, std::mt19937_64& rng, Values values, bool operandC) {
    std::uniform_real_distribution<double> uniform(-1, 1);
    std::uniform_int_distribution<int> grid(operandC ? -64 : -255, operandC ? 64 : 255);
    for (int64_t i = 0; i < m.span(); ++i) {
        double v = values == Values::Uniform ? uniform(rng) : std::ldexp(grid(rng), operandC ? -4 : -8);
        put(m.type, buf.p, i, v);
    }
}

// op(A) (i, p) times op(B) (p, j) summed over p for batch entry t, and the sum of the magnitudes.
long double dot(const Spec& s, const unsigned char* A, const unsigned char* B, int64_t t, int64_t i, int64_t j,
        int64_t k, long double* magnitude) {
    long double sum = 0, mag = 0;
    for (int64_t p = 0; p < k; ++p) {
        long double x = get(s.a.type, A, s.ta ? s.a.index(t, p, i) : s.a.index(t, i, p));
        long double y = get(s.b.type, B, s.tb ? s.b.index(t, j, p) : s.b.index(t, p, j));
        sum += x * y;
        mag += std::fabs(x * y);
    }
    *magnitude = mag;
    return sum;
}

struct Result {
    int64_t checked = 0, ties = 0;
};

// Runs D = alpha op(A) op(B) + beta C and checks every element of D (and that D's padding is
// untouched). exact: the result must be the reference rounded once to D's type (the test's values
// keep every f32 intermediate exact); otherwise within the accumulation's error bound.
Result check(const char* label, const Spec& s, double alpha, double beta, bool inPlace, bool nanC, Values values,
        bool exact, uint64_t seed) {
    Result result;
    std::mt19937_64 rng(seed);
    Operands o(s, inPlace);
    fill(s.a, o.a, rng, values, false);
    fill(s.b, o.b, rng, values, false);
    DeviceBuffer& cBuf = inPlace ? o.d : o.c;
    const Mat& cm = inPlace ? s.d : s.c;
    if (nanC) {
        for (int64_t i = 0; i < cm.span(); ++i) put(cm.type, cBuf.p, i, NAN);
    } else {
        fill(cm, cBuf, rng, values, true);
    }
    if (!inPlace) {  // a sentinel where D is not written
        for (int64_t i = 0; i < s.d.span(); ++i) put(s.d.type, o.d.p, i, -3.5);
    }
    std::vector<unsigned char> cBefore(cBuf.p, cBuf.p + cBuf.bytes), dBefore(o.d.p, o.d.p + o.d.bytes);
    float fa = float(alpha), fb = float(beta);
    bool f64 = s.scale == R_64F;
    int rc = matmul(s, f64 ? static_cast<const void*>(&alpha) : &fa, o.a.p, o.b.p,
            f64 ? static_cast<const void*>(&beta) : &fb, cBuf.p, o.d.p);
    CHECK(rc == SUCCESS, "%s: cublasLtMatmul returned %d", label, rc);
    CHECK(jtsim_stub_error() == 0, "%s: jtsim_fail: %s", label, jtsim_last_failure());
    if (rc != SUCCESS) return result;

    int64_t m = int64_t(s.d.rows), n = int64_t(s.d.cols), k = int64_t(s.ta ? s.a.rows : s.a.cols);
    double eps = s.d.type == R_64F ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
    std::vector<char> written(size_t(s.d.span()), 0);
    int reported = 0;
    for (int64_t t = 0; t < s.d.batch; ++t) {
        for (int64_t j = 0; j < n; ++j) {
            for (int64_t i = 0; i < m; ++i) {
                long double mag;
                long double want = (long double)alpha * dot(s, o.a.p, o.b.p, t, i, j, k, &mag);
                long double cv = 0;
                if (beta != 0) {
                    cv = get(cm.type, cBefore.data(), cm.index(t, i, j));
                    want += (long double)beta * cv;
                }
                int64_t at = s.d.index(t, i, j);
                written[size_t(at)] = 1;
                double got = get(s.d.type, o.d.p, at);
                bool ok;
                if (s.d.type == R_16F || s.d.type == R_16BF) {
                    uint16_t bits, expect = nearest(s.d.type, double(want));
                    std::memcpy(&bits, o.d.p + at * 2, 2);
                    double e = s.d.type == R_16F ? halfValue(expect) : bf16Value(expect);
                    ok = (std::isnan(got) && std::isnan(e)) || got == e;
                    // A tie: exactly halfway between two neighbours of the type.
                    double lo = s.d.type == R_16F ? halfValue(uint16_t(expect - 1)) : bf16Value(uint16_t(expect - 1));
                    double hi = s.d.type == R_16F ? halfValue(uint16_t(expect + 1)) : bf16Value(uint16_t(expect + 1));
                    if (std::isfinite(e) && e != 0 && ((double)want == (e + lo) / 2 || (double)want == (e + hi) / 2)) {
                        ++result.ties;
                    }
                } else if (exact || std::isnan((double)want)) {
                    ok = (std::isnan(got) && std::isnan((double)want)) || got == (double)(s.d.type == R_32F ? (float)want : (double)want);
                } else {
                    long double bound = 2 * eps * (k + 2) * (std::fabs(alpha) * mag + std::fabs(beta * cv)) + 1e-300;
                    ok = std::fabs((long double)got - want) <= bound;
                }
                if (!ok && reported++ < 3) {
                    CHECK(ok, "%s: D[%lld](%lld, %lld) = %.17g, expected %.17Lg", label, (long long)t, (long long)i,
                            (long long)j, got, want);
                } else if (!ok) {
                    ++failures;
                }
                ++result.checked;
            }
        }
    }
    // Only D's elements were written (its padding between columns and batch entries is as before).
    size_t es = elementSize(s.d.type);
    for (int64_t at = 0; at < s.d.span(); ++at) {
        if (written[size_t(at)]) continue;
        const unsigned char* before = inPlace ? cBefore.data() : dBefore.data();
        if (std::memcmp(o.d.p + at * es, before + at * es, es) != 0) {
            CHECK(false, "%s: D's padding element %lld was overwritten", label, (long long)at);
            break;
        }
    }
    return result;
}

// ---- the tests --------------------------------------------------------------------------------------

void testApi() {
    CHECK(cublasLtGetVersion() == 130100, "version %zu", cublasLtGetVersion());
    CHECK(std::strcmp(cublasLtGetStatusName(NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED") == 0, "status name");
    CHECK(std::strcmp(cublasLtGetStatusName(SUCCESS), "CUBLAS_STATUS_SUCCESS") == 0, "status name");
    CHECK(cublasLtGetStatusName(12345) != nullptr && cublasLtGetStatusString(12345) != nullptr, "unknown status");
    int parts[3] = {-1, -1, -1};
    for (int i = 0; i < 3; ++i) CHECK(cublasGetProperty(i, &parts[i]) == SUCCESS, "cublasGetProperty(%d)", i);
    CHECK(parts[0] == 13 && parts[1] == 1 && parts[2] == 0, "cuBLAS %d.%d.%d", parts[0], parts[1], parts[2]);
    CHECK(cublasGetProperty(3, &parts[0]) == INVALID_VALUE && cublasGetProperty(0, nullptr) == INVALID_VALUE,
            "cublasGetProperty's refusals");

    void* h = nullptr;
    CHECK(cublasLtCreate(nullptr) == INVALID_VALUE, "create(null)");
    CHECK(cublasLtCreate(&h) == SUCCESS && h != nullptr, "create");
    CHECK(cublasLtDestroy(h) == SUCCESS, "destroy");
    CHECK(cublasLtDestroy(h) == NOT_INITIALIZED, "destroy twice");
    CHECK(cublasLtDestroy(nullptr) == NOT_INITIALIZED, "destroy(null)");

    void *desc = nullptr, *layout = nullptr, *pref = nullptr;
    CHECK(cublasLtMatmulDescCreate(&desc, COMPUTE_32F, R_32F) == SUCCESS, "desc");
    CHECK(cublasLtMatrixLayoutCreate(&layout, R_32F, 4, 3, 5) == SUCCESS, "layout");
    CHECK(cublasLtMatmulPreferenceCreate(&pref) == SUCCESS, "preference");
    int32_t one = 1;
    int64_t wide = 1;
    // Sizes must match the attribute's; descriptors of another kind are refused, not dereferenced.
    CHECK(cublasLtMatmulDescSetAttribute(desc, DESC_TRANSA, &one, 4) == SUCCESS, "transA");
    CHECK(cublasLtMatmulDescSetAttribute(desc, DESC_TRANSA, &wide, 8) == INVALID_VALUE, "transA of 8 bytes");
    CHECK(cublasLtMatmulDescSetAttribute(desc, DESC_TRANSA, nullptr, 4) == INVALID_VALUE, "null buffer");
    CHECK(cublasLtMatmulDescSetAttribute(desc, 9999, &one, 4) == INVALID_VALUE, "unknown attribute");
    CHECK(cublasLtMatmulDescSetAttribute(layout, DESC_TRANSA, &one, 4) == INVALID_VALUE, "a layout as desc");
    CHECK(cublasLtMatrixLayoutSetAttribute(desc, LAYOUT_LD, &wide, 8) == INVALID_VALUE, "a desc as layout");
    CHECK(cublasLtMatrixLayoutSetAttribute(nullptr, LAYOUT_LD, &wide, 8) == INVALID_VALUE, "null layout");
    CHECK(cublasLtMatmulPreferenceSetAttribute(layout, PREF_MAX_WORKSPACE_BYTES, &wide, 8) == INVALID_VALUE,
            "a layout as preference");
    CHECK(cublasLtMatrixLayoutSetAttribute(layout, LAYOUT_BATCH_COUNT, &wide, 8) == INVALID_VALUE, "batch of 8 bytes");
    uint32_t align = 16;
    CHECK(cublasLtMatmulPreferenceSetAttribute(pref, PREF_MIN_ALIGNMENT_A_BYTES, &align, 4) == SUCCESS, "alignment");

    int32_t got = -1;
    size_t written = 0;
    CHECK(cublasLtMatmulDescGetAttribute(desc, DESC_TRANSA, &got, 4, &written) == SUCCESS && got == 1 && written == 4,
            "get transA: %d", got);
    CHECK(cublasLtMatmulDescGetAttribute(desc, DESC_COMPUTE_TYPE, &got, 4, nullptr) == SUCCESS && got == COMPUTE_32F,
            "get compute type: %d", got);
    CHECK(cublasLtMatmulDescGetAttribute(desc, DESC_TRANSA, nullptr, 0, &written) == SUCCESS && written == 4,
            "size query");
    CHECK(cublasLtMatmulDescGetAttribute(desc, DESC_TRANSA, nullptr, 0, nullptr) == INVALID_VALUE, "size query to null");
    uint64_t rows = 0;
    int64_t ld = 0;
    uint32_t type = 99;
    CHECK(cublasLtMatrixLayoutGetAttribute(layout, LAYOUT_ROWS, &rows, 8, &written) == SUCCESS && rows == 4, "rows");
    CHECK(cublasLtMatrixLayoutGetAttribute(layout, LAYOUT_LD, &ld, 8, &written) == SUCCESS && ld == 5, "ld");
    CHECK(cublasLtMatrixLayoutGetAttribute(layout, LAYOUT_TYPE, &type, 4, &written) == SUCCESS && type == R_32F, "type");
    CHECK(cublasLtMatrixLayoutGetAttribute(layout, LAYOUT_ROWS, &rows, 4, &written) == INVALID_VALUE, "rows in 4 bytes");

    CHECK(cublasLtMatmulDescDestroy(layout) == INVALID_VALUE, "a layout destroyed as desc");
    CHECK(cublasLtMatmulPreferenceDestroy(pref) == SUCCESS, "preference destroyed");
    CHECK(cublasLtMatmulPreferenceDestroy(pref) == INVALID_VALUE, "preference destroyed twice");
    CHECK(cublasLtMatrixLayoutDestroy(layout) == SUCCESS, "layout destroyed");
    CHECK(cublasLtMatmulDescDestroy(desc) == SUCCESS, "desc destroyed");
    CHECK(cublasLtMatmulDescCreate(nullptr, COMPUTE_32F, R_32F) == INVALID_VALUE, "desc create(null)");
    CHECK(cublasLtMatrixLayoutCreate(nullptr, R_32F, 1, 1, 1) == INVALID_VALUE, "layout create(null)");
}

// The heuristic's result as jtorch reads it: algo at 0, workspaceSize at 64, state at 72, wavesCount at 76.
void testHeuristic() {
    Spec s = product(R_32F, 5, 6, 7, 0, 1, 0);
    Descs d = makeDescs(s);
    void* pref = nullptr;
    cublasLtMatmulPreferenceCreate(&pref);
    unsigned char raw[2 * 96];
    int count = -1;
    std::memset(raw, 0xab, sizeof raw);
    // No workspace allowed (the preference's default): the algorithm must need none.
    int rc = cublasLtMatmulAlgoGetHeuristic(handle(), d.desc, d.a, d.b, d.c, d.d, pref, 2, raw, &count);
    CHECK(rc == SUCCESS && count >= 1, "heuristic: %d, %d results", rc, count);
    uint64_t workspace;
    int32_t state;
    float waves;
    std::memcpy(&workspace, raw + 64, 8);
    std::memcpy(&state, raw + 72, 4);
    std::memcpy(&waves, raw + 76, 4);
    CHECK(workspace == 0, "workspace %llu with a 0-byte limit", (unsigned long long)workspace);
    CHECK(state == SUCCESS, "state %d", state);
    CHECK(waves > 0 && std::isfinite(waves), "wavesCount %g", waves);
    CHECK(count == 1, "one algorithm expected, got %d", count);

    CHECK(cublasLtMatmulAlgoGetHeuristic(handle(), d.desc, d.a, d.b, d.c, d.d, pref, 0, raw, &count) == INVALID_VALUE,
            "0 requested");
    CHECK(cublasLtMatmulAlgoGetHeuristic(handle(), d.desc, d.a, d.b, d.c, d.d, pref, 1, nullptr, &count) == INVALID_VALUE,
            "null results");
    CHECK(cublasLtMatmulAlgoGetHeuristic(handle(), d.desc, d.a, d.b, d.c, d.d, nullptr, 1, raw, &count) == INVALID_VALUE,
            "null preference");
    CHECK(cublasLtMatmulAlgoGetHeuristic(nullptr, d.desc, d.a, d.b, d.c, d.d, pref, 1, raw, &count) == NOT_INITIALIZED,
            "null handle");
    CHECK(cublasLtMatmulAlgoGetHeuristic(handle(), d.a, d.a, d.b, d.c, d.d, pref, 1, raw, &count) == INVALID_VALUE,
            "a layout as the matmul desc");
    cublasLtMatmulPreferenceDestroy(pref);
    destroyDescs(d);
}

void testF32AndF64() {
    // Sizes around the blocking (micro-tiles of 8 and 4, tiles of 128, K slices of 256), vectors, and
    // one row (computed transposed inside).
    const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {8, 8, 8}, {17, 33, 65}, {130, 257, 300}, {1, 300, 40},
                                 {200, 1, 50}, {5, 3, 600}, {2, 9, 1}};
    uint64_t seed = 1;
    for (int type : {R_32F, R_64F}) {
        for (auto& sh : shapes) {
            for (int ta = 0; ta < 2; ++ta) {
                for (int tb = 0; tb < 2; ++tb) {
                    for (int64_t pad : {0, 3}) {
                        Spec s = product(type, sh[0], sh[1], sh[2], ta, tb, pad);
                        char label[160];
                        std::snprintf(label, sizeof label, "%s %lldx%lldx%lld op(%c,%c) pad %lld",
                                type == R_32F ? "f32" : "f64", (long long)sh[0], (long long)sh[1], (long long)sh[2],
                                ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)pad);
                        std::string l(label);
                        check((l + " alpha 1 beta 0, NaN C").c_str(), s, 1, 0, false, true, Values::Uniform, false, ++seed);
                        check((l + " alpha 0.5 beta 2").c_str(), s, 0.5, 2, false, false, Values::Uniform, false, ++seed);
                        Spec inPlace = s;
                        inPlace.c = inPlace.d;
                        check((l + " in place, alpha -1.25 beta 1").c_str(), inPlace, -1.25, 1, true, false,
                                Values::Uniform, false, ++seed);
                        check((l + " in place, beta 0 over NaN").c_str(), inPlace, 2, 0, true, true, Values::Uniform,
                                false, ++seed);
                    }
                }
            }
        }
    }
}

void testBatches() {
    uint64_t seed = 100;
    for (int type : {R_32F, R_64F, R_16F}) {
        bool half = type == R_16F;
        // Also fewer rows than a micro-tile (computed transposed inside).
        for (int ta = 0; ta < 4; ++ta) {
            Spec s = ta < 2 ? product(type, 19, 11, 13, ta, 1, 2) : product(type, 3, 21, 13, ta - 2, 0, 1);
            for (Mat* m : {&s.a, &s.b, &s.c, &s.d}) m->batch = 4;
            // Strided entries with gaps between them; then A, then B broadcast (stride 0).
            s.a.stride = s.a.span() + 5;
            s.b.stride = s.b.span() + 1;
            s.c.stride = s.c.span() + 3;
            s.d.stride = s.d.span() + 7;
            Values v = half ? Values::Grid : Values::Uniform;
            check("batch of 4, strided", s, 0.75, 0.5, false, false, v, half, ++seed);
            Spec broadcastA = s;
            broadcastA.a.stride = 0;
            check("batch of 4, A broadcast", broadcastA, 1, 0, false, true, v, half, ++seed);
            Spec broadcastB = s;
            broadcastB.b.stride = 0;
            broadcastB.c = broadcastB.d;
            check("batch of 4, B broadcast, in place", broadcastB, 1, 1, true, false, v, half, ++seed);
        }
    }
}

// f16/bf16: inputs on a grid that keeps every f32 sum exact, so D must be the exact result rounded once.
void testHalfRounding() {
    uint64_t seed = 200;
    for (int type : {R_16F, R_16BF}) {
        const char* name = type == R_16F ? "f16" : "bf16";
        Result total;
        for (int ta = 0; ta < 2; ++ta) {
            for (int tb = 0; tb < 2; ++tb) {
                Spec s = product(type, 37, 29, 41, ta, tb, 1);
                auto add = [&](Result r) {
                    total.checked += r.checked;
                    total.ties += r.ties;
                };
                std::string l = std::string(name) + (ta ? " T" : " N") + (tb ? "T" : "N");
                add(check((l + " alpha 1, beta 0 over NaN").c_str(), s, 1, 0, false, true, Values::Grid, true, ++seed));
                add(check((l + " alpha 2^-3, beta 0.5").c_str(), s, 0.125, 0.5, false, false, Values::Grid, true, ++seed));
                add(check((l + " alpha 2^-20 (subnormal results)").c_str(), s, std::ldexp(1.0, -20), 0, false, false,
                        Values::Grid, true, ++seed));
                add(check((l + " alpha 2^12 (large results)").c_str(), s, 4096, 0, false, false, Values::Grid, true, ++seed));
                Spec inPlace = s;
                inPlace.c = inPlace.d;
                add(check((l + " in place").c_str(), inPlace, 1, -0.5, true, false, Values::Grid, true, ++seed));
                // f16/bf16 inputs, f32 output.
                Spec wide = s;
                wide.c.type = wide.d.type = R_32F;
                add(check((l + " to f32").c_str(), wide, 0.5, 2, false, false, Values::Grid, true, ++seed));
            }
        }
        CHECK(total.ties > 20, "%s: only %lld ties met, the rounding of ties is hardly tested", name,
                (long long)total.ties);
        std::printf("  %s: %lld results bit-exact, %lld of them ties\n", name, (long long)total.checked,
                (long long)total.ties);
    }
}

// Explicit cases: ties either way, just above and below a tie, the overflow threshold, NaN.
void testHalfEdges() {
    for (int type : {R_16F, R_16BF}) {
        int p = type == R_16F ? 11 : 8;  // significand bits
        double u = std::ldexp(1.0, -p);  // half an ulp of 1
        double maxFinite = type == R_16F ? 65504 : std::ldexp(2 - std::ldexp(1.0, -7), 127);
        double maxHalfUlp = type == R_16F ? 16 : std::ldexp(1.0, 119);
        // Row r of A is (x, y, z); B is ones: D = x + y + z, exact in f32.
        const double rows[][3] = {
            {1, u, 0},                      // tie to 1 (even)
            {1, 3 * u, 0},                  // tie to 1 + 4u (even)
            {1, u, u / 64},                 // just above a tie: up
            {1, u, -u / 64},                // just below: down
            {-1, -3 * u, 0},                // negative tie
            {maxFinite, maxHalfUlp, 0},     // the overflow threshold: a tie, to infinity
            {maxFinite, maxHalfUlp / 2, 0}, // below it: the largest finite value
            {maxFinite, maxFinite, 0},      // far past it: infinity
            {NAN, 1, 1},                    // NaN stays NaN
            {INFINITY, 1, 0},
        };
        const int m = sizeof rows / sizeof rows[0], k = 3, n = 2;
        Spec s = product(type, m, n, k, 0, 0, 0);
        DeviceBuffer a(m * k * 2), b(k * n * 2), d(m * n * 2);
        for (int i = 0; i < m; ++i) {
            for (int q = 0; q < k; ++q) put(type, a.p, i + q * m, rows[i][q]);
        }
        for (int q = 0; q < k * n; ++q) put(type, b.p, q, 1);
        float one = 1, zero = 0;
        CHECK(matmul(s, &one, a.p, b.p, &zero, nullptr, d.p) == SUCCESS, "edge cases");
        for (int i = 0; i < m; ++i) {
            double exact = rows[i][0] + rows[i][1] + rows[i][2];
            for (int j = 0; j < n; ++j) {
                uint16_t bits;
                std::memcpy(&bits, d.p + (i + j * m) * 2, 2);
                uint16_t want = nearest(type, exact);
                bool ok = std::isnan(exact) ? ((bits & 0x7fff) > (type == R_16F ? 0x7c00 : 0x7f80)) : bits == want;
                CHECK(ok, "%s edge row %d: 0x%04x, expected 0x%04x (%.17g)", type == R_16F ? "f16" : "bf16", i, bits,
                        want, exact);
            }
        }
    }
}

void testComputeTypes() {
    // TF32 allowed: computed exactly as f32 here (a GPU may round the inputs to TF32 instead).
    Spec s = product(R_32F, 33, 20, 70, 1, 0, 1);
    s.compute = COMPUTE_32F_FAST_TF32;
    check("f32 in 32F_FAST_TF32", s, 1, 0, false, true, Values::Uniform, false, 300);
    // Row-major layouts (CUBLASLT_ORDER_ROW: ld is the row stride).
    Spec rows = product(R_32F, 21, 14, 9, 0, 1, 0);
    for (Mat* m : {&rows.a, &rows.b, &rows.c, &rows.d}) {
        m->order = 1;
        m->ld = int64_t(m->cols) + 2;
    }
    check("row-major f32", rows, 1.5, -1, false, false, Values::Uniform, false, 301);
}

void testRefusals() {
    HeuristicResult r;
    int count;
    auto both = [&](const Spec& s, int want, const char* what) {
        int h = heuristic(s, &r, &count);
        CHECK(h == want, "%s: heuristic returned %d, expected %d", what, h, want);
        DeviceBuffer buf(1 << 16);
        float one = 1;
        double oneD = 1;
        const void* alpha = s.scale == R_64F ? static_cast<const void*>(&oneD) : &one;
        int rc = matmul(s, alpha, buf.p, buf.p, alpha, buf.p + 4096, buf.p + 8192, false);
        CHECK(rc == want, "%s: cublasLtMatmul returned %d, expected %d", what, rc, want);
    };
    Spec ok = product(R_32F, 4, 5, 6, 0, 0, 0);
    both(ok, SUCCESS, "a valid f32 product");

    Spec mixed = ok;
    mixed.b.type = R_64F;
    both(mixed, NOT_SUPPORTED, "f32 A with f64 B");
    Spec cd = ok;
    cd.c.type = R_16F;
    both(cd, NOT_SUPPORTED, "f16 C with f32 D");
    Spec ints = product(R_8I, 4, 5, 6, 0, 0, 0);
    both(ints, NOT_SUPPORTED, "int8 in 32F");
    Spec ints32 = product(R_32I, 4, 5, 6, 0, 0, 0);
    both(ints32, NOT_SUPPORTED, "int32 in 32F");
    Spec unknown = ok;
    unknown.compute = 12345;
    both(unknown, NOT_SUPPORTED, "an unknown compute type");
    Spec f64in32 = product(R_64F, 4, 5, 6, 0, 0, 0);
    f64in32.compute = COMPUTE_32F;
    f64in32.scale = R_32F;
    both(f64in32, NOT_SUPPORTED, "f64 data in 32F");
    Spec f32in64 = ok;
    f32in64.compute = COMPUTE_64F;
    f32in64.scale = R_64F;
    both(f32in64, NOT_SUPPORTED, "f32 data in 64F");
    Spec scale = ok;
    scale.scale = R_64F;
    both(scale, NOT_SUPPORTED, "f64 scale in 32F");
    Spec tf32half = product(R_16F, 4, 5, 6, 0, 0, 0);
    tf32half.compute = COMPUTE_32F_FAST_TF32;
    both(tf32half, NOT_SUPPORTED, "f16 in 32F_FAST_TF32");
    Spec epilogue = ok;
    epilogue.epilogue = EPI_RELU;
    both(epilogue, SUCCESS, "a ReLU epilogue");

    Spec inner = ok;
    inner.b.rows = 7;
    inner.b.ld = 7;
    both(inner, INVALID_VALUE, "A's columns differ from B's rows");
    Spec transposed = ok;
    transposed.ta = 1;  // A stays 4 x 6: op(A) is 6 x 4, D is 4 x 5
    both(transposed, INVALID_VALUE, "a transpose that does not fit the layouts");
    Spec dShape = ok;
    dShape.c.cols = dShape.d.cols = 6;
    both(dShape, INVALID_VALUE, "D's columns differ from B's");
    Spec ld = ok;
    ld.a.ld = 3;
    both(ld, INVALID_VALUE, "ld < rows");
    Spec empty = product(R_32F, 0, 5, 6, 0, 0, 0);
    empty.a.ld = empty.c.ld = empty.d.ld = 1;
    both(empty, INVALID_VALUE, "zero rows");
    Spec batches = ok;
    batches.d.batch = batches.c.batch = 2;
    both(batches, INVALID_VALUE, "batch counts that differ");
    Spec zeroBatch = ok;
    for (Mat* m : {&zeroBatch.a, &zeroBatch.b, &zeroBatch.c, &zeroBatch.d}) m->batch = 0;
    both(zeroBatch, INVALID_VALUE, "a batch of 0");
    Spec badOp = ok;
    badOp.ta = 7;
    both(badOp, INVALID_VALUE, "transA 7");

    // Arguments only the matmul sees.
    DeviceBuffer buf(1 << 12);
    Descs d = makeDescs(ok);
    float one = 1;
    uint64_t garbage[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(cublasLtMatmul(handle(), d.desc, &one, buf.p, d.a, buf.p, d.b, &one, buf.p, d.c, buf.p + 1024, d.d, garbage,
                  nullptr, 0, 0) == INVALID_VALUE, "an algorithm the heuristic never gave");
    CHECK(cublasLtMatmul(handle(), d.desc, nullptr, buf.p, d.a, buf.p, d.b, &one, buf.p, d.c, buf.p + 1024, d.d, nullptr,
                  nullptr, 0, 0) == INVALID_VALUE, "null alpha");
    CHECK(cublasLtMatmul(nullptr, d.desc, &one, buf.p, d.a, buf.p, d.b, &one, buf.p, d.c, buf.p + 1024, d.d, nullptr,
                  nullptr, 0, 0) == NOT_INITIALIZED, "null handle");
    CHECK(cublasLtMatmul(handle(), d.desc, &one, buf.p, d.a, buf.p, nullptr, &one, buf.p, d.c, buf.p + 1024, d.d, nullptr,
                  nullptr, 0, 0) == INVALID_VALUE, "null B layout");
    CHECK(cublasLtMatmul(handle(), d.a, &one, buf.p, d.a, buf.p, d.b, &one, buf.p, d.c, buf.p + 1024, d.d, nullptr,
                  nullptr, 0, 0) == INVALID_VALUE, "a layout as the matmul desc");
    // In place with C laid out unlike D.
    void* otherC = nullptr;
    cublasLtMatrixLayoutCreate(&otherC, R_32F, 4, 5, 6);
    CHECK(cublasLtMatmul(handle(), d.desc, &one, buf.p, d.a, buf.p, d.b, &one, buf.p + 1024, otherC, buf.p + 1024, d.d,
                  nullptr, nullptr, 0, 0) == INVALID_VALUE, "C == D with another ld");
    cublasLtMatrixLayoutDestroy(otherC);
    void* dead = nullptr;
    cublasLtCreate(&dead);
    cublasLtDestroy(dead);
    CHECK(cublasLtMatmul(dead, d.desc, &one, buf.p, d.a, buf.p, d.b, &one, buf.p, d.c, buf.p + 1024, d.d, nullptr,
                  nullptr, 0, 0) == NOT_INITIALIZED, "a destroyed handle");
    destroyDescs(d);
    CHECK(jtsim_stub_error() == 0, "no work ran for refused calls: %s", jtsim_last_failure());
}

// An operand outside any allocation is found when the work runs: jtsim_fail, and D is not written.
void testOutOfRange() {
    const int m = 6, n = 5, k = 4;
    Spec s = product(R_32F, m, n, k, 0, 0, 0);
    DeviceBuffer a(m * k * 4), b(k * n * 4 - 4), d(m * n * 4);  // B one element short
    std::memset(a.p, 0, a.bytes);
    std::memset(b.p, 0, b.bytes);
    std::memset(d.p, 0x7f, d.bytes);
    float one = 1, zero = 0;
    int rc = matmul(s, &one, a.p, b.p, &zero, nullptr, d.p);
    CHECK(rc == SUCCESS, "the call itself succeeds (the fault is asynchronous): %d", rc);
    CHECK(jtsim_stub_error() == ILLEGAL_ADDRESS, "sticky error %d", jtsim_stub_error());
    char expect[128];
    std::snprintf(expect, sizeof expect, "cublasLtMatmul: operand B [0x%llx, +%d bytes) is outside any allocation",
            (unsigned long long)reinterpret_cast<uintptr_t>(b.p), k * n * 4);
    CHECK(std::strcmp(jtsim_last_failure(), expect) == 0, "message '%s', expected '%s'", jtsim_last_failure(), expect);
    bool untouched = true;
    for (size_t i = 0; i < d.bytes; ++i) untouched &= d.p[i] == 0x7f;
    CHECK(untouched, "D was written after the fault");
    jtsim_stub_reset();

    // beta == 0: C is never read, so it may be anywhere; a D past its allocation is reported.
    DeviceBuffer shortD(m * n * 4 - 1);
    DeviceBuffer b2(k * n * 4);
    std::memset(b2.p, 0, b2.bytes);
    rc = matmul(s, &one, a.p, b2.p, &zero, reinterpret_cast<void*>(uintptr_t(16)), shortD.p);
    CHECK(rc == SUCCESS, "matmul: %d", rc);
    CHECK(std::strstr(jtsim_last_failure(), "operand D") != nullptr, "message '%s'", jtsim_last_failure());
    jtsim_stub_reset();
    // beta != 0 reads C.
    rc = matmul(s, &one, a.p, b2.p, &one, reinterpret_cast<void*>(uintptr_t(16)), d.p);
    CHECK(std::strstr(jtsim_last_failure(), "operand C [0x10,") != nullptr, "message '%s'", jtsim_last_failure());
    jtsim_stub_reset();
    // A batch whose last entry runs past the allocation.
    Spec batched = s;
    for (Mat* x : {&batched.a, &batched.b, &batched.c, &batched.d}) {
        x->batch = 2;
        x->stride = int64_t(x->rows * x->cols);
    }
    batched.a.stride = 1;  // A's second entry starts one element later: one element past the end
    rc = matmul(batched, &one, a.p, b2.p, &zero, nullptr, d.p);
    CHECK(std::strstr(jtsim_last_failure(), "operand A") != nullptr, "message '%s'", jtsim_last_failure());
    jtsim_stub_reset();
}

// The call copies what it needs: descriptors destroyed and host scalars changed before the work runs.
void testDeferred() {
    const int m = 9, n = 7, k = 5;
    Spec s = product(R_32F, m, n, k, 1, 0, 0);
    DeviceBuffer a(m * k * 4), b(k * n * 4), d(m * n * 4);
    for (int i = 0; i < m * k; ++i) put(R_32F, a.p, i, i % 7 - 3);
    for (int i = 0; i < k * n; ++i) put(R_32F, b.p, i, i % 5 - 2);
    for (int i = 0; i < m * n; ++i) put(R_32F, d.p, i, 1);
    float alpha = 2, beta = 3;
    jtsim_stub_set_deferred(1);
    int rc = matmul(s, &alpha, a.p, b.p, &beta, d.p, d.p);  // descriptors are destroyed inside
    alpha = 100;
    beta = 100;
    CHECK(rc == SUCCESS, "deferred matmul: %d", rc);
    CHECK(get(R_32F, d.p, 0) == 1, "ran before the stream did");
    jtsim_stub_drain();
    jtsim_stub_set_deferred(0);
    for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
            double want = 3;
            for (int p = 0; p < k; ++p) want += 2 * get(R_32F, a.p, p + i * k) * get(R_32F, b.p, p + j * k);
            CHECK(get(R_32F, d.p, i + j * m) == want, "deferred D(%d, %d) = %g, expected %g", i, j,
                    get(R_32F, d.p, i + j * m), want);
        }
    }
}

// A stream the driver refuses: EXECUTION_FAILED, the work not run but cleaned up.
void testStreamError() {
    Spec s = product(R_32F, 3, 3, 3, 0, 0, 0);
    DeviceBuffer buf(256);
    float one = 1;
    int e0, r0, c0, e1, r1, c1;
    jtsim_stub_counts(&e0, &r0, &c0);
    int rc = matmul(s, &one, buf.p, buf.p, &one, buf.p + 64, buf.p + 64, true, 0xbad);
    jtsim_stub_counts(&e1, &r1, &c1);
    CHECK(rc == EXECUTION_FAILED, "bad stream: %d", rc);
    CHECK(e1 == e0 + 1 && r1 == r0 && c1 == c0 + 1, "enqueued %d ran %d cleaned %d", e1 - e0, r1 - r0, c1 - c0);
}

// CUBLASLT_POINTER_MODE_DEVICE: alpha and beta read from device memory when the work runs.
void testDevicePointers() {
    const int m = 4, n = 3, k = 2;
    Spec s = product(R_64F, m, n, k, 0, 0, 0);
    s.pointerMode = 1;
    DeviceBuffer a(m * k * 8), b(k * n * 8), d(m * n * 8), scalars(16);
    for (int i = 0; i < m * k; ++i) put(R_64F, a.p, i, i + 1);
    for (int i = 0; i < k * n; ++i) put(R_64F, b.p, i, 2 - i);
    for (int i = 0; i < m * n; ++i) put(R_64F, d.p, i, 10);
    put(R_64F, scalars.p, 0, 0.5);
    put(R_64F, scalars.p, 1, -1);
    CHECK(matmul(s, scalars.p, a.p, b.p, scalars.p + 8, d.p, d.p) == SUCCESS, "device scalars");
    for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
            double want = -10;
            for (int p = 0; p < k; ++p) want += 0.5 * (i + p * m + 1) * (2 - (p + j * k));
            CHECK(get(R_64F, d.p, i + j * m) == want, "D(%d, %d) = %g, expected %g", i, j, get(R_64F, d.p, i + j * m),
                    want);
        }
    }
    double host = 1;
    CHECK(matmul(s, &host, a.p, b.p, scalars.p + 8, d.p, d.p) == SUCCESS, "call");
    CHECK(std::strstr(jtsim_last_failure(), "alpha") != nullptr, "a host alpha in device mode: '%s'",
            jtsim_last_failure());
    jtsim_stub_reset();
}

double seconds(const Spec& s, DeviceBuffer& a, DeviceBuffer& b, DeviceBuffer& d) {
    float one = 1, zero = 0;
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        int rc = matmul(s, &one, a.p, b.p, &zero, nullptr, d.p);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        CHECK(rc == SUCCESS, "timed matmul %d", rc);
    }
    return best;
}

// Times two products jtorch makes (the work runs inside the call with the stub) and spot-checks them.
void testSpeed() {
    const int64_t sizes[][3] = {{512, 512, 512}, {128, 1152, 8192}};
    for (auto& sz : sizes) {
        int64_t m = sz[0], n = sz[1], k = sz[2];
        Spec s = product(R_32F, m, n, k, 0, 0, 0);
        DeviceBuffer a(m * k * 4), b(k * n * 4), d(m * n * 4);
        std::mt19937_64 rng(7);
        fill(s.a, a, rng, Values::Uniform, false);
        fill(s.b, b, rng, Values::Uniform, false);
        double t = seconds(s, a, b, d);
        std::printf("  f32 %lldx%lldx%lld (m x n x k): %.3f s (%.1f GFLOP/s)\n", (long long)m, (long long)n,
                (long long)k, t, 2e-9 * double(m * n * k) / t);
        for (int q = 0; q < 50; ++q) {
            int64_t i = int64_t(rng() % uint64_t(m)), j = int64_t(rng() % uint64_t(n));
            long double mag, want = dot(s, a.p, b.p, 0, i, j, k, &mag);
            double got = get(R_32F, d.p, i + j * m);
            CHECK(std::fabs(got - want) <= 2 * std::ldexp(1.0, -23) * (k + 2) * mag, "D(%lld, %lld) = %g, expected %Lg",
                    (long long)i, (long long)j, got, want);
        }
    }
}

// ---- epilogues -------------------------------------------------------------------------------------

long double activation(uint32_t epilogue, long double x) {
    if (epilogue == EPI_RELU || epilogue == EPI_RELU_BIAS) return x > 0 ? x : 0;
    if (epilogue == EPI_GELU || epilogue == EPI_GELU_BIAS || epilogue == EPI_GELU_AUX || epilogue == EPI_GELU_AUX_BIAS) {
        const long double k = 0.79788456080286535587989211986876373L;  // sqrt(2 / pi)
        return 0.5L * x * (1 + std::tanh(k * (x + 0.044715L * x * x * x)));
    }
    return x;
}

bool hasBias(uint32_t e) {
    return e == EPI_BIAS || e == EPI_RELU_BIAS || e == EPI_GELU_BIAS || e == EPI_GELU_AUX_BIAS;
}

bool hasAux(uint32_t e) {
    return e == EPI_GELU_AUX || e == EPI_GELU_AUX_BIAS;
}

// D = act(alpha op(A) op(B) + beta C + bias) (aux = the activation's input) against the long double
// reference: within the accumulation's bound, plus one rounding to D's type and, for GELU, the
// accumulator's tanh. D's and aux's padding stay untouched.
void checkEpilogue(const char* label, Spec s, uint32_t epilogue, double alpha, double beta, uint64_t seed) {
    std::mt19937_64 rng(seed);
    s.epilogue = epilogue;
    Operands o(s, false);
    fill(s.a, o.a, rng, Values::Uniform, false);
    fill(s.b, o.b, rng, Values::Uniform, false);
    fill(s.c, o.c, rng, Values::Uniform, true);
    int64_t m = int64_t(s.d.rows), n = int64_t(s.d.cols), k = int64_t(s.ta ? s.a.rows : s.a.cols);
    int type = s.d.type;
    // Bias vectors m elements long, biasStride apart (padded, so that a wrong stride shows).
    s.biasStride = s.d.batch > 1 ? m + 3 : 0;
    DeviceBuffer bias(size_t((s.d.batch - 1) * s.biasStride + m) * elementSize(type));
    std::uniform_real_distribution<double> uniform(-1, 1);
    for (int64_t i = 0; i < (s.d.batch - 1) * s.biasStride + m; ++i) put(type, bias.p, i, uniform(rng));
    int64_t auxLd = (m + 7) / 8 * 8 + 8, auxSpan = (s.d.batch - 1) * auxLd * (n + 1) + auxLd * n;
    DeviceBuffer aux(size_t(auxSpan) * elementSize(type));
    for (int64_t i = 0; i < auxSpan; ++i) put(type, aux.p, i, -7.25);
    if (hasBias(epilogue)) s.bias = bias.p;
    if (hasAux(epilogue)) {
        s.aux = aux.p;
        s.auxLd = auxLd;
        s.auxStride = auxLd * (n + 1);
    }
    for (int64_t i = 0; i < s.d.span(); ++i) put(type, o.d.p, i, -3.5);
    float fa = float(alpha), fb = float(beta);
    bool f64 = s.scale == R_64F;
    int rc = matmul(s, f64 ? static_cast<const void*>(&alpha) : &fa, o.a.p, o.b.p,
            f64 ? static_cast<const void*>(&beta) : &fb, o.c.p, o.d.p);
    CHECK(rc == SUCCESS, "%s: cublasLtMatmul returned %d", label, rc);
    CHECK(jtsim_stub_error() == 0, "%s: jtsim_fail: %s", label, jtsim_last_failure());
    if (rc != SUCCESS) return;
    double eps = type == R_64F ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
    double storage = type == R_16F ? std::ldexp(1.0, -11) : type == R_16BF ? std::ldexp(1.0, -8) : eps;
    double accEps = s.compute == COMPUTE_64F ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
    std::vector<char> written(size_t(s.d.span()), 0), auxWritten(size_t(auxSpan), 0);
    int reported = 0;
    for (int64_t t = 0; t < s.d.batch; ++t) {
        for (int64_t j = 0; j < n; ++j) {
            for (int64_t i = 0; i < m; ++i) {
                long double mag;
                long double pre = (long double)alpha * dot(s, o.a.p, o.b.p, t, i, j, k, &mag);
                long double cv = get(s.c.type, o.c.p, s.c.index(t, i, j));
                pre += (long double)beta * cv;
                long double bv = hasBias(epilogue) ? get(type, bias.p, t * s.biasStride + i) : 0;
                pre += bv;
                long double want = activation(epilogue, pre);
                // The accumulation's error, through an activation of slope at most 1.13, then the roundings.
                long double bound = 1.2L * 2 * accEps * (k + 3) * (std::fabs(alpha) * mag + std::fabs(beta * cv) + std::fabs(bv))
                        + 4 * accEps * std::fabs(pre) + storage * std::fabs(want) + 1e-300;
                int64_t at = s.d.index(t, i, j);
                written[size_t(at)] = 1;
                double got = get(type, o.d.p, at);
                bool ok = std::fabs((long double)got - want) <= bound;
                if (hasAux(epilogue)) {
                    int64_t ax = t * s.auxStride + i + j * auxLd;
                    auxWritten[size_t(ax)] = 1;
                    double gotAux = get(type, aux.p, ax);
                    long double auxBound = 1.2L * 2 * accEps * (k + 3) * (std::fabs(alpha) * mag + std::fabs(beta * cv) + std::fabs(bv))
                            + storage * std::fabs(pre) + 1e-300;
                    if (std::fabs((long double)gotAux - pre) > auxBound && reported++ < 3) {
                        CHECK(false, "%s: aux[%lld](%lld, %lld) = %.10g, expected %.10Lg", label, (long long)t,
                                (long long)i, (long long)j, gotAux, pre);
                    }
                }
                if (!ok && reported++ < 3) {
                    CHECK(ok, "%s: D[%lld](%lld, %lld) = %.10g, expected %.10Lg", label, (long long)t, (long long)i,
                            (long long)j, got, want);
                } else if (!ok) {
                    ++failures;
                }
            }
        }
    }
    for (int64_t at = 0; at < s.d.span(); ++at) {
        if (!written[size_t(at)] && get(type, o.d.p, at) != -3.5) {
            CHECK(false, "%s: D's padding element %lld was overwritten", label, (long long)at);
            break;
        }
    }
    for (int64_t at = 0; at < auxSpan; ++at) {
        if (!auxWritten[size_t(at)] && get(type, aux.p, at) != -7.25) {
            CHECK(false, "%s: aux element %lld outside the matrix was written", label, (long long)at);
            break;
        }
    }
}

void testEpilogues() {
    const uint32_t epilogues[] = {EPI_RELU, EPI_BIAS, EPI_RELU_BIAS, EPI_GELU, EPI_GELU_BIAS, EPI_GELU_AUX,
                                  EPI_GELU_AUX_BIAS};
    uint64_t seed = 900;
    struct Types {
        int ab, cd;
        const char* name;
    } types[] = {{R_32F, R_32F, "f32"}, {R_64F, R_64F, "f64"}, {R_16F, R_16F, "f16"}, {R_16BF, R_16BF, "bf16"},
                 {R_16BF, R_32F, "bf16 -> f32"}};
    for (const Types& ty : types) {
        // Tall, wide (fewer rows than a micro-tile: the simulator transposes the problem) and transposed.
        int64_t shapes[][5] = {{37, 29, 19, 0, 1}, {3, 40, 11, 1, 0}, {130, 7, 300, 0, 0}};
        for (auto& sh : shapes) {
            Spec s = product(ty.ab, sh[0], sh[1], sh[2], int(sh[3]), int(sh[4]), 2);
            s.c.type = s.d.type = ty.cd;
            for (uint32_t e : epilogues) {
                std::string l = std::string(ty.name) + " " + std::to_string(sh[0]) + "x" + std::to_string(sh[1]) + "x"
                        + std::to_string(sh[2]) + " epilogue " + std::to_string(e);
                checkEpilogue(l.c_str(), s, e, 1, 0, ++seed);
                checkEpilogue((l + " alpha 0.5 beta -1").c_str(), s, e, 0.5, -1, ++seed);
            }
        }
    }
    // A batch: one bias vector and one aux matrix per entry.
    Spec batch = product(R_32F, 9, 6, 5, 0, 0, 1);
    for (Mat* m : {&batch.a, &batch.b, &batch.c, &batch.d}) {
        m->batch = 3;
        m->stride = m->ld * int64_t(m->cols) + 4;
    }
    checkEpilogue("batch of 3, GELU_AUX_BIAS", batch, EPI_GELU_AUX_BIAS, 1, 0.25, 990);
    checkEpilogue("batch of 3, RELU_BIAS", batch, EPI_RELU_BIAS, 1, 0, 991);

    // The ReLU of NaN is 0 here (fmaxf's rule), of a negative 0; GELU of 0 is 0.
    {
        Spec s = product(R_32F, 2, 1, 1, 0, 0, 0);
        s.epilogue = EPI_RELU;
        DeviceBuffer a(8), b(4), d(8);
        float av[2] = {NAN, -2}, bv = 1;
        std::memcpy(a.p, av, 8);
        std::memcpy(b.p, &bv, 4);
        float one = 1, zero = 0;
        CHECK(matmul(s, &one, a.p, b.p, &zero, d.p, d.p) == SUCCESS, "ReLU of NaN ran");
        float out[2];
        std::memcpy(out, d.p, 8);
        CHECK(out[0] == 0 && out[1] == 0, "ReLU of NaN and -2: %g %g", out[0], out[1]);
    }

    // Refusals, as the real library answers them.
    HeuristicResult r;
    int count;
    DeviceBuffer buf(1 << 14);
    float one = 1;
    Spec ok = product(R_32F, 16, 5, 6, 0, 0, 0);
    for (uint32_t e : {EPI_RELU_AUX_BIAS, EPI_DRELU, EPI_DGELU_BGRAD, EPI_BGRADB, 3u, 12345u}) {
        Spec s = ok;
        s.epilogue = e;
        s.bias = buf.p;
        s.aux = buf.p + 4096;
        s.auxLd = 128;
        CHECK(heuristic(s, &r, &count) == NOT_SUPPORTED, "epilogue %u is not simulated: heuristic", e);
        CHECK(matmul(s, &one, buf.p, buf.p, &one, buf.p + 8192, buf.p + 8192, false) == NOT_SUPPORTED,
                "epilogue %u is not simulated: matmul", e);
    }
    Spec noBias = ok;
    noBias.epilogue = EPI_RELU_BIAS;
    CHECK(matmul(noBias, &one, buf.p, buf.p, &one, buf.p + 8192, buf.p + 8192, false) == INVALID_VALUE,
            "RELU_BIAS without a bias pointer");
    Spec noAux = ok;
    noAux.epilogue = EPI_GELU_AUX_BIAS;
    noAux.bias = buf.p;
    noAux.auxLd = 16;
    CHECK(matmul(noAux, &one, buf.p, buf.p, &one, buf.p + 8192, buf.p + 8192, false) == INVALID_VALUE,
            "GELU_AUX_BIAS without an aux pointer");
    for (int64_t ld : {int64_t(12), int64_t(8), int64_t(0)}) {  // not a multiple of 8, or below D's 16 rows
        Spec s = noAux;
        s.aux = buf.p + 4096;
        s.auxLd = ld;
        CHECK(heuristic(s, &r, &count) == INVALID_VALUE, "aux ld %lld: heuristic", (long long)ld);
        CHECK(matmul(s, &one, buf.p, buf.p, &one, buf.p + 8192, buf.p + 8192, false) == INVALID_VALUE, "aux ld %lld",
                (long long)ld);
    }
    CHECK(jtsim_stub_error() == 0, "no work ran for refused calls: %s", jtsim_last_failure());

    // A bias vector outside any allocation faults when the work runs, as a kernel would.
    {
        Spec s = ok;
        s.epilogue = EPI_BIAS;
        DeviceBuffer small(16 * 4 - 4);  // one element short of D's 16 rows
        s.bias = small.p;
        CHECK(matmul(s, &one, buf.p, buf.p, &one, buf.p + 8192, buf.p + 8192) == SUCCESS, "enqueued");
        CHECK(jtsim_stub_error() == ILLEGAL_ADDRESS, "a short bias vector: %d", jtsim_stub_error());
        jtsim_stub_reset();
    }
}

}  // namespace

int main() {
    struct {
        const char* name;
        void (*run)();
    } tests[] = {{"api", testApi}, {"heuristic", testHeuristic}, {"f32 and f64", testF32AndF64},
                 {"batches", testBatches}, {"f16/bf16 rounding", testHalfRounding}, {"f16/bf16 edges", testHalfEdges},
                 {"compute types and orders", testComputeTypes}, {"refusals", testRefusals},
                 {"out of range", testOutOfRange}, {"deferred", testDeferred}, {"stream error", testStreamError},
                 {"device pointers", testDevicePointers}, {"epilogues", testEpilogues}, {"speed", testSpeed}};
    for (auto& t : tests) {
        int before = failures;
        std::printf("%s\n", t.name);
        std::fflush(stdout);
        t.run();
        if (failures != before) std::printf("  %d failure(s)\n", failures - before);
    }
    int e, r, c;
    jtsim_stub_counts(&e, &r, &c);
    CHECK(e == c, "every enqueued job cleaned up: %d enqueued, %d cleaned up", e, c);
    std::printf(failures ? "FAILED: %d\n" : "all cublasLt tests passed\n", failures);
    return failures ? 1 : 0;
}
