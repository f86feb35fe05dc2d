// Tests of the simulated NCCL (libnccl.so.2) through its public C API, on the simulated driver
// (libcuda.so.1) that scripts/cuda-sim builds. Ranks are forked processes that meet through unique ids
// the parent made before forking, each rank on its own stream; ncclCommInitAll runs its ranks in one
// process on JTSIM_DEVICES=2. References are computed here: reductions in rank order in the type's
// precision, 16-bit floats rounded by a search over their representable values (independent of the
// simulator's half.h), rounding ties checked against hand-computed bit patterns. Exits 1 on any failure.
// Built and run by run-nccl-test.sh.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

// ---- the APIs under test, declared from NVIDIA's documentation (handles opaque, enums as int) ----------

extern "C" {
typedef int CUresult;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned int flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, int device);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);
CUresult cuStreamCreate(CUstream* stream, unsigned int flags);
CUresult cuStreamSynchronize(CUstream stream);
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
CUresult cuStreamBeginCapture_v2(CUstream stream, int mode);
CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph);
CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags);
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream);
CUresult cuGraphExecDestroy(CUgraphExec exec);
CUresult cuGraphDestroy(CUgraph graph);
const char* jtsim_last_failure(void);  // the simulated driver's: the context's sticky error message

typedef struct {
    char internal[128];
} ncclUniqueId;
typedef struct ncclComm* ncclComm_t;
int ncclGetVersion(int* version);
int ncclGetUniqueId(ncclUniqueId* id);
int ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
int ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist);
int ncclCommDestroy(ncclComm_t comm);
int ncclCommAbort(ncclComm_t comm);
int ncclCommCount(const ncclComm_t comm, int* count);
int ncclCommCuDevice(const ncclComm_t comm, int* device);
int ncclCommUserRank(const ncclComm_t comm, int* rank);
int ncclCommGetAsyncError(ncclComm_t comm, int* error);
const char* ncclGetErrorString(int result);
const char* ncclGetLastError(ncclComm_t comm);
int ncclAllReduce(const void* send, void* recv, size_t count, int type, int op, ncclComm_t comm, CUstream stream);
int ncclBroadcast(const void* send, void* recv, size_t count, int type, int root, ncclComm_t comm, CUstream stream);
int ncclBcast(void* buff, size_t count, int type, int root, ncclComm_t comm, CUstream stream);
int ncclReduce(const void* send, void* recv, size_t count, int type, int op, int root, ncclComm_t comm, CUstream stream);
int ncclAllGather(const void* send, void* recv, size_t sendcount, int type, ncclComm_t comm, CUstream stream);
int ncclReduceScatter(const void* send, void* recv, size_t recvcount, int type, int op, ncclComm_t comm, CUstream stream);
int ncclSend(const void* send, size_t count, int type, int peer, ncclComm_t comm, CUstream stream);
int ncclRecv(void* recv, size_t count, int type, int peer, ncclComm_t comm, CUstream stream);
int ncclGroupStart(void);
int ncclGroupEnd(void);
}

namespace {

constexpr int OK = 0, UNHANDLED_CUDA = 1, SYSTEM = 2, INVALID_ARGUMENT = 4, INVALID_USAGE = 5, REMOTE = 6;
constexpr int INT8 = 0, UINT8 = 1, INT32 = 2, UINT32 = 3, INT64 = 4, UINT64 = 5, FLOAT16 = 6, FLOAT32 = 7, FLOAT64 = 8,
              BFLOAT16 = 9;
constexpr int SUM = 0, PROD = 1, MAX = 2, MIN = 3, AVG = 4;
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700, CUDA_ERROR_LAUNCH_FAILED = 719;
const char* const OP_NAMES[] = {"sum", "prod", "max", "min", "avg"};

// ---- checks -------------------------------------------------------------------------------------------

int failures = 0;
int my_rank = -1;  // in a rank's process

void check(bool ok, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void check(bool ok, const char* fmt, ...) {
    if (ok) return;
    failures++;
    char message[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    fprintf(stderr, "  [rank %d] FAIL: %s\n", my_rank, message);
}

bool contains(const char* text, const char* part) { return text != nullptr && strstr(text, part) != nullptr; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer: test data from (seed, rank, index)
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t data_bits(uint64_t seed, int rank, size_t i) { return mix(seed * 1000003 + uint64_t(rank) * 7919 + mix(i)); }

// ---- 16-bit floats, by search ----------------------------------------------------------------------------

double half_value(uint16_t h) {
    int exp = (h >> 10) & 31, man = h & 1023;
    double v = exp == 0 ? std::ldexp(man, -24) : std::ldexp(1024 + man, exp - 25);
    return (h & 0x8000) ? -v : v;
}

double bf16_value(uint16_t b) {
    uint32_t bits = uint32_t(b) << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

// The 16-bit pattern nearest to x (finite), ties to the even pattern, by binary search over the values of
// the patterns below `infinity` (increasing); +inf counts as `beyond` (the next power of two), as IEEE's
// overflow rule does.
struct Rounder {
    std::vector<double> value;  // of every pattern from 0 to infinity - 1
    uint16_t infinity;
    double beyond;

    Rounder(double (*decode)(uint16_t), uint16_t inf, double next) : value(inf), infinity(inf), beyond(next) {
        for (uint32_t h = 0; h < inf; h++) value[h] = decode(uint16_t(h));
    }
    uint16_t operator()(double x) const {
        uint16_t sign = std::signbit(x) ? 0x8000 : 0;
        double a = std::fabs(x);
        if (a >= beyond) return sign | infinity;
        uint32_t lo = 0, hi = infinity;  // value[lo] <= a < value[hi], value[infinity] taken as `beyond`
        while (hi - lo > 1) {
            uint32_t mid = (lo + hi) / 2;
            (value[mid] <= a ? lo : hi) = mid;
        }
        double below = a - value[lo], above = (hi == infinity ? beyond : value[hi]) - a;
        uint32_t pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
        return uint16_t(sign | pick);
    }
};

uint16_t to_half(double x) {
    static const Rounder rounder(half_value, 0x7c00, 65536.0);
    return rounder(x);
}

uint16_t to_bf16(double x) {
    static const Rounder rounder(bf16_value, 0x7f80, std::ldexp(1.0, 128));
    return rounder(x);
}

// ---- element types: storage, arithmetic type, test values ---------------------------------------------------

template <class S, int Type> struct IntType {
    using Storage = S;
    using Acc = S;
    static constexpr int type = Type;
    static S make(uint64_t bits) { return S(bits); }
    static S load(S v) { return v; }
    static S store(S a) { return a; }
};
template <class S, int Type> struct FloatType {
    using Storage = S;
    using Acc = S;
    static constexpr int type = Type;
    // In [-2, 2) with every mantissa bit used, so that sums round and their order shows.
    static S make(uint64_t bits) { return S(std::ldexp(double(int64_t(bits >> 8) - (int64_t(1) << 55)), -54)); }
    static S load(S v) { return v; }
    static S store(S a) { return a; }
};
struct HalfType {
    using Storage = uint16_t;
    using Acc = float;
    static constexpr int type = FLOAT16;
    static uint16_t make(uint64_t bits) { return uint16_t((bits & 0x83ff) | (9 + (bits >> 16) % 8) << 10); }
    static float load(uint16_t v) { return float(half_value(v)); }
    static uint16_t store(float a) { return to_half(a); }
};
struct BHalfType {
    using Storage = uint16_t;
    using Acc = float;
    static constexpr int type = BFLOAT16;
    static uint16_t make(uint64_t bits) { return uint16_t((bits & 0x807f) | (121 + (bits >> 16) % 8) << 7); }
    static float load(uint16_t v) { return float(bf16_value(v)); }
    static uint16_t store(float a) { return to_bf16(a); }
};

template <class A> A apply(int op, A x, A y) {
    if constexpr (std::is_integral_v<A>) {
        using U = std::make_unsigned_t<A>;
        switch (op) {
            case PROD: return A(U(x) * U(y));
            case MAX: return x > y ? x : y;
            case MIN: return x < y ? x : y;
            default: return A(U(x) + U(y));
        }
    } else {
        switch (op) {
            case PROD: return x * y;
            case MAX: return std::fmax(x, y);
            case MIN: return std::fmin(x, y);
            default: return x + y;
        }
    }
}

// in[0] op in[1] op ... in rank order, in the arithmetic type, stored once.
template <class T> std::vector<typename T::Storage> reference(int op, const std::vector<std::vector<typename T::Storage>>& in) {
    using A = typename T::Acc;
    int n = int(in.size());
    std::vector<typename T::Storage> out(in[0].size());
    for (size_t i = 0; i < out.size(); i++) {
        A acc = T::load(in[0][i]);
        for (int r = 1; r < n; r++) acc = apply(op, acc, T::load(in[r][i]));
        out[i] = T::store(op == AVG ? A(acc / A(n)) : acc);
    }
    return out;
}

template <class T> std::vector<typename T::Storage> values(uint64_t seed, int rank, size_t count) {
    std::vector<typename T::Storage> v(count);
    for (size_t i = 0; i < count; i++) v[i] = T::make(data_bits(seed, rank, i));
    return v;
}

template <class T> std::vector<std::vector<typename T::Storage>> all_values(uint64_t seed, int n, size_t count) {
    std::vector<std::vector<typename T::Storage>> v;
    for (int r = 0; r < n; r++) v.push_back(values<T>(seed, r, count));
    return v;
}

// Index of the first difference, or -1.
template <class S> long first_difference(const std::vector<S>& got, const std::vector<S>& want) {
    for (size_t i = 0; i < want.size(); i++) {
        if (memcmp(&got[i], &want[i], sizeof(S)) != 0) return long(i);
    }
    return -1;
}

// ---- a rank: its device, stream, buffers ---------------------------------------------------------------------

struct Rank {
    int rank = 0, n = 1;
    CUcontext ctx = nullptr;
    CUstream stream = nullptr;

    void open(int device) {
        check(cuInit(0) == 0, "cuInit");
        check(cuDevicePrimaryCtxRetain(&ctx, device) == 0, "cuDevicePrimaryCtxRetain(%d)", device);
        check(cuCtxSetCurrent(ctx) == 0, "cuCtxSetCurrent");
        check(cuStreamCreate(&stream, 0) == 0, "cuStreamCreate");
    }
    void* alloc(size_t bytes) {
        CUdeviceptr p = 0;
        check(cuMemAlloc_v2(&p, bytes) == 0, "cuMemAlloc(%zu)", bytes);
        return reinterpret_cast<void*>(p);
    }
    template <class S> void put(void* dst, const std::vector<S>& v) {
        check(cuMemcpyHtoDAsync_v2(CUdeviceptr(dst), v.data(), v.size() * sizeof(S), stream) == 0, "upload");
    }
    template <class S> std::vector<S> get(const void* src, size_t count) {  // into pageable memory: waits
        std::vector<S> v(count);
        CUresult r = cuMemcpyDtoHAsync_v2(v.data(), CUdeviceptr(src), count * sizeof(S), stream);
        check(r == 0, "download: CUDA error %d (%s)", r, jtsim_last_failure());
        return v;
    }
    CUresult sync() { return cuStreamSynchronize(stream); }
};

template <class S> void expect_same(const char* what, const std::vector<S>& got, const std::vector<S>& want) {
    long at = first_difference(got, want);
    check(at < 0, "%s: element %ld differs (of %zu)", what, at, want.size());
}

char* offset(void* p, size_t bytes) { return static_cast<char*>(p) + bytes; }

// ---- collectives over n forked ranks --------------------------------------------------------------------------

constexpr size_t BIG = size_t(16) << 20;  // bytes of each of the two working buffers

template <class T> void all_reduce_case(Rank& R, ncclComm_t comm, void* send, void* recv, int op, size_t count, bool in_place,
                                        uint64_t seed) {
    using S = typename T::Storage;
    auto in = all_values<T>(seed, R.n, count);
    R.put(send, in[R.rank]);
    void* out = in_place ? send : recv;
    int rc = ncclAllReduce(send, out, count, T::type, op, comm, R.stream);
    check(rc == OK, "ncclAllReduce(type %d, %s) returned %d", T::type, OP_NAMES[op], rc);
    std::string what = "all-reduce type " + std::to_string(T::type) + " " + OP_NAMES[op] + (in_place ? " in place" : "") +
                       " count " + std::to_string(count);
    expect_same(what.c_str(), R.get<S>(out, count), reference<T>(op, in));
}

template <class T> void all_reduce_every_op(Rank& R, ncclComm_t comm, void* send, void* recv, uint64_t seed) {
    for (int op = SUM; op <= AVG; op++) all_reduce_case<T>(R, comm, send, recv, op, 1001, false, seed + op);
}

// 16-bit sums are formed in float and rounded once: per-step rounding would give other bits.
void sixteen_bit_ties(Rank& R, ncclComm_t comm, void* send, void* recv) {
    struct Case {
        int type;
        uint16_t one, one_ulp, half_ulp;  // 1.0, 1.0 + ulp, ulp / 2
    } cases[] = {{FLOAT16, 0x3c00, 0x3c01, 0x1000}, {BFLOAT16, 0x3f80, 0x3f81, 0x3b80}};
    for (const Case& c : cases) {
        // element 0: 1 + ulp/2 (+ ulp/2 on rank 2): a tie to 1.0 with 2 ranks, exactly 1 + ulp with more.
        // element 1: (1 + ulp) + ulp/2: a tie, to the even 1 + 2 ulp.
        std::vector<uint16_t> mine(2, 0);
        if (R.rank == 0) mine = {c.one, c.one_ulp};
        if (R.rank == 1) mine = {c.half_ulp, c.half_ulp};
        if (R.rank == 2) mine[0] = c.half_ulp;
        R.put(send, mine);
        check(ncclAllReduce(send, recv, 2, c.type, SUM, comm, R.stream) == OK, "16-bit tie all-reduce");
        std::vector<uint16_t> want = {uint16_t(R.n == 2 ? c.one : c.one_ulp), uint16_t(c.one_ulp + 1)};
        std::vector<uint16_t> got = R.get<uint16_t>(recv, 2);
        check(got == want, "type %d ties: got %04x %04x, want %04x %04x", c.type, got[0], got[1], want[0], want[1]);
    }
}

void broadcasts(Rank& R, ncclComm_t comm, void* send, void* recv) {
    using I = IntType<int32_t, INT32>;
    using D = FloatType<double, FLOAT64>;
    int root = R.n - 1;
    auto ints = all_values<I>(11, R.n, 200003);
    R.put(send, ints[R.rank]);
    // A non-root's sendbuff is not read: null there.
    check(ncclBroadcast(R.rank == root ? send : nullptr, recv, 200003, INT32, root, comm, R.stream) == OK, "ncclBroadcast");
    expect_same("broadcast int32 from the last rank", R.get<int32_t>(recv, 200003), ints[root]);
    auto doubles = all_values<D>(12, R.n, 300000);  // 2.4 MB: three steps
    R.put(send, doubles[R.rank]);
    check(ncclBroadcast(send, send, 300000, FLOAT64, 1, comm, R.stream) == OK, "ncclBroadcast in place");
    expect_same("broadcast float64 in place from rank 1", R.get<double>(send, 300000), doubles[1]);
    auto floats = all_values<FloatType<float, FLOAT32>>(13, R.n, 1000);
    R.put(send, floats[R.rank]);
    check(ncclBcast(send, 1000, FLOAT32, 1, comm, R.stream) == OK, "ncclBcast");
    expect_same("ncclBcast float32 from rank 1", R.get<float>(send, 1000), floats[1]);
}

void reduces(Rank& R, ncclComm_t comm, void* send, void* recv) {
    using F = FloatType<float, FLOAT32>;
    using L = IntType<int64_t, INT64>;
    auto floats = all_values<F>(21, R.n, 5000);
    R.put(send, floats[R.rank]);
    // recvbuff may be null except on the root.
    check(ncclReduce(send, R.rank == 1 ? recv : nullptr, 5000, FLOAT32, SUM, 1, comm, R.stream) == OK, "ncclReduce");
    if (R.rank == 1) expect_same("reduce float32 sum to rank 1", R.get<float>(recv, 5000), reference<F>(SUM, floats));
    auto longs = all_values<L>(22, R.n, 700000);  // 5.6 MB: six steps
    R.put(send, longs[R.rank]);
    check(ncclReduce(send, send, 700000, INT64, MAX, 0, comm, R.stream) == OK, "ncclReduce in place");
    if (R.rank == 0) expect_same("reduce int64 max in place to rank 0", R.get<int64_t>(send, 700000), reference<L>(MAX, longs));
}

void gathers(Rank& R, ncclComm_t comm, void* send, void* recv) {
    using F = FloatType<float, FLOAT32>;
    using I = IntType<int32_t, INT32>;
    auto flatten = [](const auto& blocks) {
        std::vector<typename std::decay_t<decltype(blocks)>::value_type::value_type> all;
        for (const auto& b : blocks) all.insert(all.end(), b.begin(), b.end());
        return all;
    };
    auto floats = all_values<F>(31, R.n, 100000);
    R.put(send, floats[R.rank]);
    check(ncclAllGather(send, recv, 100000, FLOAT32, comm, R.stream) == OK, "ncclAllGather");
    expect_same("all-gather float32", R.get<float>(recv, 100000 * R.n), flatten(floats));
    // In place: sendbuff == recvbuff + rank * sendcount.
    const size_t count = 300001;
    auto ints = all_values<I>(32, R.n, count);
    char* mine = offset(recv, R.rank * count * 4);
    R.put(mine, ints[R.rank]);
    check(ncclAllGather(mine, recv, count, INT32, comm, R.stream) == OK, "ncclAllGather in place");
    expect_same("all-gather int32 in place", R.get<int32_t>(recv, count * R.n), flatten(ints));
}

void reduce_scatters(Rank& R, ncclComm_t comm, void* send, void* recv) {
    using F = FloatType<float, FLOAT32>;
    auto blocks_of = [&](const auto& full, size_t count) {  // rank r's block of every rank's input
        using S = typename std::decay_t<decltype(full)>::value_type::value_type;
        std::vector<std::vector<S>> mine;
        for (int r = 0; r < R.n; r++) mine.emplace_back(full[r].begin() + R.rank * count, full[r].begin() + (R.rank + 1) * count);
        return mine;
    };
    const size_t count = 100003;
    auto floats = all_values<F>(41, R.n, count * R.n);
    R.put(send, floats[R.rank]);
    check(ncclReduceScatter(send, recv, count, FLOAT32, SUM, comm, R.stream) == OK, "ncclReduceScatter");
    expect_same("reduce-scatter float32 sum", R.get<float>(recv, count), reference<F>(SUM, blocks_of(floats, count)));
    // In place: recvbuff == sendbuff + rank * recvcount; bf16 over several steps.
    const size_t count2 = 300007;
    auto halves = all_values<BHalfType>(42, R.n, count2 * R.n);
    R.put(send, halves[R.rank]);
    char* mine = offset(send, R.rank * count2 * 2);
    check(ncclReduceScatter(send, mine, count2, BFLOAT16, SUM, comm, R.stream) == OK, "ncclReduceScatter in place");
    expect_same("reduce-scatter bfloat16 sum in place", R.get<uint16_t>(mine, count2),
                reference<BHalfType>(SUM, blocks_of(halves, count2)));
}

// Each rank sends to the next and receives from the one before, in a group: messages larger than a
// channel's two halves, so that ranks must progress their send and receive together.
void ring(Rank& R, ncclComm_t comm, void* send, void* recv) {
    using F = FloatType<float, FLOAT32>;
    const size_t count = 400000;
    int next = (R.rank + 1) % R.n, before = (R.rank + R.n - 1) % R.n;
    auto floats = all_values<F>(51, R.n, count);
    R.put(send, floats[R.rank]);
    check(ncclGroupStart() == OK, "ncclGroupStart");
    check(ncclSend(send, count, FLOAT32, next, comm, R.stream) == OK, "ncclSend");
    check(ncclRecv(recv, count, FLOAT32, before, comm, R.stream) == OK, "ncclRecv");
    check(ncclGroupEnd() == OK, "ncclGroupEnd");
    expect_same("ring send/recv float32", R.get<float>(recv, count), floats[before]);
    // Without a group, rank 0 sends first and rank 1 receives first: small messages to and back.
    if (R.n == 2) {
        std::vector<int32_t> v = {R.rank * 10 + 1, R.rank * 10 + 2, R.rank * 10 + 3};
        R.put(send, v);
        int peer = 1 - R.rank;
        if (R.rank == 0) {
            check(ncclSend(send, 3, INT32, peer, comm, R.stream) == OK, "send");
            check(ncclRecv(recv, 3, INT32, peer, comm, R.stream) == OK, "recv");
        } else {
            check(ncclRecv(recv, 3, INT32, peer, comm, R.stream) == OK, "recv");
            check(ncclSend(send, 3, INT32, peer, comm, R.stream) == OK, "send");
        }
        std::vector<int32_t> want = {peer * 10 + 1, peer * 10 + 2, peer * 10 + 3};
        check(R.get<int32_t>(recv, 3) == want, "ungrouped send/recv pair");
    }
}

// 100 collectives in a row without a wait, alternating between two streams of one communicator: they must
// match across ranks in issue order.
void hundred_in_a_row(Rank& R, ncclComm_t comm, void* send, void* recv) {
    CUstream other = nullptr;
    check(cuStreamCreate(&other, 0) == 0, "second stream");
    std::vector<int32_t> mine(100);
    for (int k = 0; k < 100; k++) mine[k] = R.rank * 1000 + k;
    R.put(send, mine);
    check(R.sync() == 0, "upload");
    int32_t* s = static_cast<int32_t*>(send);
    int32_t* r = static_cast<int32_t*>(recv);
    for (int k = 0; k < 100; k++) {
        int rc = k % 2 == 0 ? ncclAllReduce(s + k, r + k, 1, INT32, SUM, comm, R.stream)
                            : ncclBroadcast(s + k, r + k, 1, INT32, k % R.n, comm, other);
        check(rc == OK, "collective %d returned %d", k, rc);
    }
    check(cuStreamSynchronize(other) == 0, "second stream's collectives: %s", jtsim_last_failure());
    std::vector<int32_t> got = R.get<int32_t>(recv, 100);
    for (int k = 0; k < 100; k++) {
        int32_t want = k % 2 == 0 ? 1000 * R.n * (R.n - 1) / 2 + R.n * k : (k % R.n) * 1000 + k;
        check(got[k] == want, "collective %d of 100: got %d, want %d", k, got[k], want);
    }
    // A group on two streams of one communicator: both results are there after both streams.
    std::vector<int32_t> one = {R.rank + 1};
    R.put(send, one);
    check(R.sync() == 0, "upload");
    check(ncclGroupStart() == OK, "ncclGroupStart");
    check(ncclAllReduce(s, r, 1, INT32, SUM, comm, R.stream) == OK, "grouped all-reduce");
    check(ncclAllGather(s, r + 1, 1, INT32, comm, other) == OK, "grouped all-gather");
    check(ncclGroupEnd() == OK, "ncclGroupEnd");
    check(cuStreamSynchronize(other) == 0, "second stream");
    got = R.get<int32_t>(recv, 1 + R.n);
    check(got[0] == R.n * (R.n + 1) / 2, "grouped all-reduce on the first stream: %d", got[0]);
    for (int q = 0; q < R.n; q++) check(got[1 + q] == q + 1, "grouped all-gather on the second stream: [%d] = %d", q, got[1 + q]);
}

// An in-place all-reduce captured into a CUDA graph runs at each launch: three launches sum three times.
// The graph outlives the communicator (destroyed after it).
void captured(Rank& R, ncclComm_t comm, void* send, CUgraph* graph, CUgraphExec* exec) {
    std::vector<int32_t> mine(16, R.rank + 1);
    R.put(send, mine);
    check(R.sync() == 0, "upload");
    check(cuStreamBeginCapture_v2(R.stream, 0) == 0, "cuStreamBeginCapture");
    check(ncclAllReduce(send, send, 16, INT32, SUM, comm, R.stream) == OK, "captured all-reduce");
    check(cuStreamEndCapture(R.stream, graph) == 0 && cuGraphInstantiateWithFlags(exec, *graph, 0) == 0, "graph");
    for (int i = 0; i < 3; i++) check(cuGraphLaunch(*exec, R.stream) == 0, "cuGraphLaunch");
    int32_t want = R.n * R.n * R.n * (R.n + 1) / 2;
    std::vector<int32_t> got = R.get<int32_t>(send, 16);
    check(got == std::vector<int32_t>(16, want), "three launches of a captured all-reduce: %d, want %d", got[0], want);
}

void timed_all_reduce(Rank& R, ncclComm_t comm, void* send, void* recv) {
    using F = FloatType<float, FLOAT32>;
    const size_t count = BIG / 4;
    auto floats = all_values<F>(61, R.n, count);
    R.put(send, floats[R.rank]);
    double best = 1e9;
    for (int i = 0; i < 3; i++) {  // the best of three: the host may be busy with other work
        check(ncclAllReduce(send, recv, 1, FLOAT32, SUM, comm, R.stream) == OK && R.sync() == 0, "warm-up");  // all ranks here
        auto t0 = std::chrono::steady_clock::now();
        check(ncclAllReduce(send, recv, count, FLOAT32, SUM, comm, R.stream) == OK, "16 MiB all-reduce");
        check(R.sync() == 0, "16 MiB all-reduce: %s", jtsim_last_failure());
        best = std::min(best, seconds_since(t0) * 1000);
    }
    expect_same("16 MiB float32 all-reduce", R.get<float>(recv, count), reference<F>(SUM, floats));
    if (R.rank == 0) printf("  all-reduce of 16 MiB float32 over %d ranks: %.1f ms (best of 3)\n", R.n, best);
}

void collectives(int rank, int n, const ncclUniqueId* ids) {
    Rank R;
    R.rank = rank, R.n = n;
    R.open(0);
    ncclComm_t comm = nullptr;
    int rc = ncclCommInitRank(&comm, n, ids[0], rank);
    check(rc == OK && comm != nullptr, "ncclCommInitRank returned %d: %s", rc, ncclGetLastError(nullptr));
    if (rc != OK) return;
    int count = 0, me = -1, device = -1;
    check(ncclCommCount(comm, &count) == OK && count == n, "ncclCommCount: %d", count);
    check(ncclCommUserRank(comm, &me) == OK && me == rank, "ncclCommUserRank: %d", me);
    check(ncclCommCuDevice(comm, &device) == OK && device == 0, "ncclCommCuDevice: %d", device);
    void* send = R.alloc(BIG);
    void* recv = R.alloc(BIG);

    all_reduce_every_op<IntType<int8_t, INT8>>(R, comm, send, recv, 100);
    all_reduce_every_op<IntType<uint8_t, UINT8>>(R, comm, send, recv, 200);
    all_reduce_every_op<IntType<int32_t, INT32>>(R, comm, send, recv, 300);
    all_reduce_every_op<IntType<uint32_t, UINT32>>(R, comm, send, recv, 400);
    all_reduce_every_op<IntType<int64_t, INT64>>(R, comm, send, recv, 500);
    all_reduce_every_op<IntType<uint64_t, UINT64>>(R, comm, send, recv, 600);
    all_reduce_every_op<HalfType>(R, comm, send, recv, 700);
    all_reduce_every_op<FloatType<float, FLOAT32>>(R, comm, send, recv, 800);
    all_reduce_every_op<FloatType<double, FLOAT64>>(R, comm, send, recv, 900);
    all_reduce_every_op<BHalfType>(R, comm, send, recv, 1000);
    all_reduce_case<FloatType<float, FLOAT32>>(R, comm, send, recv, SUM, 600000, false, 1100);  // three steps
    all_reduce_case<IntType<int32_t, INT32>>(R, comm, send, recv, SUM, 300001, true, 1200);
    all_reduce_case<HalfType>(R, comm, send, recv, AVG, 777777, true, 1300);
    sixteen_bit_ties(R, comm, send, recv);
    broadcasts(R, comm, send, recv);
    reduces(R, comm, send, recv);
    gathers(R, comm, send, recv);
    reduce_scatters(R, comm, send, recv);
    ring(R, comm, send, recv);
    hundred_in_a_row(R, comm, send, recv);
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    captured(R, comm, send, &graph, &exec);
    timed_all_reduce(R, comm, send, recv);

    int async = -1;
    check(ncclCommGetAsyncError(comm, &async) == OK && async == OK, "async error %d", async);
    check(ncclCommDestroy(comm) == OK, "ncclCommDestroy");
    check(cuGraphExecDestroy(exec) == 0 && cuGraphDestroy(graph) == 0, "the graph, after its communicator");
}

// ---- failures ----------------------------------------------------------------------------------------------

// Ranks that disagree on a collective's count: every rank fails at once (no timeout), naming both calls.
void mismatched_count(int rank, int n, const ncclUniqueId* ids) {
    Rank R;
    R.rank = rank, R.n = n;
    R.open(0);
    ncclComm_t comm = nullptr;
    check(ncclCommInitRank(&comm, n, ids[0], rank) == OK, "init");
    void* buf = R.alloc(4096);
    auto t0 = std::chrono::steady_clock::now();
    check(ncclAllReduce(buf, buf, rank == 0 ? 100 : 200, FLOAT32, SUM, comm, R.stream) == OK, "the call itself is valid");
    CUresult r = R.sync();
    check(r == CUDA_ERROR_LAUNCH_FAILED, "stream synchronize: %d, want %d", r, CUDA_ERROR_LAUNCH_FAILED);
    check(seconds_since(t0) < 10, "the mismatch took %.1f s (a timeout, not a detection)", seconds_since(t0));
    const char* message = jtsim_last_failure();
    std::string me = "on rank " + std::to_string(rank) + " of 2";
    check(contains(message, "ncclAllReduce(count 100, float32, sum)") && contains(message, "ncclAllReduce(count 200, float32, sum)") &&
              contains(message, me.c_str()),
          "message: %s", message);
    int async = -1;
    check(ncclCommGetAsyncError(comm, &async) == OK && async == INVALID_USAGE, "async error %d", async);
    check(contains(ncclGetLastError(comm), "disagree"), "ncclGetLastError: %s", ncclGetLastError(comm));
    check(ncclAllReduce(buf, buf, 10, FLOAT32, SUM, comm, R.stream) == INVALID_USAGE, "a call after the failure");
    check(ncclCommDestroy(comm) == OK, "destroy");
}

// A receive shorter than the send: the receiver names both sizes; the sender's next call fails too.
void mismatched_message(int rank, int n, const ncclUniqueId* ids) {
    Rank R;
    R.rank = rank, R.n = n;
    R.open(0);
    ncclComm_t comm = nullptr;
    check(ncclCommInitRank(&comm, n, ids[0], rank) == OK, "init");
    void* buf = R.alloc(4096);
    if (rank == 0) {
        check(ncclSend(buf, 100, FLOAT32, 1, comm, R.stream) == OK, "send");
        check(R.sync() == 0, "the send itself completes");
        check(ncclAllReduce(buf, buf, 1, FLOAT32, SUM, comm, R.stream) == OK, "all-reduce");
        check(R.sync() == CUDA_ERROR_LAUNCH_FAILED, "the sender's next collective fails");
        check(contains(jtsim_last_failure(), "rank 1 failed"), "message: %s", jtsim_last_failure());
    } else {
        check(ncclRecv(buf, 50, FLOAT32, 0, comm, R.stream) == OK, "recv");
        check(R.sync() == CUDA_ERROR_LAUNCH_FAILED, "the receive fails");
        const char* message = jtsim_last_failure();
        check(contains(message, "ncclRecv(count 50, float32, peer 0) on rank 1 of 2") && contains(message, "sent 100 x float32"),
              "message: %s", message);
    }
    int async = -1;
    check(ncclCommGetAsyncError(comm, &async) == OK && async == INVALID_USAGE, "async error %d", async);
    check(ncclCommDestroy(comm) == OK, "destroy");
}

// Ranks 0 and 1 of 3 all-reduce after the init while rank 2 does `lost` instead: the all-reduce fails with
// ncclRemoteError after between min_s and max_s seconds, and the failure says `why` (rank 0's may report rank 1's).
void without_rank_2(int rank, int n, const ncclUniqueId* ids, void (*lost)(), double min_s, double max_s, const char* why) {
    Rank R;
    R.rank = rank, R.n = n;
    R.open(0);
    ncclComm_t comm = nullptr;
    check(ncclCommInitRank(&comm, n, ids[0], rank) == OK, "init");
    if (rank == 2) {
        lost();
        _exit(failures ? 1 : 0);
    }
    void* buf = R.alloc(4096);
    auto t0 = std::chrono::steady_clock::now();
    check(ncclAllReduce(buf, buf, 1000, FLOAT32, SUM, comm, R.stream) == OK, "all-reduce");
    CUresult r = R.sync();
    double s = seconds_since(t0);
    check(r == CUDA_ERROR_LAUNCH_FAILED, "stream synchronize: %d", r);
    check(s > min_s && s < max_s, "failed after %.2f s, want %.1f to %.1f s", s, min_s, max_s);
    const char* message = jtsim_last_failure();
    std::string me = "ncclAllReduce(count 1000, float32, sum) on rank " + std::to_string(rank) + " of 3";
    check(contains(message, me.c_str()) && contains(message, why), "message: %s", message);
    int async = -1;
    check(ncclCommGetAsyncError(comm, &async) == OK && async == REMOTE, "async error %d", async);
    check(ncclCommDestroy(comm) == OK, "destroy");
}

// Rank 2 stays alive but never joins the all-reduce: the others' fails after the timeout (1 s here).
void early_exit(int rank, int n, const ncclUniqueId* ids) {
    without_rank_2(rank, n, ids, [] { sleep(4); }, 0.9, 15, "timed out after 1 s waiting for rank(s) 2");
}

// Rank 2 is killed (SIGKILL): the others' all-reduce fails at once, long before the timeout (30 s here), naming it,
// although its parent has not reaped it yet (a zombie).
void killed_rank(int rank, int n, const ncclUniqueId* ids) {
    without_rank_2(rank, n, ids, [] { raise(SIGKILL); }, 0, 10, "rank 2 (pid ");
}

// A rank nobody joins: ncclCommInitRank gives up after the timeout.
void nobody_joins(int, int, const ncclUniqueId* ids) {
    Rank R;
    R.open(0);
    ncclComm_t comm = reinterpret_cast<ncclComm_t>(1);
    auto t0 = std::chrono::steady_clock::now();
    int rc = ncclCommInitRank(&comm, 2, ids[0], 0);
    check(rc == SYSTEM && comm == nullptr, "ncclCommInitRank alone: %d", rc);
    check(seconds_since(t0) > 0.9 && seconds_since(t0) < 15, "gave up after %.2f s", seconds_since(t0));
    check(contains(ncclGetLastError(nullptr), "rank(s) 1 to join"), "ncclGetLastError: %s", ncclGetLastError(nullptr));
}

// Rank 0 aborts while its receive waits for a send that never comes: the abort returns at once, its stream
// carries on without an error, and rank 1's next collective fails at once with ncclRemoteError.
void abort_waiting(int rank, int n, const ncclUniqueId* ids) {
    Rank R;
    R.rank = rank, R.n = n;
    R.open(0);
    ncclComm_t comm = nullptr;
    check(ncclCommInitRank(&comm, n, ids[0], rank) == OK, "init");
    void* buf = R.alloc(4096);
    if (rank == 0) {
        check(ncclRecv(buf, 10, FLOAT32, 1, comm, R.stream) == OK, "recv");
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        auto t0 = std::chrono::steady_clock::now();
        check(ncclCommAbort(comm) == OK, "ncclCommAbort");
        check(seconds_since(t0) < 5, "the abort took %.1f s", seconds_since(t0));
        check(R.sync() == 0, "the aborted rank's stream: %s", jtsim_last_failure());
    } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        auto t0 = std::chrono::steady_clock::now();
        check(ncclAllReduce(buf, buf, 10, FLOAT32, SUM, comm, R.stream) == OK, "all-reduce");
        check(R.sync() == CUDA_ERROR_LAUNCH_FAILED, "rank 1's all-reduce fails");
        check(seconds_since(t0) < 5, "rank 1 failed after %.1f s", seconds_since(t0));
        check(contains(jtsim_last_failure(), "rank 0 aborted"), "message: %s", jtsim_last_failure());
        int async = -1;
        check(ncclCommGetAsyncError(comm, &async) == OK && async == REMOTE, "async error %d", async);
        check(ncclCommDestroy(comm) == OK, "destroy");
    }
}

// Invalid arguments answer at the call; an operand outside device memory fails the stream's context.
void bad_arguments(int, int, const ncclUniqueId* ids) {
    Rank R;
    R.open(0);
    int version = 0;
    check(ncclGetVersion(&version) == OK && version >= 22800, "ncclGetVersion: %d", version);
    check(strcmp(ncclGetErrorString(OK), "no error") == 0 && contains(ncclGetErrorString(REMOTE), "remote process") &&
              strcmp(ncclGetErrorString(99), "unknown result code") == 0,
          "ncclGetErrorString");
    check(ncclGetUniqueId(nullptr) == INVALID_ARGUMENT, "ncclGetUniqueId(NULL)");
    ncclComm_t comm = nullptr;
    ncclUniqueId zero;
    memset(&zero, 0, sizeof zero);
    check(ncclCommInitRank(nullptr, 1, ids[0], 0) == INVALID_ARGUMENT, "init: NULL comm");
    check(ncclCommInitRank(&comm, 0, ids[0], 0) == INVALID_ARGUMENT, "init: 0 ranks");
    check(ncclCommInitRank(&comm, 2, ids[0], 2) == INVALID_ARGUMENT, "init: rank 2 of 2");
    check(ncclCommInitRank(&comm, 2, ids[0], -1) == INVALID_ARGUMENT, "init: rank -1");
    check(ncclCommInitRank(&comm, 1, zero, 0) == INVALID_ARGUMENT, "init: an id not from ncclGetUniqueId");
    check(ncclGroupEnd() == INVALID_USAGE, "ncclGroupEnd without ncclGroupStart");

    check(ncclCommInitRank(&comm, 1, ids[0], 0) == OK, "a one-rank communicator");
    float* buf = static_cast<float*>(R.alloc(4096));
    float* out = buf + 512;
    std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    R.put(buf, v);
    check(ncclAllReduce(buf, out, 10, FLOAT32, AVG, comm, R.stream) == OK, "one-rank all-reduce");
    check(R.get<float>(out, 10) == v, "one rank: the all-reduce is a copy");

    const size_t huge = SIZE_MAX / 2;
    check(ncclAllReduce(buf, out, 10, FLOAT32, SUM, nullptr, R.stream) == INVALID_ARGUMENT, "NULL comm");
    check(ncclAllReduce(buf, out, 10, FLOAT32, SUM, reinterpret_cast<ncclComm_t>(buf), R.stream) == INVALID_ARGUMENT, "not a comm");
    check(ncclAllReduce(buf, out, 10, 10, SUM, comm, R.stream) == INVALID_ARGUMENT, "datatype 10 (fp8: not simulated)");
    check(ncclAllReduce(buf, out, 10, -1, SUM, comm, R.stream) == INVALID_ARGUMENT, "datatype -1");
    check(ncclAllReduce(buf, out, 10, FLOAT32, 5, comm, R.stream) == INVALID_ARGUMENT, "op 5");
    check(ncclAllReduce(buf, out, huge, FLOAT32, SUM, comm, R.stream) == INVALID_ARGUMENT, "count overflow");
    check(ncclReduceScatter(buf, out, huge, FLOAT64, SUM, comm, R.stream) == INVALID_ARGUMENT, "reduce-scatter count overflow");
    check(ncclBroadcast(buf, out, 10, FLOAT32, 1, comm, R.stream) == INVALID_ARGUMENT, "root 1 of 1");
    check(ncclReduce(buf, out, 10, FLOAT32, SUM, -1, comm, R.stream) == INVALID_ARGUMENT, "root -1");
    check(ncclSend(buf, 10, FLOAT32, 1, comm, R.stream) == INVALID_ARGUMENT, "peer 1 of 1");
    check(ncclRecv(out, 10, FLOAT32, -5, comm, R.stream) == INVALID_ARGUMENT, "peer -5");
    check(ncclAllReduce(nullptr, out, 10, FLOAT32, SUM, comm, R.stream) == INVALID_ARGUMENT, "NULL sendbuff");
    check(ncclAllReduce(buf, nullptr, 10, FLOAT32, SUM, comm, R.stream) == INVALID_ARGUMENT, "NULL recvbuff");
    check(contains(ncclGetLastError(nullptr), "recvbuff is NULL"), "ncclGetLastError: %s", ncclGetLastError(nullptr));
    check(ncclAllReduce(nullptr, nullptr, 0, FLOAT32, SUM, comm, R.stream) == OK, "count 0 with NULL buffers");
    int n = 0;
    check(ncclCommCount(nullptr, &n) == INVALID_ARGUMENT && ncclCommCount(comm, nullptr) == INVALID_ARGUMENT, "ncclCommCount");
    check(ncclCommDestroy(reinterpret_cast<ncclComm_t>(buf)) == INVALID_ARGUMENT, "destroy: not a comm");
    check(ncclCommDestroy(nullptr) == OK, "destroy(NULL)");
    // An invalid call in a group: ncclGroupEnd reports it and issues nothing of the group.
    check(ncclGroupStart() == OK, "ncclGroupStart");
    check(ncclAllReduce(buf, out, 10, FLOAT32, SUM, comm, R.stream) == OK, "valid call in the group");
    check(ncclAllReduce(buf, out, 10, 42, SUM, comm, R.stream) == INVALID_ARGUMENT, "invalid call in the group");
    check(ncclGroupEnd() == INVALID_ARGUMENT, "ncclGroupEnd after an invalid call");
    check(R.sync() == 0, "sync");
    int async = -1;
    check(ncclCommGetAsyncError(comm, &async) == OK && async == OK, "no async error yet: %d", async);

    // recvbuff past the end of its allocation: the call is accepted, the collective faults where it runs.
    check(ncclAllReduce(buf, buf + 1020, 10, FLOAT32, SUM, comm, R.stream) == OK, "out-of-range recvbuff is enqueued");
    CUresult r = R.sync();
    check(r == CUDA_ERROR_ILLEGAL_ADDRESS, "out-of-range recvbuff: CUDA error %d", r);
    check(contains(jtsim_last_failure(), "ncclAllReduce(count 10, float32, sum) on rank 0 of 1: recvbuff"), "message: %s",
          jtsim_last_failure());
    check(ncclCommGetAsyncError(comm, &async) == OK && async == UNHANDLED_CUDA, "async error %d", async);
    check(ncclCommDestroy(comm) == OK, "destroy");
}

// ---- one process, two simulated devices ---------------------------------------------------------------------------

void init_all(int, int, const ncclUniqueId* ids) {
    check(cuInit(0) == 0, "cuInit");
    ncclComm_t comms[2] = {nullptr, nullptr};
    int duplicate[2] = {0, 0}, missing[2] = {0, 7};
    check(ncclCommInitAll(comms, 2, duplicate) == INVALID_USAGE, "ncclCommInitAll: duplicate device");
    check(ncclCommInitAll(comms, 2, missing) == INVALID_ARGUMENT, "ncclCommInitAll: device 7 of 2");
    check(ncclCommInitAll(comms, 2, nullptr) == OK, "ncclCommInitAll: %s", ncclGetLastError(nullptr));
    Rank R[2];
    void *send[2], *recv[2];
    for (int i = 0; i < 2; i++) {
        int device = -1, rank = -1;
        check(ncclCommCuDevice(comms[i], &device) == OK && device == i, "comm %d: device %d", i, device);
        check(ncclCommUserRank(comms[i], &rank) == OK && rank == i, "comm %d: rank %d", i, rank);
        R[i].rank = i, R[i].n = 2;
        R[i].open(i);
        send[i] = R[i].alloc(4 << 20);
        recv[i] = R[i].alloc(4 << 20);
    }
    using F = FloatType<float, FLOAT32>;
    const size_t count = 500000;
    auto floats = all_values<F>(71, 2, count);
    for (int i = 0; i < 2; i++) {
        cuCtxSetCurrent(R[i].ctx);
        R[i].put(send[i], floats[i]);
    }
    // One thread drives both ranks: group calls, each enqueued on its device's stream (any current context).
    check(ncclGroupStart() == OK, "ncclGroupStart");
    for (int i = 0; i < 2; i++) {
        check(ncclAllReduce(send[i], recv[i], count, FLOAT32, SUM, comms[i], R[i].stream) == OK, "all-reduce %d", i);
    }
    check(ncclGroupEnd() == OK, "ncclGroupEnd");
    for (int i = 0; i < 2; i++) {
        cuCtxSetCurrent(R[i].ctx);
        expect_same("ncclCommInitAll all-reduce", R[i].get<float>(recv[i], count), reference<F>(SUM, floats));
    }
    check(ncclGroupStart() == OK, "ncclGroupStart");
    for (int i = 0; i < 2; i++) {
        check(ncclSend(send[i], count, FLOAT32, 1 - i, comms[i], R[i].stream) == OK, "send %d", i);
        check(ncclRecv(recv[i], count, FLOAT32, 1 - i, comms[i], R[i].stream) == OK, "recv %d", i);
    }
    check(ncclGroupEnd() == OK, "ncclGroupEnd");
    for (int i = 0; i < 2; i++) {
        cuCtxSetCurrent(R[i].ctx);
        expect_same("ncclCommInitAll send/recv", R[i].get<float>(recv[i], count), floats[1 - i]);
        check(ncclCommDestroy(comms[i]) == OK, "destroy %d", i);
    }
    // ncclCommInitRank of both ranks from one thread, completed by ncclGroupEnd.
    check(ncclGroupStart() == OK, "ncclGroupStart");
    for (int i = 0; i < 2; i++) {
        cuCtxSetCurrent(R[i].ctx);
        check(ncclCommInitRank(&comms[i], 2, ids[0], i) == OK, "grouped ncclCommInitRank %d", i);
    }
    check(ncclGroupEnd() == OK, "ncclGroupEnd of the inits: %s", ncclGetLastError(nullptr));
    check(ncclGroupStart() == OK, "ncclGroupStart");
    for (int i = 0; i < 2; i++) check(ncclBroadcast(send[i], recv[i], count, FLOAT32, 1, comms[i], R[i].stream) == OK, "bcast %d", i);
    check(ncclGroupEnd() == OK, "ncclGroupEnd");
    for (int i = 0; i < 2; i++) {
        int device = -1;
        check(ncclCommCuDevice(comms[i], &device) == OK && device == i, "grouped init: comm %d on device %d", i, device);
        cuCtxSetCurrent(R[i].ctx);
        expect_same("grouped init, broadcast from rank 1", R[i].get<float>(recv[i], count), floats[1]);
        check(ncclCommDestroy(comms[i]) == OK, "destroy %d", i);
    }
}

// ---- the parent: runs each scenario in forked ranks -----------------------------------------------------------------

struct Scenario {
    const char* name;
    int processes;
    void (*run)(int rank, int n, const ncclUniqueId* ids);
    const char* timeout;  // JTSIM_NCCL_TIMEOUT_S
    const char* devices;  // JTSIM_DEVICES
    bool last_rank_killed = false;  // the last rank ends by SIGKILL on purpose
};

std::set<std::string> shm_segments() {
    std::set<std::string> names;
    if (DIR* d = opendir("/dev/shm")) {
        while (dirent* e = readdir(d)) {
            if (strncmp(e->d_name, "jtsim-nccl-", 11) == 0) names.insert(e->d_name);
        }
        closedir(d);
    }
    return names;
}

bool run(const Scenario& s, std::set<int>* pids) {
    ncclUniqueId ids[2];
    for (ncclUniqueId& id : ids) {
        if (ncclGetUniqueId(&id) != OK) return false;
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<pid_t> children;
    fflush(stdout);
    for (int r = 0; r < s.processes; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            setenv("JTSIM_NCCL_TIMEOUT_S", s.timeout, 1);
            setenv("JTSIM_DEVICES", s.devices, 1);
            alarm(90);  // a hang fails the test instead of stalling it
            my_rank = r;
            s.run(r, s.processes, ids);
            fflush(stdout);
            _exit(failures != 0 ? 1 : 0);
        }
        children.push_back(pid);
        pids->insert(pid);
    }
    bool ok = true;
    for (pid_t pid : children) {
        int status = 0;
        waitpid(pid, &status, 0);
        bool expected_kill = s.last_rank_killed && pid == children.back() && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        if (!expected_kill && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
            ok = false;
            if (WIFSIGNALED(status)) fprintf(stderr, "  %s: a rank died of signal %d\n", s.name, WTERMSIG(status));
        }
    }
    printf("%s %s (%.1f s)\n", ok ? "ok  " : "FAIL", s.name, seconds_since(t0));
    return ok;
}

}  // namespace

// With an argument, runs the scenarios whose name contains it.
int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const Scenario scenarios[] = {
        {"collectives, 2 ranks", 2, collectives, "30", "1"},
        {"collectives, 4 ranks", 4, collectives, "30", "1"},
        {"ncclCommInitAll and grouped inits on 2 devices, one thread", 1, init_all, "30", "2"},
        {"ranks disagreeing on a count", 2, mismatched_count, "30", "1"},
        {"a receive shorter than its send", 2, mismatched_message, "30", "1"},
        {"a rank that never joins a collective (1 s timeout)", 3, early_exit, "1", "1"},
        {"a rank killed after the init", 3, killed_rank, "30", "1", true},
        {"a rank nobody joins (1 s timeout)", 1, nobody_joins, "1", "1"},
        {"ncclCommAbort of a waiting rank", 2, abort_waiting, "30", "1"},
        {"bad arguments, out-of-range buffers", 1, bad_arguments, "30", "1"},
    };
    std::set<std::string> before = shm_segments();
    std::set<int> pids = {getpid()};
    int failed = 0;
    for (const Scenario& s : scenarios) {
        if (argc < 2 || strstr(s.name, argv[1]) != nullptr) failed += run(s, &pids) ? 0 : 1;
    }
    // Every segment was unlinked: none named after this process or its ranks is left.
    for (const std::string& name : shm_segments()) {
        int pid = atoi(name.c_str() + 11);
        if (before.count(name) == 0 && pids.count(pid) != 0) {
            fprintf(stderr, "FAIL: /dev/shm/%s was left behind\n", name.c_str());
            failed++;
        }
    }
    printf(failed == 0 ? "nccl_test: all passed\n" : "nccl_test: %d failed\n", failed);
    return failed == 0 ? 0 : 1;
}
