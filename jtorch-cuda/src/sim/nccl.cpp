// The CUDA simulator's NCCL (libnccl.so.2): NCCL 2.28's C ABI for communicators, collectives and
// point-to-point calls between ranks that are processes on one machine (or simulated devices of one
// process, ncclCommInitAll), on the simulated device memory of driver.cpp.
//
// - Rendezvous: an ncclUniqueId names a POSIX shared-memory segment (/dev/shm/jtsim-nccl-<pid>-<random>).
//   Every rank's ncclCommInitRank creates or opens it, claims its rank there and waits until all ranks
//   have; the name is then unlinked, so the segment goes with the last process that maps it, even one
//   that crashes. Nothing is created by ncclGetUniqueId itself.
// - Transport: the data goes through the segment. Each rank has a collective slot of two halves; a
//   collective runs in steps, at each of which every rank writes its piece into one half, waits until
//   every rank has written that step (per-rank step counters) and reads the pieces it needs. Reductions
//   are formed by each rank from the same pieces in rank order, so every rank gets the same bits. Each
//   ordered pair of ranks has a two-half channel for ncclSend/ncclRecv. Waits sleep on a futex there.
// - Streams: each call is enqueued on its stream (jtsim.h) and runs on the stream's worker, ordered with
//   the kernels and copies there; the calls of one communicator run one at a time in issue order, as
//   NCCL's do, whatever streams they are on. Calls between ncclGroupStart and ncclGroupEnd are enqueued at
//   ncclGroupEnd as one piece of work per communicator, whose sends and receives progress together.
// - Failures: a wait gives up after JTSIM_NCCL_TIMEOUT_S seconds (default 300) without progress, and at once
//   when a peer's process has ended (its pid, recorded at init, is probed while waiting). A rank
//   whose call fails (a timeout, ranks disagreeing on a collective, an operand outside device memory)
//   fails its context (jtsim_fail) with a message naming the call, the rank and the sizes, records the
//   error for ncclCommGetAsyncError and marks the segment failed, so that the other ranks stop waiting and
//   fail too. NCCL_DEBUG=WARN prints the errors of calls.
//
// Numerics: sums, products, min and max in rank order in the type's precision (f16 and bf16 in float,
// rounded once to nearest even); ncclAvg divides the sum by the rank count (integer division for
// integers); min/max of floats ignore a NaN operand as fmin/fmax do. Not simulated: fp8 types,
// ncclCommInitRankConfig and non-blocking communicators, ncclCommSplit, user-defined reduction ops.

#include "cuda_types.h"
#include "half.h"
#include "jtsim.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

// ---- the CUDA driver calls this library makes (libcuda.so.1, the simulated one) -------------------

extern "C" {
CUresult cuInit(unsigned int flags);
CUresult cuCtxGetCurrent(CUcontext* ctx);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetDevice(CUdevice* device);
CUresult cuDeviceGetCount(int* count);
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device);
CUresult cuEventCreate(CUevent* event, unsigned int flags);
CUresult cuEventRecord(CUevent event, CUstream stream);
CUresult cuEventDestroy_v2(CUevent event);
CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags);
CUresult cuStreamIsCapturing(CUstream stream, int* status);
}

namespace {

// ---- NCCL's numbers (nccl.h) ---------------------------------------------------------------------

enum Result {
    SUCCESS = 0,
    UNHANDLED_CUDA_ERROR = 1,
    SYSTEM_ERROR = 2,
    INTERNAL_ERROR = 3,
    INVALID_ARGUMENT = 4,
    INVALID_USAGE = 5,
    REMOTE_ERROR = 6,
    IN_PROGRESS = 7,
};

enum DataType { INT8 = 0, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16, NUM_TYPES };
enum RedOp { SUM = 0, PROD, MAX, MIN, AVG, NUM_OPS };

constexpr int VERSION = 22805;  // 2.28.5: NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z from 2.9 on
constexpr size_t UNIQUE_ID_BYTES = 128;

const char* const TYPE_NAMES[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", "bfloat16"};
const size_t TYPE_SIZES[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
const char* const OP_NAMES[] = {"sum", "prod", "max", "min", "avg"};

enum Kind { ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, SEND, RECV };
const char* const KIND_NAMES[] = {"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter",
                                  "ncclSend", "ncclRecv"};

bool reduces(int kind) { return kind == ALL_REDUCE || kind == REDUCE || kind == REDUCE_SCATTER; }
bool rooted(int kind) { return kind == BROADCAST || kind == REDUCE; }
bool point_to_point(int kind) { return kind == SEND || kind == RECV; }

// ---- errors --------------------------------------------------------------------------------------------

std::mutex& error_mu = *new std::mutex;      // leaked, as the driver's: used while the process exits
std::string& last_error = *new std::string;  // the latest error of any call or collective, for ncclGetLastError

void set_last_error(const std::string& message) {
    {
        std::lock_guard<std::mutex> lock(error_mu);
        last_error = message;
    }
    const char* debug = getenv("NCCL_DEBUG");
    if (debug != nullptr && strcasecmp(debug, "VERSION") != 0) fprintf(stderr, "jtorch NCCL simulator: WARN %s\n", message.c_str());
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    char buffer[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(buffer, sizeof buffer, fmt, args);
    va_end(args);
    return buffer;
}

// Returns `code` after recording `message` as the last error.
int refuse(int code, const std::string& message) {
    set_last_error(message);
    return code;
}

double timeout_seconds() {
    const char* s = getenv("JTSIM_NCCL_TIMEOUT_S");
    double v = s != nullptr ? atof(s) : 0;
    return v > 0 ? v : 300;
}

using Clock = std::chrono::steady_clock;

// ---- reductions --------------------------------------------------------------------------------------------

template <class T> struct Plain {
    using Storage = T;
    using Acc = T;
    static T load(T v) { return v; }
    static T store(T a) { return a; }
};
struct Half {
    using Storage = uint16_t;
    using Acc = float;
    static float load(uint16_t v) { return jtsim16::half_to_float(v); }
    static uint16_t store(float a) { return jtsim16::float_to_half(a); }
};
struct BHalf {
    using Storage = uint16_t;
    using Acc = float;
    static float load(uint16_t v) { return jtsim16::bf16_to_float(v); }
    static uint16_t store(float a) { return jtsim16::float_to_bf16(a); }
};

// Integers wrap, as on the GPU (in unsigned arithmetic: signed overflow is undefined in C++).
template <int Op, class A> A combine(A x, A y) {
    if constexpr (std::is_integral_v<A>) {
        using U = std::make_unsigned_t<A>;
        if constexpr (Op == SUM || Op == AVG) return A(U(x) + U(y));
        if constexpr (Op == PROD) return A(U(x) * U(y));
        if constexpr (Op == MAX) return std::max(x, y);
        if constexpr (Op == MIN) return std::min(x, y);
    } else {
        if constexpr (Op == SUM || Op == AVG) return x + y;
        if constexpr (Op == PROD) return x * y;
        if constexpr (Op == MAX) return std::fmax(x, y);
        if constexpr (Op == MIN) return std::fmin(x, y);
    }
}

// out[0, m) = in[0] op in[1] op ... op in[n - 1], left to right, in the accumulation type, stored once.
using Reducer = void (*)(char* out, const char* const* in, int n, size_t m);

template <class Ty, int Op> void reduce_pieces(char* out, const char* const* in, int n, size_t m) {
    using S = typename Ty::Storage;
    using A = typename Ty::Acc;
    static thread_local std::vector<A> acc;  // the stream worker's, reused
    acc.resize(m);
    const S* first = reinterpret_cast<const S*>(in[0]);
    for (size_t i = 0; i < m; i++) acc[i] = Ty::load(first[i]);
    for (int r = 1; r < n; r++) {
        const S* x = reinterpret_cast<const S*>(in[r]);
        for (size_t i = 0; i < m; i++) acc[i] = combine<Op>(acc[i], Ty::load(x[i]));
    }
    S* o = reinterpret_cast<S*>(out);
    for (size_t i = 0; i < m; i++) o[i] = Ty::store(Op == AVG ? A(acc[i] / A(n)) : acc[i]);
}

template <class Ty> Reducer reducer_for_op(int op) {
    switch (op) {
        case SUM: return reduce_pieces<Ty, SUM>;
        case PROD: return reduce_pieces<Ty, PROD>;
        case MAX: return reduce_pieces<Ty, MAX>;
        case MIN: return reduce_pieces<Ty, MIN>;
        default: return reduce_pieces<Ty, AVG>;
    }
}

Reducer reducer(int dtype, int op) {
    switch (dtype) {
        case INT8: return reducer_for_op<Plain<int8_t>>(op);
        case UINT8: return reducer_for_op<Plain<uint8_t>>(op);
        case INT32: return reducer_for_op<Plain<int32_t>>(op);
        case UINT32: return reducer_for_op<Plain<uint32_t>>(op);
        case INT64: return reducer_for_op<Plain<int64_t>>(op);
        case UINT64: return reducer_for_op<Plain<uint64_t>>(op);
        case FLOAT16: return reducer_for_op<Half>(op);
        case FLOAT32: return reducer_for_op<Plain<float>>(op);
        case FLOAT64: return reducer_for_op<Plain<double>>(op);
        default: return reducer_for_op<BHalf>(op);
    }
}

// ---- the shared segment ---------------------------------------------------------------------------------
// Plain integers read and written with the __atomic builtins, which are address-free on x86-64 and so
// work between processes (std::atomic objects would need constructing in the zeroed segment).

template <class T> T load(const T* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
template <class T> void store(T* p, T v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
template <class T> T compare_exchange(T* p, T expected, T desired) {  // returns the old value
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return expected;
}

struct Header {
    uint32_t epoch;        // futex word: bumped after every change another rank may be waiting for
    int32_t nranks;        // set by the first rank to arrive
    int32_t joined;        // ranks that claimed their slot
    int32_t failing;       // claimed by the first rank to fail, which then writes `failure`, then `failed`
    int32_t failed;        // 0, or the ncclResult_t of that failure: every wait gives up
    int32_t failed_rank;
    char failure[1024];
};

struct alignas(64) RankState {
    int32_t present;
    int32_t pid;
    uint64_t step;  // collective steps this rank has published
};

struct alignas(64) ChannelState {  // ncclSend/ncclRecv from one rank to another, in chunks
    uint64_t posted;               // chunks the sender has written
    uint64_t taken;                // chunks the receiver has read
};

struct Desc {  // what a rank is doing at a collective step: all ranks must agree
    uint64_t seq, count;
    int32_t kind, dtype, op, root;
};

struct ChunkHeader {  // heads each chunk of a channel
    uint64_t bytes;   // of the whole message
    uint64_t index;   // of the chunk in it
    int32_t dtype;
};

constexpr size_t HALF_HEADER = 64;
static_assert(sizeof(Desc) <= HALF_HEADER && sizeof(ChunkHeader) <= HALF_HEADER, "half headers");
static_assert(sizeof(Header) <= 4096, "segment header");

// Where everything lies in a segment for n ranks. A collective half holds 1 MiB; a channel half
// max(64 KiB, 1 MiB / n), so that the segment grows as 4n MiB (16 MiB for 4 ranks), reserved at init.
struct Layout {
    size_t coll_half = 0, p2p_half = 0;
    size_t ranks_at = 0, channels_at = 0, coll_at = 0, p2p_at = 0, total = 0;

    explicit Layout(int n) {
        coll_half = size_t(1) << 20;
        p2p_half = std::max<size_t>(64 << 10, ((size_t(1) << 20) / n) & ~size_t(63));
        ranks_at = 4096;
        channels_at = ranks_at + sizeof(RankState) * n;
        coll_at = round_up(channels_at + sizeof(ChannelState) * n * n);
        p2p_at = coll_at + size_t(n) * 2 * (HALF_HEADER + coll_half);
        total = p2p_at + size_t(n) * n * 2 * (HALF_HEADER + p2p_half);
    }
    static size_t round_up(size_t v) { return (v + 4095) & ~size_t(4095); }
};

void futex_wake(uint32_t* word) {
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void futex_wait(uint32_t* word, uint32_t seen, double seconds) {
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, nullptr, 0);
}

// ncclUniqueId's bytes: a magic string, then the segment's name.
struct IdBody {
    char magic[16];
    char name[64];
};
const char ID_MAGIC[16] = "jtsim-nccl-id1";
static_assert(sizeof(IdBody) <= UNIQUE_ID_BYTES, "unique id");

uint64_t random64() {
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
        close(fd);
    }
    static std::atomic<uint64_t> counter{0};
    return v ^ (uint64_t)Clock::now().time_since_epoch().count() ^ (++counter << 48);
}

// ---- communicators ---------------------------------------------------------------------------------------

// One call as issued: a collective or a send or receive.
struct Comm;
struct Task {
    int kind;
    std::shared_ptr<Comm> comm;
    const void* send;
    void* recv;
    size_t count;
    int dtype, op, root;  // root: the peer of a send or receive
    CUstream stream;
};

std::string describe(int kind, size_t count, int dtype, int op, int root) {
    if (kind < ALL_REDUCE || kind > RECV) return "an unknown call";
    std::string s = KIND_NAMES[kind];
    s += format("(%s %zu, %s", kind == ALL_GATHER ? "sendcount" : kind == REDUCE_SCATTER ? "recvcount" : "count", count,
                dtype >= 0 && dtype < NUM_TYPES ? TYPE_NAMES[dtype] : "?");
    if (reduces(kind)) s += format(", %s", op >= 0 && op < NUM_OPS ? OP_NAMES[op] : "?");
    if (rooted(kind)) s += format(", root %d", root);
    if (point_to_point(kind)) s += format(", peer %d", root);
    return s + ")";
}

std::string describe(const Task& t) { return describe(t.kind, t.count, t.dtype, t.op, t.root); }

constexpr int ABORTED = -1;  // a wait's answer when this rank's communicator was aborted: no error to report

struct Comm {
    int rank = 0, nranks = 0, device = 0;
    CUcontext ctx = nullptr;
    bool retained = false;
    std::string name;   // the segment's, until every rank has joined and it is unlinked
    Layout layout{1};
    char* base = nullptr;
    double timeout = 300;

    std::atomic<bool> aborted{false}, destroyed{false};

    // Issue order and completion of this communicator's work (non-captured): work runs when its ticket
    // comes up, and the turn passes when it finishes (or is dropped by a failed context).
    std::mutex mu;
    std::condition_variable cv;
    int64_t issued = 0, next_turn = 0, pending = 0;
    std::set<int64_t> finished;
    int async_error = SUCCESS;
    std::string async_message;

    // The protocol's position, touched only by the work running under run_mu.
    std::mutex run_mu;
    uint64_t step = 0, coll_seq = 0;
    std::vector<uint64_t> sent, received;  // chunks on the channels to and from each peer

    // The last owner may be the cleanup of captured work, which the driver runs under its own lock when a
    // graph is destroyed: so no driver call here (release_context is called by the host-side paths).
    ~Comm() {
        if (base != nullptr) munmap(base, layout.total);
    }

    void release_context() {
        if (retained) cuDevicePrimaryCtxRelease_v2(device);
        retained = false;
    }

    Header* header() const { return reinterpret_cast<Header*>(base); }
    RankState* rank_state(int r) const { return reinterpret_cast<RankState*>(base + layout.ranks_at) + r; }
    ChannelState* channel(int from, int to) const {
        return reinterpret_cast<ChannelState*>(base + layout.channels_at) + (size_t(from) * nranks + to);
    }
    char* coll_half(int r, uint64_t s) const {
        return base + layout.coll_at + (size_t(r) * 2 + s % 2) * (HALF_HEADER + layout.coll_half);
    }
    char* p2p_half(int from, int to, uint64_t chunk) const {
        return base + layout.p2p_at + ((size_t(from) * nranks + to) * 2 + chunk % 2) * (HALF_HEADER + layout.p2p_half);
    }

    void wake() const {
        __atomic_add_fetch(&header()->epoch, 1, __ATOMIC_SEQ_CST);
        futex_wake(&header()->epoch);
    }

    // Marks the segment failed (once, by the first rank to fail) so that every rank's waits give up.
    void announce(int code, const std::string& message) const {
        Header* h = header();
        if (compare_exchange(&h->failing, 0, 1) != 0) return;
        snprintf(h->failure, sizeof h->failure, "%s", message.c_str());
        store(&h->failed_rank, rank);
        store(&h->failed, code);
        wake();
    }

    // A rank whose process has ended (exited, crashed, killed) and so will never progress, or -1. Real NCCL sees
    // the peer's connections close and fails with ncclRemoteError; here the pid each rank recorded at init is
    // probed (a zombie, ended but not yet reaped by its parent, counts as ended).
    int exited_peer() const {
        int self = (int)getpid();
        for (int r = 0; r < nranks; r++) {
            int pid = load(&rank_state(r)->pid);
            if (pid <= 0 || pid == self) continue;
            if (kill(pid, 0) != 0 && errno == ESRCH) return r;
            char path[64], stat[256] = {0};
            snprintf(path, sizeof path, "/proc/%d/stat", pid);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;
            ssize_t n = read(fd, stat, sizeof stat - 1);
            close(fd);
            const char* paren = n > 0 ? strrchr(stat, ')') : nullptr;  // "pid (comm) S ...": the state follows the name
            if (paren != nullptr && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X')) return r;
        }
        return -1;
    }

    enum Poll { IDLE, PROGRESS, DONE };

    // Calls poll until it says DONE. Gives up (and says why in *why) when a rank announced a failure, this
    // communicator is aborted, or nothing progressed for the timeout; `waiting_for` names what it waits
    // for in that message.
    template <class P, class W> int wait(P poll, W waiting_for, std::string* why) {
        Header* h = header();
        Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
        for (;;) {
            uint32_t seen = __atomic_load_n(&h->epoch, __ATOMIC_SEQ_CST);
            Poll p = poll();
            if (p == DONE) return SUCCESS;
            Clock::time_point now = Clock::now();
            if (p == PROGRESS) {  // a failure elsewhere does not stop what can still go through
                deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
                continue;
            }
            if (aborted) return ABORTED;
            if (int code = load(&h->failed)) {
                *why = format("rank %d failed: %s", load(&h->failed_rank), h->failure);
                return code == INVALID_USAGE ? INVALID_USAGE : REMOTE_ERROR;
            }
            int gone = exited_peer();
            if (gone >= 0) {
                *why = format("rank %d (pid %d) exited while this rank waited for %s", gone, (int)load(&rank_state(gone)->pid),
                              waiting_for().c_str());
                announce(REMOTE_ERROR, *why);
                return REMOTE_ERROR;
            }
            if (now >= deadline) {
                *why = format("timed out after %g s waiting for %s (JTSIM_NCCL_TIMEOUT_S)", timeout, waiting_for().c_str());
                return REMOTE_ERROR;
            }
            // Until the epoch moves, and at most 0.25 s, so that the deadline and an abort are seen regardless.
            futex_wait(&h->epoch, seen, std::min(0.25, std::chrono::duration<double>(deadline - now).count()));
        }
    }

    // ---- rendezvous ----

    // Waits until every rank has claimed its slot, then unlinks the segment's name.
    int await_joined(std::string* why) {
        Header* h = header();
        int rc = wait([&] { return load(&h->joined) >= nranks ? DONE : IDLE; },
                      [&] {
                          std::string missing;
                          for (int r = 0; r < nranks; r++) {
                              if (!load(&rank_state(r)->present)) missing += format("%s%d", missing.empty() ? "" : ", ", r);
                          }
                          return "rank(s) " + missing + " to join";
                      },
                      why);
        if (rc != SUCCESS) {
            if (rc == REMOTE_ERROR) rc = SYSTEM_ERROR;  // an init that could not complete
            announce(rc, format("ncclCommInitRank on rank %d of %d: %s", rank, nranks, why->c_str()));
        }
        shm_unlink(name.c_str());  // every rank has mapped it (or the init failed): the name is no longer needed
        return rc;
    }

    // ---- collectives ----

    // One collective as `steps` exchanges of at most `per` elements (per rank): at each, this rank writes
    // its piece with publish(at, m, half) into its half for the step, waits until every rank has written
    // the step, checks that all ranks are doing the same collective, and reads with consume(at, m, halves).
    template <class Publish, class Consume>
    int exchange(const Desc& d, size_t per, Publish publish, Consume consume, std::string* why) {
        size_t total = std::max<size_t>(1, (d.count + per - 1) / per);
        std::vector<const char*> halves(nranks);
        for (size_t k = 0; k < total; k++) {
            size_t at = k * per, m = std::min(per, size_t(d.count) - at);
            char* mine = coll_half(rank, step);
            memcpy(mine, &d, sizeof d);
            publish(at, m, mine + HALF_HEADER);
            store(&rank_state(rank)->step, step + 1);
            wake();
            int rc = wait(
                [&] {
                    for (int r = 0; r < nranks; r++) {
                        if (load(&rank_state(r)->step) <= step) return IDLE;
                    }
                    return DONE;
                },
                [&] {
                    std::string behind;
                    for (int r = 0; r < nranks; r++) {
                        if (load(&rank_state(r)->step) <= step) behind += format("%s%d", behind.empty() ? "" : ", ", r);
                    }
                    return format("rank(s) %s (step %zu of %zu)", behind.c_str(), k + 1, total);
                },
                why);
            if (rc != SUCCESS) return rc;
            if ((rc = check_agreement(d, why)) != SUCCESS) return rc;
            for (int r = 0; r < nranks; r++) halves[r] = coll_half(r, step) + HALF_HEADER;
            consume(at, m, halves.data());
            step++;
        }
        return SUCCESS;
    }

    int check_agreement(const Desc& d, std::string* why) const {
        auto agrees = [&](const Desc& o) {
            return o.seq == d.seq && o.count == d.count && o.kind == d.kind && o.dtype == d.dtype && o.op == d.op && o.root == d.root;
        };
        std::vector<Desc> all(nranks);
        bool same = true;
        for (int r = 0; r < nranks; r++) {
            memcpy(&all[r], coll_half(r, step), sizeof(Desc));
            same = same && agrees(all[r]);
        }
        if (same) return SUCCESS;
        *why = format("ranks disagree on collective #%llu:", (unsigned long long)d.seq);
        for (int r = 0; r < nranks; r++) {
            const Desc& o = all[r];
            *why += format("%s rank %d called %s", r == 0 ? "" : ",", r, describe(o.kind, o.count, o.dtype, o.op, o.root).c_str());
        }
        return INVALID_USAGE;
    }

    int collective(const Task& t, std::string* why) {
        const size_t es = TYPE_SIZES[t.dtype];
        const int n = nranks;
        Desc d{coll_seq++, t.count, t.kind, t.dtype, reduces(t.kind) ? t.op : -1, rooted(t.kind) ? t.root : -1};
        const char* send = static_cast<const char*>(t.send);
        char* recv = static_cast<char*>(t.recv);
        size_t per = layout.coll_half / es;
        auto publish_send = [&](size_t at, size_t m, char* half) { memcpy(half, send + at * es, m * es); };
        switch (t.kind) {
            case ALL_REDUCE:
            case REDUCE: {
                Reducer reduce = reducer(t.dtype, t.op);
                bool keep = t.kind == ALL_REDUCE || rank == t.root;
                return exchange(d, per, publish_send, [&](size_t at, size_t m, const char* const* in) {
                    if (keep) reduce(recv + at * es, in, n, m);
                }, why);
            }
            case BROADCAST:
                return exchange(d, per, [&](size_t at, size_t m, char* half) {
                    if (rank == t.root) publish_send(at, m, half);
                }, [&](size_t at, size_t m, const char* const* in) {
                    if (recv != send || rank != t.root) memcpy(recv + at * es, in[t.root], m * es);
                }, why);
            case ALL_GATHER:
                // In place, this rank's block of recv is send: rewriting it from its own piece changes nothing.
                return exchange(d, per, publish_send, [&](size_t at, size_t m, const char* const* in) {
                    for (int r = 0; r < n; r++) memcpy(recv + (r * t.count + at) * es, in[r], m * es);
                }, why);
            default: {  // REDUCE_SCATTER: each step carries a piece of every rank's block
                Reducer reduce = reducer(t.dtype, t.op);
                per = std::max<size_t>(1, per / n);
                std::vector<const char*> mine(n);
                return exchange(d, per, [&](size_t at, size_t m, char* half) {
                    for (int to = 0; to < n; to++) memcpy(half + to * per * es, send + (to * t.count + at) * es, m * es);
                }, [&](size_t at, size_t m, const char* const* in) {
                    for (int r = 0; r < n; r++) mine[r] = in[r] + rank * per * es;
                    reduce(recv + at * es, mine.data(), n, m);
                }, why);
            }
        }
    }

    // ---- sends and receives ----

    // Runs a group's sends and receives together, so that ranks sending to each other do not wait on
    // each other; messages on one channel go in issue order. Sets *failed to the task that failed.
    int exchange_messages(const std::vector<const Task*>& ops, const Task** failed, std::string* why) {
        size_t count = ops.size();
        std::vector<uint64_t> next(count, 0), chunks(count);
        for (size_t i = 0; i < count; i++) {
            uint64_t bytes = ops[i]->count * TYPE_SIZES[ops[i]->dtype];
            chunks[i] = std::max<uint64_t>(1, (bytes + layout.p2p_half - 1) / layout.p2p_half);
        }
        auto queued_behind = [&](size_t i) {  // an earlier message on the same channel is not through yet
            for (size_t j = 0; j < i; j++) {
                if (next[j] < chunks[j] && ops[j]->kind == ops[i]->kind && ops[j]->root == ops[i]->root) return true;
            }
            return false;
        };
        int error = SUCCESS;
        int rc = wait(
            [&] {
                bool done = true, progressed = false;
                for (size_t i = 0; i < count && error == SUCCESS; i++) {
                    if (next[i] == chunks[i]) continue;
                    done = false;
                    if (queued_behind(i)) continue;
                    while (next[i] < chunks[i]) {
                        int moved = ops[i]->kind == SEND ? send_chunk(*ops[i], next[i]) : receive_chunk(*ops[i], next[i], why);
                        if (moved < 0) {
                            error = INVALID_USAGE;
                            *failed = ops[i];
                        }
                        if (moved <= 0) break;
                        next[i]++;
                        progressed = true;
                    }
                }
                return error != SUCCESS || done ? DONE : progressed ? PROGRESS : IDLE;
            },
            [&] {
                for (size_t i = 0; i < count; i++) {
                    if (next[i] < chunks[i]) {
                        *failed = ops[i];
                        return format("rank %d (chunk %llu of %llu)", ops[i]->root, (unsigned long long)next[i] + 1,
                                      (unsigned long long)chunks[i]);
                    }
                }
                return std::string("nothing");
            },
            why);
        if (rc != SUCCESS && *failed == nullptr) {
            for (size_t i = 0; i < count && *failed == nullptr; i++) {
                if (next[i] < chunks[i]) *failed = ops[i];
            }
        }
        return rc != SUCCESS ? rc : error;
    }

    // Writes chunk `index` of a send when the channel has a free half: 1, else 0.
    int send_chunk(const Task& t, uint64_t index) {
        ChannelState* ch = channel(rank, t.root);
        uint64_t g = sent[t.root];
        if (g - load(&ch->taken) >= 2) return 0;
        uint64_t bytes = t.count * TYPE_SIZES[t.dtype], at = index * layout.p2p_half;
        char* half = p2p_half(rank, t.root, g);
        ChunkHeader head{bytes, index, t.dtype};
        memcpy(half, &head, sizeof head);
        memcpy(half + HALF_HEADER, static_cast<const char*>(t.send) + at, std::min<uint64_t>(layout.p2p_half, bytes - at));
        store(&ch->posted, g + 1);
        sent[t.root] = g + 1;
        wake();
        return 1;
    }

    // Reads chunk `index` of a receive when the sender has written it: 1, else 0; -1 when the sender's
    // message does not match (count or type).
    int receive_chunk(const Task& t, uint64_t index, std::string* why) {
        ChannelState* ch = channel(t.root, rank);
        uint64_t g = received[t.root];
        if (load(&ch->posted) <= g) return 0;
        uint64_t bytes = t.count * TYPE_SIZES[t.dtype], at = index * layout.p2p_half;
        const char* half = p2p_half(t.root, rank, g);
        ChunkHeader head;
        memcpy(&head, half, sizeof head);
        if (head.bytes != bytes || head.dtype != t.dtype || head.index != index) {
            size_t es = TYPE_SIZES[head.dtype >= 0 && head.dtype < NUM_TYPES ? head.dtype : INT8];
            *why = format("rank %d sent %llu x %s (%llu bytes), this rank receives %zu x %s (%llu bytes)", t.root,
                          (unsigned long long)(head.bytes / es), head.dtype >= 0 && head.dtype < NUM_TYPES ? TYPE_NAMES[head.dtype] : "?",
                          (unsigned long long)head.bytes, t.count, TYPE_NAMES[t.dtype], (unsigned long long)bytes);
            return -1;
        }
        memcpy(static_cast<char*>(t.recv) + at, half + HALF_HEADER, std::min<uint64_t>(layout.p2p_half, bytes - at));
        store(&ch->taken, g + 1);
        received[t.root] = g + 1;
        wake();
        return 1;
    }

    // ---- errors ----

    // Records a failure of this rank's work: the communicator's async error, the segment's failure (the
    // other ranks stop waiting), the last error, and the context's sticky error `cuda_error`.
    void fail(int code, const std::string& message, int cuda_error) {
        {
            std::lock_guard<std::mutex> lock(mu);
            if (async_error == SUCCESS) {
                async_error = code;
                async_message = message;
            }
        }
        announce(code, message);
        set_last_error(message);
        jtsim_fail(cuda_error, message.c_str());
    }
};

// The live communicators (leaked: calls may come while the process exits).
std::mutex& registry_mu = *new std::mutex;
auto& registry = *new std::unordered_map<const Comm*, std::shared_ptr<Comm>>;

std::shared_ptr<Comm> find_comm(const void* comm) {
    std::lock_guard<std::mutex> lock(registry_mu);
    auto it = registry.find(static_cast<const Comm*>(comm));
    return it != registry.end() ? it->second : nullptr;
}

// Makes ctx current on the calling thread for a scope (NCCL sets the communicator's device itself).
struct ScopedContext {
    CUcontext saved = nullptr;
    explicit ScopedContext(CUcontext ctx) {
        cuCtxGetCurrent(&saved);
        if (saved != ctx) cuCtxSetCurrent(ctx);
    }
    ~ScopedContext() { cuCtxSetCurrent(saved); }
};

// Joins rank `rank` of `nranks` to the segment `id` names, on `device`; does not wait for the others.
int attach(const IdBody& id, int nranks, int rank, int device, std::shared_ptr<Comm>* out) {
    const char* call = "ncclCommInitRank";
    if (cuInit(0) != CUDA_SUCCESS) return refuse(UNHANDLED_CUDA_ERROR, format("%s: cuInit failed (no simulated device?)", call));
    auto c = std::make_shared<Comm>();
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    c->name = id.name;
    c->layout = Layout(nranks);
    c->timeout = timeout_seconds();
    c->sent.assign(nranks, 0);
    c->received.assign(nranks, 0);
    CUresult r = cuDevicePrimaryCtxRetain(&c->ctx, device);
    if (r != CUDA_SUCCESS) {
        return refuse(r == CUDA_ERROR_INVALID_DEVICE ? INVALID_ARGUMENT : UNHANDLED_CUDA_ERROR,
                      format("%s: device %d: cuDevicePrimaryCtxRetain returned CUDA error %d", call, device, r));
    }
    c->retained = true;
    struct Release {  // the context, on the failures below
        Comm* comm;
        ~Release() {
            if (comm != nullptr) comm->release_context();
        }
    } release{c.get()};
    int fd = shm_open(c->name.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return refuse(SYSTEM_ERROR, format("%s: shm_open(%s): %s", call, c->name.c_str(), strerror(errno)));
    // Reserved now, so that a full /dev/shm fails here and not as a SIGBUS in a collective.
    int e = posix_fallocate(fd, 0, (off_t)c->layout.total);
    void* p = e == 0 ? mmap(nullptr, c->layout.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(c->name.c_str());
        return refuse(SYSTEM_ERROR, format("%s: cannot map %zu MiB of shared memory for %d ranks (%s): %s", call,
                                           c->layout.total >> 20, nranks, c->name.c_str(), strerror(e != 0 ? e : errno)));
    }
    c->base = static_cast<char*>(p);
    Header* h = c->header();
    int first = compare_exchange(&h->nranks, 0, nranks);
    if (first != 0 && first != nranks) {
        std::string message = format("%s: rank %d was given nranks %d, rank(s) before it %d", call, rank, nranks, first);
        c->announce(INVALID_USAGE, message);
        return refuse(INVALID_USAGE, message);
    }
    if (compare_exchange(&c->rank_state(rank)->present, 0, 1) != 0) {
        return refuse(INVALID_USAGE, format("%s: rank %d of this unique id has joined already", call, rank));
    }
    store(&c->rank_state(rank)->pid, (int32_t)getpid());
    __atomic_add_fetch(&h->joined, 1, __ATOMIC_ACQ_REL);
    c->wake();
    release.comm = nullptr;
    *out = std::move(c);
    return SUCCESS;
}

void publish(const std::shared_ptr<Comm>& c) {
    std::lock_guard<std::mutex> lock(registry_mu);
    registry[c.get()] = c;
}

// Removes comm from the live ones; null when it was not one.
std::shared_ptr<Comm> withdraw(const void* comm) {
    std::lock_guard<std::mutex> lock(registry_mu);
    auto it = registry.find(static_cast<const Comm*>(comm));
    if (it == registry.end()) return nullptr;
    std::shared_ptr<Comm> c = std::move(it->second);
    registry.erase(it);
    return c;
}

// Waits until the work issued on c has run (or been dropped).
void drain(Comm& c) {
    std::unique_lock<std::mutex> lock(c.mu);
    c.cv.wait(lock, [&] { return c.pending == 0; });
}

// ---- running a communicator's work on a stream --------------------------------------------------------------

struct Work {
    std::shared_ptr<Comm> comm;
    std::vector<Task> tasks;
    int64_t ticket = -1;  // -1: captured into a graph, runs at each launch of it
};

// The operand ranges a task's rank touches, checked when it runs as a kernel's would fault.
int check_ranges(const Comm& c, const Task& t, std::string* why) {
    size_t bytes = t.count * TYPE_SIZES[t.dtype], n = c.nranks;
    size_t send_bytes = bytes, recv_bytes = bytes;
    bool reads = true, writes = true;
    switch (t.kind) {
        case BROADCAST: reads = c.rank == t.root; break;
        case REDUCE: writes = c.rank == t.root; break;
        case ALL_GATHER: recv_bytes = bytes * n; break;
        case REDUCE_SCATTER: send_bytes = bytes * n; break;
        case SEND: writes = false; break;
        case RECV: reads = false; break;
        default: break;
    }
    struct Operand {
        const char* name;
        bool used;
        const void* at;
        size_t bytes;
    } operands[] = {{"sendbuff", reads, t.send, send_bytes}, {"recvbuff", writes, t.recv, recv_bytes}};
    for (const Operand& o : operands) {
        if (!o.used || o.bytes == 0 || jtsim_check_device_range((uintptr_t)o.at, o.bytes) == JTSIM_SUCCESS) continue;
        *why = format("%s [%p, +%zu bytes) is outside any device allocation", o.name, o.at, o.bytes);
        return UNHANDLED_CUDA_ERROR;
    }
    return SUCCESS;
}

void run_work(void* arg) {
    Work& w = *static_cast<Work*>(arg);
    Comm& c = *w.comm;
    auto where = [&](const Task& t) { return describe(t) + format(" on rank %d of %d", c.rank, c.nranks); };
    if (w.ticket >= 0) {
        std::unique_lock<std::mutex> lock(c.mu);
        bool turn = c.cv.wait_for(lock, std::chrono::duration<double>(c.timeout),
                                  [&] { return c.next_turn == w.ticket || c.aborted; });
        if (!turn) {
            lock.unlock();
            std::string why = format("waited %g s for the communicator's earlier calls on other streams (JTSIM_NCCL_TIMEOUT_S)", c.timeout);
            c.fail(REMOTE_ERROR, where(w.tasks[0]) + ": " + why, JTSIM_ERROR_LAUNCH_FAILED);
            return;
        }
    }
    std::lock_guard<std::mutex> running(c.run_mu);
    if (c.aborted) return;  // as NCCL's kernels of an aborted communicator, it ends without an error
    if (c.destroyed) {
        jtsim_fail(JTSIM_ERROR_LAUNCH_FAILED, (where(w.tasks[0]) + ": the communicator was destroyed").c_str());
        return;
    }
    {
        std::unique_lock<std::mutex> lock(c.mu);
        if (c.async_error != SUCCESS) {
            std::string message = where(w.tasks[0]) + ": the communicator failed earlier: " + c.async_message;
            lock.unlock();
            jtsim_fail(JTSIM_ERROR_LAUNCH_FAILED, message.c_str());
            return;
        }
    }
    std::string why;
    for (const Task& t : w.tasks) {
        if (check_ranges(c, t, &why) != SUCCESS) {
            c.fail(UNHANDLED_CUDA_ERROR, where(t) + ": " + why, JTSIM_ERROR_ILLEGAL_ADDRESS);
            return;
        }
    }
    // A group's sends and receives first, together; then its collectives in issue order (every rank
    // orders its group the same way).
    std::vector<const Task*> messages;
    for (const Task& t : w.tasks) {
        if (point_to_point(t.kind)) messages.push_back(&t);
    }
    int rc = SUCCESS;
    const Task* failed = nullptr;
    if (!messages.empty()) rc = c.exchange_messages(messages, &failed, &why);
    for (size_t i = 0; i < w.tasks.size() && rc == SUCCESS; i++) {
        if (point_to_point(w.tasks[i].kind)) continue;
        failed = &w.tasks[i];
        rc = c.collective(w.tasks[i], &why);
    }
    if (rc == SUCCESS || rc == ABORTED) return;
    c.fail(rc, where(failed != nullptr ? *failed : w.tasks[0]) + ": " + why, JTSIM_ERROR_LAUNCH_FAILED);
}

void finish_work(void* arg) {
    Work* w = static_cast<Work*>(arg);
    if (w->ticket >= 0) {
        Comm& c = *w->comm;
        std::lock_guard<std::mutex> lock(c.mu);
        c.finished.insert(w->ticket);
        while (c.finished.erase(c.next_turn) > 0) c.next_turn++;
        c.pending--;
        c.cv.notify_all();
    }
    delete w;
}

// Makes `waiter` wait for the work enqueued on `waited` so far.
bool join_streams(CUstream waiter, CUstream waited) {
    CUevent e = nullptr;
    if (cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return false;
    bool ok = cuEventRecord(e, waited) == CUDA_SUCCESS && cuStreamWaitEvent(waiter, e, 0) == CUDA_SUCCESS;
    cuEventDestroy_v2(e);
    return ok;
}

// Enqueues the tasks of one communicator as one piece of work on the first task's stream; the other
// streams of the group join it before and after, as NCCL orders a group's streams.
int launch(std::vector<Task> tasks) {
    std::shared_ptr<Comm> comm = tasks[0].comm;
    ScopedContext scope(comm->ctx);
    std::vector<CUstream> streams;
    for (const Task& t : tasks) {
        if (std::find(streams.begin(), streams.end(), t.stream) == streams.end()) streams.push_back(t.stream);
    }
    int capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    cuStreamIsCapturing(streams[0], &capturing);
    if (capturing != CU_STREAM_CAPTURE_STATUS_NONE && streams.size() > 1) {
        return refuse(INVALID_USAGE, "ncclGroupEnd: the simulator captures a communicator's group on one stream only");
    }
    for (size_t i = 1; i < streams.size(); i++) {
        if (!join_streams(streams[0], streams[i])) return refuse(UNHANDLED_CUDA_ERROR, "ncclGroupEnd: joining its streams failed");
    }
    const char* what = tasks.size() == 1 ? KIND_NAMES[tasks[0].kind] : "ncclGroupEnd";
    Work* w = new Work{comm, std::move(tasks), -1};
    if (capturing == CU_STREAM_CAPTURE_STATUS_NONE) {
        std::lock_guard<std::mutex> lock(comm->mu);
        w->ticket = comm->issued++;
        comm->pending++;
    }
    // On an error the driver has run finish_work already.
    int r = jtsim_stream_enqueue((uintptr_t)streams[0], what, run_work, w, finish_work);
    if (r != JTSIM_SUCCESS) return refuse(UNHANDLED_CUDA_ERROR, format("%s: enqueueing returned CUDA error %d", what, r));
    for (size_t i = 1; i < streams.size(); i++) {
        if (!join_streams(streams[i], streams[0])) return refuse(UNHANDLED_CUDA_ERROR, "ncclGroupEnd: joining its streams failed");
    }
    return SUCCESS;
}

// ---- groups ----------------------------------------------------------------------------------------------------

thread_local int group_depth = 0;
thread_local int group_error = SUCCESS;
thread_local std::vector<Task>* group_tasks = nullptr;                 // made on first use
thread_local std::vector<std::shared_ptr<Comm>>* group_inits = nullptr;  // ncclCommInitRank in the group

std::vector<Task>& pending_tasks() {
    if (group_tasks == nullptr) group_tasks = new std::vector<Task>;
    return *group_tasks;
}

std::vector<std::shared_ptr<Comm>>& pending_inits() {
    if (group_inits == nullptr) group_inits = new std::vector<std::shared_ptr<Comm>>;
    return *group_inits;
}

// Completes the group's inits, then enqueues its tasks, one piece of work per communicator in the order
// of their first task.
int end_group() {
    int rc = group_error;
    std::vector<Task> tasks;
    tasks.swap(pending_tasks());
    std::vector<std::shared_ptr<Comm>> inits;
    inits.swap(pending_inits());
    group_error = SUCCESS;
    for (const std::shared_ptr<Comm>& c : inits) {
        std::string why;
        int r = c->await_joined(&why);
        if (r != SUCCESS) {
            std::lock_guard<std::mutex> lock(c->mu);
            c->async_error = r;
            c->async_message = why;
        }
        if (r != SUCCESS && rc == SUCCESS) {
            rc = refuse(r, format("ncclCommInitRank on rank %d of %d: %s", c->rank, c->nranks, why.c_str()));
        }
    }
    if (rc != SUCCESS) return rc;  // an invalid call in the group: nothing of it is issued, as with NCCL
    while (!tasks.empty()) {
        std::shared_ptr<Comm> first = tasks[0].comm;
        std::vector<Task> mine, rest;
        for (Task& t : tasks) (t.comm == first ? mine : rest).push_back(std::move(t));
        int r = launch(std::move(mine));
        if (rc == SUCCESS) rc = r;
        tasks.swap(rest);
    }
    return rc;
}

// Checks a call's arguments (ncclInvalidArgument at the call, as NCCL) and issues it, or queues it in
// the open group.
int submit(int kind, const void* send, void* recv, size_t count, int dtype, int op, int root, const void* comm,
           CUstream stream) {
    const char* call = KIND_NAMES[kind];
    int rc = SUCCESS;
    std::string message;
    std::shared_ptr<Comm> c = comm != nullptr ? find_comm(comm) : nullptr;
    size_t n = c ? c->nranks : 1;
    if (comm == nullptr) {
        rc = INVALID_ARGUMENT, message = format("%s: comm is NULL", call);
    } else if (!c) {
        rc = INVALID_ARGUMENT, message = format("%s: comm %p is not a live communicator", call, comm);
    } else if (dtype < 0 || dtype >= NUM_TYPES) {
        rc = INVALID_ARGUMENT, message = format("%s: invalid datatype %d", call, dtype);
    } else if (reduces(kind) && (op < 0 || op >= NUM_OPS)) {
        rc = INVALID_ARGUMENT, message = format("%s: invalid reduction operation %d", call, op);
    } else if ((rooted(kind) || point_to_point(kind)) && (root < 0 || (size_t)root >= n)) {
        rc = INVALID_ARGUMENT, message = format("%s: %s %d is not a rank of %zu", call, rooted(kind) ? "root" : "peer", root, n);
    } else if (count > SIZE_MAX / TYPE_SIZES[dtype] / ((kind == ALL_GATHER || kind == REDUCE_SCATTER) ? n : 1)) {
        rc = INVALID_ARGUMENT, message = format("%s: count %zu of %s overflows", call, count, TYPE_NAMES[dtype]);
    } else if (count > 0) {
        bool needs_send = kind != RECV && (kind != BROADCAST || c->rank == root);
        bool needs_recv = kind != SEND && (kind != REDUCE || c->rank == root);
        if ((needs_send && send == nullptr) || (needs_recv && recv == nullptr)) {
            rc = INVALID_ARGUMENT, message = format("%s: %s is NULL", call, needs_send && send == nullptr ? "sendbuff" : "recvbuff");
        }
    }
    if (rc == SUCCESS) {
        std::lock_guard<std::mutex> lock(c->mu);
        if (c->async_error != SUCCESS) {
            rc = c->async_error, message = format("%s: the communicator failed earlier: %s", call, c->async_message.c_str());
        }
    }
    if (rc != SUCCESS) {
        if (group_depth > 0 && group_error == SUCCESS) group_error = rc;
        return refuse(rc, message);
    }
    Task t{kind, c, send, recv, count, dtype, op, root, stream};
    if (group_depth > 0) {
        pending_tasks().push_back(std::move(t));
        return SUCCESS;
    }
    return launch({std::move(t)});
}

bool parse_id(const void* bytes, IdBody* id) {
    memcpy(id, bytes, sizeof *id);
    id->name[sizeof id->name - 1] = 0;
    return memcmp(id->magic, ID_MAGIC, sizeof ID_MAGIC) == 0 && id->name[0] == '/';
}

int make_id(IdBody* id) {
    memset(id, 0, sizeof *id);
    memcpy(id->magic, ID_MAGIC, sizeof ID_MAGIC);
    snprintf(id->name, sizeof id->name, "/jtsim-nccl-%d-%016llx", (int)getpid(), (unsigned long long)random64());
    return SUCCESS;
}

int current_device() {
    CUcontext ctx = nullptr;
    CUdevice device = 0;
    if (cuInit(0) == CUDA_SUCCESS && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr &&
        cuCtxGetDevice(&device) == CUDA_SUCCESS) {
        return device;
    }
    return 0;  // as the CUDA runtime's default device
}

}  // namespace

// ---- the C API -------------------------------------------------------------------------------------------------

extern "C" {

typedef struct {
    char internal[UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef Comm* ncclComm_t;

int ncclGetVersion(int* version) {
    if (version == nullptr) return refuse(INVALID_ARGUMENT, "ncclGetVersion: version is NULL");
    *version = VERSION;
    return SUCCESS;
}

const char* ncclGetErrorString(int result) {
    switch (result) {
        case SUCCESS: return "no error";
        case UNHANDLED_CUDA_ERROR: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
        case SYSTEM_ERROR: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
        case INTERNAL_ERROR: return "internal error - please report this issue to the NCCL developers";
        case INVALID_ARGUMENT: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
        case INVALID_USAGE: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
        case REMOTE_ERROR: return "remote process exited or there was a network error";
        case IN_PROGRESS: return "NCCL operation in progress";
        default: return "unknown result code";
    }
}

// As NCCL's: the latest error of any call in the process (comm is unused), or "".
const char* ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    static thread_local std::string copy;  // stable for the caller while the shared one may change
    std::lock_guard<std::mutex> lock(error_mu);
    copy = last_error;
    return copy.c_str();
}

int ncclGetUniqueId(ncclUniqueId* id) {
    if (id == nullptr) return refuse(INVALID_ARGUMENT, "ncclGetUniqueId: uniqueId is NULL");
    IdBody body;
    make_id(&body);
    memset(id, 0, sizeof *id);
    memcpy(id->internal, &body, sizeof body);
    return SUCCESS;
}

int ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
    if (comm == nullptr) return refuse(INVALID_ARGUMENT, "ncclCommInitRank: comm is NULL");
    *comm = nullptr;
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        return refuse(INVALID_ARGUMENT, format("ncclCommInitRank: invalid rank %d of %d ranks", rank, nranks));
    }
    IdBody id;
    if (!parse_id(commId.internal, &id)) return refuse(INVALID_ARGUMENT, "ncclCommInitRank: not a unique id of ncclGetUniqueId");
    std::shared_ptr<Comm> c;
    int rc = attach(id, nranks, rank, current_device(), &c);
    if (rc != SUCCESS) return rc;
    if (group_depth > 0) {  // completed at ncclGroupEnd, so that one thread can init several ranks
        pending_inits().push_back(c);
    } else {
        std::string why;
        if ((rc = c->await_joined(&why)) != SUCCESS) {
            c->release_context();
            return refuse(rc, format("ncclCommInitRank on rank %d of %d: %s", rank, nranks, why.c_str()));
        }
    }
    publish(c);
    *comm = c.get();
    return SUCCESS;
}

int ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
    if (comms == nullptr || ndev < 1) return refuse(INVALID_ARGUMENT, format("ncclCommInitAll: comms NULL or ndev %d", ndev));
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS) {
        return refuse(UNHANDLED_CUDA_ERROR, "ncclCommInitAll: cuInit failed");
    }
    for (int i = 0; i < ndev; i++) {
        int d = devlist != nullptr ? devlist[i] : i;
        if (d < 0 || d >= count) return refuse(INVALID_ARGUMENT, format("ncclCommInitAll: device %d of %d devices", d, count));
        for (int j = 0; j < i; j++) {
            if (devlist != nullptr && devlist[j] == d) return refuse(INVALID_USAGE, format("ncclCommInitAll: duplicate device %d", d));
        }
    }
    IdBody id;
    make_id(&id);
    std::vector<std::shared_ptr<Comm>> made(ndev);
    for (int i = 0; i < ndev; i++) {
        int rc = attach(id, ndev, i, devlist != nullptr ? devlist[i] : i, &made[i]);
        for (int j = 0; rc != SUCCESS && j < i; j++) made[j]->release_context();
        if (rc != SUCCESS) {
            shm_unlink(id.name);
            return rc;
        }
    }
    for (int i = 0; i < ndev; i++) {
        std::string why;
        if (int rc = made[i]->await_joined(&why)) {
            for (auto& c : made) c->release_context();
            return refuse(rc, "ncclCommInitAll: " + why);
        }
    }
    for (int i = 0; i < ndev; i++) {
        publish(made[i]);
        comms[i] = made[i].get();
    }
    return SUCCESS;
}

// NCCL's blocking finalize: waits until the communicator's issued work has run.
int ncclCommFinalize(ncclComm_t comm) {
    std::shared_ptr<Comm> c = find_comm(comm);
    if (!c) return refuse(INVALID_ARGUMENT, "ncclCommFinalize: comm is not a live communicator");
    drain(*c);
    return SUCCESS;
}

// Waits for the communicator's work, then frees it (its segment when no graph holds captured work of it).
int ncclCommDestroy(ncclComm_t comm) {
    if (comm == nullptr) return SUCCESS;  // as NCCL
    std::shared_ptr<Comm> c = withdraw(comm);
    if (!c) return refuse(INVALID_ARGUMENT, "ncclCommDestroy: comm is not a live communicator");
    drain(*c);
    c->destroyed = true;
    c->release_context();
    return SUCCESS;
}

// Stops the communicator's work at once (it ends without an error on this rank) and tells the other
// ranks, whose waits then fail with ncclRemoteError instead of timing out.
int ncclCommAbort(ncclComm_t comm) {
    if (comm == nullptr) return SUCCESS;
    std::shared_ptr<Comm> c = withdraw(comm);
    if (!c) return refuse(INVALID_ARGUMENT, "ncclCommAbort: comm is not a live communicator");
    {
        std::lock_guard<std::mutex> lock(c->mu);
        c->aborted = true;
        c->cv.notify_all();
    }
    c->announce(REMOTE_ERROR, format("rank %d aborted its communicator", c->rank));
    c->wake();
    drain(*c);
    c->destroyed = true;
    c->release_context();
    return SUCCESS;
}

int ncclCommGetAsyncError(ncclComm_t comm, int* asyncError) {
    std::shared_ptr<Comm> c = find_comm(comm);
    if (!c || asyncError == nullptr) return refuse(INVALID_ARGUMENT, "ncclCommGetAsyncError: invalid comm or asyncError NULL");
    std::lock_guard<std::mutex> lock(c->mu);
    *asyncError = c->async_error;
    return SUCCESS;
}

int ncclCommCount(const ncclComm_t comm, int* count) {
    std::shared_ptr<Comm> c = find_comm(comm);
    if (!c || count == nullptr) return refuse(INVALID_ARGUMENT, "ncclCommCount: invalid comm or count NULL");
    *count = c->nranks;
    return SUCCESS;
}

int ncclCommCuDevice(const ncclComm_t comm, int* device) {
    std::shared_ptr<Comm> c = find_comm(comm);
    if (!c || device == nullptr) return refuse(INVALID_ARGUMENT, "ncclCommCuDevice: invalid comm or device NULL");
    *device = c->device;
    return SUCCESS;
}

int ncclCommUserRank(const ncclComm_t comm, int* rank) {
    std::shared_ptr<Comm> c = find_comm(comm);
    if (!c || rank == nullptr) return refuse(INVALID_ARGUMENT, "ncclCommUserRank: invalid comm or rank NULL");
    *rank = c->rank;
    return SUCCESS;
}

int ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op, ncclComm_t comm, CUstream stream) {
    return submit(ALL_REDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

int ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root, ncclComm_t comm, CUstream stream) {
    return submit(BROADCAST, sendbuff, recvbuff, count, datatype, SUM, root, comm, stream);
}

int ncclBcast(void* buff, size_t count, int datatype, int root, ncclComm_t comm, CUstream stream) {
    return submit(BROADCAST, buff, buff, count, datatype, SUM, root, comm, stream);
}

int ncclReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op, int root, ncclComm_t comm, CUstream stream) {
    return submit(REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

int ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, int datatype, ncclComm_t comm, CUstream stream) {
    return submit(ALL_GATHER, sendbuff, recvbuff, sendcount, datatype, SUM, 0, comm, stream);
}

int ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, int datatype, int op, ncclComm_t comm,
                      CUstream stream) {
    return submit(REDUCE_SCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

int ncclSend(const void* sendbuff, size_t count, int datatype, int peer, ncclComm_t comm, CUstream stream) {
    return submit(SEND, sendbuff, nullptr, count, datatype, SUM, peer, comm, stream);
}

int ncclRecv(void* recvbuff, size_t count, int datatype, int peer, ncclComm_t comm, CUstream stream) {
    return submit(RECV, nullptr, recvbuff, count, datatype, SUM, peer, comm, stream);
}

int ncclGroupStart(void) {
    group_depth++;
    return SUCCESS;
}

int ncclGroupEnd(void) {
    if (group_depth == 0) return refuse(INVALID_USAGE, "ncclGroupEnd: no ncclGroupStart before it");
    if (--group_depth > 0) return SUCCESS;
    return end_group();
}

}  // extern "C"
