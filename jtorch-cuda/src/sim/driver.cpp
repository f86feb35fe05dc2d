// The simulated CUDA driver (libcuda.so.1): every driver entry point jtorch binds, and the stream
// capture and graph calls, with the real driver's ABI, on the CPU.
//
// - Devices are configured by the environment: JTSIM_DEVICES (1), JTSIM_SMS (4 multiprocessors, so that
//   grids stay small), JTSIM_MEMORY (capacity in bytes, suffixes K/M/G; 4G), JTSIM_CC (compute
//   capability, 9.0).
// - Device memory is host memory. Each allocation is a separate aligned block; fresh blocks are filled
//   with 0xff bytes (NaN for floats) unless JTSIM_FILL=0, so that reading memory nobody wrote shows.
//   Copies, memsets and frees are checked against the live allocations and answer as the real driver
//   did on an H200 (docs/cuda-driver-probe-h200.txt).
// - Each stream has a worker thread running its work in order, asynchronously to the caller: a missing
//   synchronisation in jtorch shows as a wrong result. JTSIM_DEFER_MS=N holds each piece of work back until
//   the host waits or queries, or N ms have passed, so such a race loses every time. The legacy default
//   stream orders itself with the blocking streams of its context, as on a GPU. JTSIM_TRACE=1 prints each
//   synchronising call.
// - Kernels come from the simulated NVRTC (nvrtc.cpp) as shared objects; a launch runs on the stream's
//   worker (include/jtsim_kernel.h). A kernel that faults (SIGSEGV/SIGBUS on the worker) fails the
//   context with CUDA_ERROR_ILLEGAL_ADDRESS naming the kernel; every later call returns it (sticky),
//   as on a GPU, and the process goes on.

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cuda_types.h"
#include "include/jtsim_launch.h"
#include "jtsim.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---- configuration ----------------------------------------------------------------------------------

struct Config {
    int devices = 1;
    int sms = 4;
    size_t memory = size_t(4) << 30;
    int major = 9, minor = 0;
    bool fill = true;
    double defer_ms = 0;
    bool trace = false;
};

size_t parse_bytes(const char* s, size_t fallback) {
    if (s == nullptr || *s == 0) return fallback;
    char* end = nullptr;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return fallback;
    switch (*end) {
        case 'k': case 'K': v *= 1024.0; break;
        case 'm': case 'M': v *= 1024.0 * 1024.0; break;
        case 'g': case 'G': v *= 1024.0 * 1024.0 * 1024.0; break;
        default: break;
    }
    return (size_t)v;
}

Config read_config() {
    Config c;
    if (const char* s = getenv("JTSIM_DEVICES")) c.devices = std::max(0, atoi(s));
    if (const char* s = getenv("JTSIM_SMS")) c.sms = std::max(1, atoi(s));
    c.memory = parse_bytes(getenv("JTSIM_MEMORY"), c.memory);
    if (const char* s = getenv("JTSIM_CC")) {
        int major = 0, minor = 0;
        if (sscanf(s, "%d.%d", &major, &minor) >= 1 && major > 0) c.major = major, c.minor = minor;
    }
    if (const char* s = getenv("JTSIM_FILL")) c.fill = strcmp(s, "0") != 0;
    if (const char* s = getenv("JTSIM_DEFER_MS")) c.defer_ms = std::max(0.0, atof(s));
    if (const char* s = getenv("JTSIM_TRACE")) c.trace = strcmp(s, "0") != 0;
    return c;
}

// ---- global state -------------------------------------------------------------------------------------

// One lock for the simulator's bookkeeping, and one condition for every kind of progress (work done on a
// stream, an event completing): waiters re-check their own condition.
// Never destroyed: worker threads may still wait on them while the process exits.
std::mutex& mu = *new std::mutex;
std::condition_variable& progress = *new std::condition_variable;
bool initialized = false;
Config config;

struct Allocation {
    size_t size;
    int device;     // -1: pinned host memory
};
std::map<uintptr_t, Allocation>& allocations = *new std::map<uintptr_t, Allocation>;   // by base address
std::vector<size_t>& device_in_use = *new std::vector<size_t>;

// Deferred execution (JTSIM_DEFER_MS): a worker runs work only when the host waits for something, queries
// a stream or event, or the delay has passed; so host code that reuses a buffer an asynchronous copy still
// reads, or reads a result it did not wait for, sees the wrong data every time instead of sometimes.
int host_waiters = 0;     // under mu
uint64_t nudges = 0;      // under mu: queries so far

std::atomic<uint64_t> stat_launches{0}, stat_graph_launches{0}, stat_kernels_run{0}, stat_library_calls{0},
    stat_syncs{0}, stat_h2d{0}, stat_d2h{0}, stat_d2d{0}, stat_allocs{0}, stat_frees{0};
uint64_t stat_in_use = 0, stat_peak = 0;   // under mu

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// ---- contexts, streams, events ------------------------------------------------------------------------

struct Op {
    const char* what;
    std::function<void()> run;
    std::function<void()> cleanup;
    double ready_at = 0;     // with JTSIM_DEFER_MS: when the worker may run it unasked
    uint64_t nudge = 0;      // the query count when it was enqueued: a later query asks for it
};

struct Capture {
    std::vector<Op> ops;
    ~Capture() {
        for (Op& op : ops) {
            if (op.cleanup) op.cleanup();
        }
    }
};

// One stream capture, begun on its origin stream and joined by the streams that waited on an event recorded
// in it (fork); each of those must be waited on again after its last captured work (join) before the origin
// ends the capture. The captured work is one list in call order: calls on different streams are ordered by
// the events between them, so that order respects every dependency.
struct CaptureSession {
    std::shared_ptr<Capture> work = std::make_shared<Capture>();
    int mode;
    std::thread::id thread;   // the thread that began it: its mode decides what that thread may call
    bool invalidated = false;
    bool ended = false;
    struct jtsim_stream* origin;
    std::vector<struct jtsim_stream*> members;
};

}  // namespace

struct jtsim_context {
    int device;
    bool destroyed = false;
    int retained = 0;
    CUresult sticky = CUDA_SUCCESS;
    std::string sticky_message;
    struct jtsim_stream* legacy = nullptr;
    std::set<struct jtsim_stream*> streams;
};

struct jtsim_stream {
    jtsim_context* ctx;
    unsigned int flags;
    bool legacy;
    std::deque<Op> queue;
    uint64_t enqueued = 0, completed = 0;
    bool stopping = false;
    std::thread worker;
    std::shared_ptr<CaptureSession> capture;   // non-null while capturing (as origin or joined)
    uint64_t captured = 0;                     // work this stream added to the capture
    uint64_t joined = 0;                       // of it, how much another stream of the capture has waited for
};

struct jtsim_event {
    jtsim_context* ctx;
    unsigned int flags;
    uint64_t records = 0, completions = 0;
    double time = 0;
    std::shared_ptr<CaptureSession> capture;   // the capture its last record was made in, if any
    struct jtsim_stream* captured_on = nullptr;
    uint64_t captured_at = 0;                  // the recording stream's captured work at that record
};

struct jtsim_module {
    void* handle;
    int refs = 0;            // launches not yet finished
    bool unloaded = false;
    std::unordered_map<std::string, struct jtsim_function*> functions;
};

struct jtsim_function {
    jtsim_module* module;
    std::string name;
    size_t (*args_size)();
    void (*pack)(void**, void*);
    void (*unpack)(void*);
    int (*launch)(jtsim::LaunchConfig*, const void*);
    int max_dynamic_shared = 48 * 1024;
};

struct jtsim_graph {
    std::shared_ptr<Capture> capture;
};

struct jtsim_graph_exec {
    std::shared_ptr<Capture> capture;
};

namespace {

// The live handles (never destroyed, as the lock above).
std::vector<jtsim_context*>& primary = *new std::vector<jtsim_context*>;   // per device, replaced on reset
std::set<jtsim_stream*>& streams = *new std::set<jtsim_stream*>;
std::set<jtsim_event*>& events = *new std::set<jtsim_event*>;
std::set<jtsim_module*>& modules = *new std::set<jtsim_module*>;
std::set<jtsim_function*>& functions = *new std::set<jtsim_function*>;
std::set<jtsim_graph*>& graphs = *new std::set<jtsim_graph*>;
std::set<jtsim_graph_exec*>& graph_execs = *new std::set<jtsim_graph_exec*>;
thread_local jtsim_context* current = nullptr;

const size_t STACK_SIZE = 256 * 1024;

// ---- kernel faults --------------------------------------------------------------------------------------

// A worker thread's landing place when its kernel faults. Looked up by thread id in the signal handler,
// which may touch nothing that needs a lock or thread-local storage of this library.
struct FaultSlot {
    std::atomic<int> used;
    std::atomic<pthread_t> thread;
    std::atomic<int> in_kernel;
    sigjmp_buf jump;
    void* address;
};
const int MAX_WORKERS = 1024;
FaultSlot fault_slots[MAX_WORKERS];
std::atomic<int> fault_slot_count{0};  // slots ever used: the handler scans these
struct sigaction previous_segv, previous_bus;
std::once_flag handlers_installed;

void forward_signal(int sig, siginfo_t* info, void* context) {
    const struct sigaction& old = sig == SIGSEGV ? previous_segv : previous_bus;
    if (old.sa_flags & SA_SIGINFO) {
        if (old.sa_sigaction != nullptr) old.sa_sigaction(sig, info, context);
        return;
    }
    if (old.sa_handler == SIG_IGN) return;
    if (old.sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    old.sa_handler(sig);
}

void on_fault(int sig, siginfo_t* info, void* context) {
    pthread_t self = pthread_self();
    int n = fault_slot_count.load();
    for (int i = 0; i < n; i++) {
        FaultSlot& s = fault_slots[i];
        if (s.in_kernel.load() && pthread_equal(s.thread.load(), self)) {
            s.address = info->si_addr;
            s.in_kernel.store(0);
            siglongjmp(s.jump, sig);
        }
    }
    // Not a simulated kernel: the JVM's own use of these signals, or a real crash.
    forward_signal(sig, info, context);
}

void install_fault_handlers() {
#if !defined(__SANITIZE_ADDRESS__)
    if (getenv("JTSIM_ASAN") != nullptr) return;  // AddressSanitizer reports kernel faults itself
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previous_segv);
    sigaction(SIGBUS, &sa, &previous_bus);
#endif
}

// A fault slot for the calling worker thread (null when all are taken: its faults then crash, as a
// real crash would) and its alternate signal stack.
FaultSlot* register_worker() {
    FaultSlot* slot = nullptr;
    for (int i = 0; i < MAX_WORKERS && slot == nullptr; i++) {
        int expected = 0;
        if (fault_slots[i].used.compare_exchange_strong(expected, 1)) slot = &fault_slots[i];
    }
    if (slot == nullptr) return nullptr;
    slot->in_kernel.store(0);
    slot->thread.store(pthread_self());
    int index = (int)(slot - fault_slots), seen = fault_slot_count.load();
    while (seen <= index && !fault_slot_count.compare_exchange_weak(seen, index + 1)) {
    }
    // The handler must run on its own stack: a fault may be a fiber's stack overflowing its guard page.
    stack_t alt;
    alt.ss_size = 64 * 1024;
    alt.ss_sp = malloc(alt.ss_size);
    alt.ss_flags = 0;
    sigaltstack(&alt, nullptr);
    return slot;
}

void unregister_worker(FaultSlot* slot) {
    stack_t alt, none;
    memset(&none, 0, sizeof none);
    none.ss_flags = SS_DISABLE;
    if (sigaltstack(&none, &alt) == 0 && alt.ss_sp != nullptr) free(alt.ss_sp);
    if (slot == nullptr) return;
    slot->thread.store(pthread_t());
    slot->used.store(0);
}

// Fiber stacks of the calling worker thread, grown to the largest block it ran; unmapped when it ends.
struct WorkerStacks {
    std::vector<void*> stacks;
    ~WorkerStacks();
};
thread_local WorkerStacks worker_stacks;

// ---- errors -------------------------------------------------------------------------------------------

struct ErrorText {
    CUresult code;
    const char* name;
    const char* text;
};
const ErrorText ERRORS[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", "operation would result in a merge of separate capture sequences"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "capture was not ended in the same stream as it began"},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "dependency created on uncaptured work in another stream"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream"},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* find_error(CUresult code) {
    for (const ErrorText& e : ERRORS) {
        if (e.code == code) return &e;
    }
    return nullptr;
}

// ---- helpers (mu held unless said otherwise) ------------------------------------------------------------

// The context calls need: the calling thread's current one, alive. Sets *error otherwise.
jtsim_context* context_or(CUresult* error) {
    if (!initialized) {
        *error = CUDA_ERROR_NOT_INITIALIZED;
        return nullptr;
    }
    jtsim_context* c = current;
    if (c == nullptr) {
        *error = CUDA_ERROR_INVALID_CONTEXT;
        return nullptr;
    }
    if (c->destroyed) {
        *error = CUDA_ERROR_CONTEXT_IS_DESTROYED;
        return nullptr;
    }
    if (c->sticky != CUDA_SUCCESS) {
        *error = c->sticky;
        return nullptr;
    }
    return c;
}

// Where [address, address + bytes) lies, or null when it is not inside one live allocation.
const Allocation* find_range(uintptr_t address, size_t bytes) {
    auto it = allocations.upper_bound(address);
    if (it == allocations.begin()) return nullptr;
    --it;
    uintptr_t base = it->first;
    const Allocation& a = it->second;
    // An empty range may sit at the block's end.
    if (address < base || address - base > a.size || bytes > a.size - (address - base)) return nullptr;
    return &a;
}

void fail_context(jtsim_context* c, CUresult error, const std::string& message) {
    if (c->sticky == CUDA_SUCCESS) {
        c->sticky = error;
        c->sticky_message = message;
        fprintf(stderr, "jtorch CUDA simulator: %s\n", message.c_str());
    }
    progress.notify_all();
}

void worker_main(jtsim_stream* s);

jtsim_stream* new_stream(jtsim_context* c, unsigned int flags, bool legacy) {
    jtsim_stream* s = new jtsim_stream();
    s->ctx = c;
    s->flags = flags;
    s->legacy = legacy;
    s->worker = std::thread(worker_main, s);
    streams.insert(s);
    c->streams.insert(s);
    return s;
}

// The stream a handle names in context c: 0 and CU_STREAM_LEGACY (and, simplified, the per-thread
// stream) are c's legacy stream, made on first use.
jtsim_stream* resolve_stream(jtsim_context* c, CUstream handle, CUresult* error) {
    if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
        if (c->legacy == nullptr) c->legacy = new_stream(c, CU_STREAM_DEFAULT, true);
        return c->legacy;
    }
    if (streams.count(handle) == 0) {
        *error = CUDA_ERROR_INVALID_HANDLE;
        return nullptr;
    }
    return handle;
}

// The start of a call on a stream: mu held, the calling thread's context and the stream `handle` names in
// it; stream is null (and error says why) when either is missing or failed.
struct StreamCall {
    std::unique_lock<std::mutex> lock{mu};
    CUresult error = CUDA_SUCCESS;
    jtsim_context* ctx = nullptr;
    jtsim_stream* stream = nullptr;

    explicit StreamCall(CUstream handle) {
        ctx = context_or(&error);
        if (ctx != nullptr) stream = resolve_stream(ctx, handle, &error);
    }
};

// The calling thread's capture interaction mode (cuThreadExchangeStreamCaptureMode); GLOBAL by default.
thread_local int thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

// A potentially unsafe call (cuMemAlloc, cuMemFree, a pinned allocation, a context synchronisation) while a
// capture forbids it, as cuThreadExchangeStreamCaptureMode documents: unless the calling thread's mode is
// RELAXED, a capture this thread began (not in RELAXED mode) forbids it, and in GLOBAL mode so does another
// thread's GLOBAL capture. The forbidding captures are invalidated, as the real driver does, and the call
// returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; CUDA_SUCCESS when none forbids it.
CUresult refuse_during_capture(jtsim_context* c) {
    if (thread_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
    bool refused = false;
    std::thread::id me = std::this_thread::get_id();
    for (jtsim_stream* s : c->streams) {
        CaptureSession* k = s->capture.get();
        if (k == nullptr || k->mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
        bool forbids = k->thread == me || (thread_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && k->mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
        if (forbids) {
            k->invalidated = true;
            refused = true;
        }
    }
    return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

// Waits for pred, counting as a demand for the workers' deferred work meanwhile. `host_call` names the
// synchronising call a host thread made (null for a worker's wait): each counts in the statistics, whether or
// not work was still pending (that depends on timing; the calls do not), and JTSIM_TRACE=1 prints it.
template <typename Pred> void wait_for(std::unique_lock<std::mutex>& lock, Pred pred, const char* host_call) {
    if (host_call != nullptr) {
        stat_syncs++;
        if (config.trace) fprintf(stderr, "jtsim: %s%s\n", host_call, pred() ? "" : " (work pending)");
    }
    if (pred()) return;
    host_waiters++;
    progress.notify_all();
    progress.wait(lock, pred);
    host_waiters--;
}

// Appends work to stream s (or to its capture). The legacy stream waits for the blocking streams' work
// before it, and blocking streams wait for the legacy stream's.
CUresult enqueue(jtsim_stream* s, Op op) {
    if (s->capture) {
        if (s->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        s->capture->work->ops.push_back(std::move(op));
        s->captured++;
        return CUDA_SUCCESS;
    }
    jtsim_context* c = s->ctx;
    std::vector<std::pair<jtsim_stream*, uint64_t>> waits;
    if (s->legacy) {
        for (jtsim_stream* other : c->streams) {
            if (other != s && !other->legacy && other->flags == CU_STREAM_DEFAULT && other->enqueued > other->completed) {
                waits.emplace_back(other, other->enqueued);
            }
        }
    } else if (s->flags == CU_STREAM_DEFAULT && c->legacy != nullptr && c->legacy->enqueued > c->legacy->completed) {
        waits.emplace_back(c->legacy, c->legacy->enqueued);
    }
    for (auto& w : waits) {
        jtsim_stream* target = w.first;
        uint64_t count = w.second;
        s->queue.push_back(Op{"implicit legacy-stream order", [target, count] {
            std::unique_lock<std::mutex> lock(mu);
            wait_for(lock, [&] { return target->completed >= count; }, nullptr);
        }, nullptr});
        s->enqueued++;
    }
    op.ready_at = now_ms() + config.defer_ms;
    op.nudge = nudges;
    s->queue.push_back(std::move(op));
    s->enqueued++;
    progress.notify_all();
    return CUDA_SUCCESS;
}

// Waits (mu held through `lock`) until everything enqueued on s so far has run.
void drain(jtsim_stream* s, std::unique_lock<std::mutex>& lock, const char* host_call) {
    uint64_t target = s->enqueued;
    wait_for(lock, [&] { return s->completed >= target; }, host_call);
}

void drain_context(jtsim_context* c, std::unique_lock<std::mutex>& lock, const char* host_call) {
    std::vector<std::pair<jtsim_stream*, uint64_t>> targets;
    for (jtsim_stream* s : c->streams) targets.emplace_back(s, s->enqueued);
    wait_for(lock, [&] {
        for (auto& t : targets) {
            if (t.first->completed < t.second) return false;
        }
        return true;
    }, host_call);
}

WorkerStacks::~WorkerStacks() {
    for (void* stack : stacks) munmap((char*)stack - 4096, STACK_SIZE + 4096);
}

void* new_stack() {
    // A guard page below each stack turns an overflow into a fault the worker reports.
    size_t guard = 4096;
    void* p = mmap(nullptr, STACK_SIZE + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    mprotect(p, guard, PROT_NONE);
    return (char*)p + guard;
}

void worker_main(jtsim_stream* s) {
    FaultSlot* slot = register_worker();
    current = s->ctx;  // library work running here (jtsim_fail) belongs to the stream's context
    for (;;) {
        std::unique_lock<std::mutex> lock(mu);
        progress.wait(lock, [&] { return !s->queue.empty() || s->stopping; });
        while (config.defer_ms > 0 && !s->queue.empty() && !s->stopping && host_waiters == 0 &&
               nudges == s->queue.front().nudge && now_ms() < s->queue.front().ready_at) {
            progress.wait_for(lock, std::chrono::duration<double, std::milli>(s->queue.front().ready_at - now_ms()));
        }
        if (s->queue.empty()) {
            lock.unlock();
            unregister_worker(slot);
            return;
        }
        Op op = std::move(s->queue.front());
        s->queue.pop_front();
        bool skip = s->ctx->sticky != CUDA_SUCCESS || s->ctx->destroyed;
        lock.unlock();
        if (!skip && op.run) {
            if (slot != nullptr && sigsetjmp(slot->jump, 1) != 0) {
                // The work faulted (the handler cleared in_kernel); a kernel's fibers are abandoned.
                char message[256];
                snprintf(message, sizeof message, "%s: an illegal memory access (at %p) was encountered",
                         op.what, slot->address);
                std::lock_guard<std::mutex> guard(mu);
                fail_context(s->ctx, CUDA_ERROR_ILLEGAL_ADDRESS, message);
            } else {
                if (slot != nullptr) slot->in_kernel.store(1);
                op.run();
                if (slot != nullptr) slot->in_kernel.store(0);
            }
        }
        if (op.cleanup) op.cleanup();
        op = Op{};  // released before taking the lock: it may hold the last reference to a graph's work
        lock.lock();
        s->completed++;
        progress.notify_all();
    }
}

}  // namespace

// ---- the simulator's interface to its other libraries and to benchmarks -------------------------------

EXPORT int jtsim_stream_enqueue(uintptr_t stream, const char* what, void (*fn)(void*), void* arg, void (*cleanup)(void*)) {
    std::unique_lock<std::mutex> lock(mu);
    CUresult error = CUDA_SUCCESS;
    jtsim_context* c = context_or(&error);
    jtsim_stream* s = c ? resolve_stream(c, (CUstream)stream, &error) : nullptr;
    if (s != nullptr) {
        error = enqueue(s, Op{what, [fn, arg] { fn(arg); }, cleanup ? std::function<void()>([cleanup, arg] { cleanup(arg); }) : nullptr});
        if (error == CUDA_SUCCESS) stat_library_calls++;
    }
    lock.unlock();
    if (error != CUDA_SUCCESS && cleanup) cleanup(arg);
    return error;
}

EXPORT int jtsim_check_device_range(uintptr_t address, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    return find_range(address, bytes) != nullptr ? JTSIM_SUCCESS : JTSIM_ERROR_INVALID_VALUE;
}

EXPORT int jtsim_fail(int error, const char* message) {
    std::lock_guard<std::mutex> lock(mu);
    jtsim_context* c = current;
    if (c == nullptr && !primary.empty()) c = primary[0];
    if (c != nullptr) fail_context(c, error, message ? message : "");
    return error;
}

EXPORT const char* jtsim_last_failure(void) {
    std::lock_guard<std::mutex> lock(mu);
    for (jtsim_context* c : primary) {
        if (c != nullptr && c->sticky != CUDA_SUCCESS) return c->sticky_message.c_str();
    }
    return "";
}

EXPORT void jtsim_get_stats(jtsim_stats* out) {
    std::lock_guard<std::mutex> lock(mu);
    out->kernel_launches = stat_launches;
    out->graph_launches = stat_graph_launches;
    out->kernels_run = stat_kernels_run;
    out->library_calls = stat_library_calls;
    out->synchronizations = stat_syncs;
    out->bytes_host_to_device = stat_h2d;
    out->bytes_device_to_host = stat_d2h;
    out->bytes_device_to_device = stat_d2d;
    out->device_allocations = stat_allocs;
    out->device_frees = stat_frees;
    out->device_bytes_in_use = stat_in_use;
    out->device_bytes_peak = stat_peak;
}

EXPORT void jtsim_reset_stats(void) {
    std::lock_guard<std::mutex> lock(mu);
    stat_launches = stat_graph_launches = stat_kernels_run = stat_library_calls = stat_syncs = 0;
    stat_h2d = stat_d2h = stat_d2d = stat_allocs = stat_frees = 0;
    stat_peak = stat_in_use;
}

// ---- initialisation, versions, errors ------------------------------------------------------------------

EXPORT CUresult cuInit(unsigned int flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    if (!initialized) {
        config = read_config();
        primary.assign(config.devices, nullptr);
        device_in_use.assign(config.devices, 0);
        initialized = true;
    }
    return config.devices == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int* version) {
    if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* e = find_error(error);
    *name = e ? e->name : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
    if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* e = find_error(error);
    *text = e ? e->text : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---- devices --------------------------------------------------------------------------------------------

static CUresult check_device(CUdevice d) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    return d >= 0 && d < config.devices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EXPORT CUresult cuDeviceGetCount(int* count) {
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *count = config.devices;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = check_device(ordinal);
    if (r == CUDA_SUCCESS) *device = ordinal;
    return r;
}

EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
    if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = check_device(device);
    if (r != CUDA_SUCCESS) return r;
    snprintf(name, (size_t)length, "jtorch CUDA simulator (sm_%d%d, %d SMs)", config.major, config.minor, config.sms);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = check_device(device);
    if (r == CUDA_SUCCESS) *bytes = config.memory;
    return r;
}

// H200 values where a simulated device has no reason to differ; the SM count and capability configured.
EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = check_device(device);
    if (r != CUDA_SUCCESS) return r;
    switch (attribute) {
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 48 * 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 233472; break;
        case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *value = 65536; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; break;
        case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = 1980000; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = 3201000; break;
        case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *value = 512; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = config.sms; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 6144; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 60 << 20; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = config.major; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = config.minor; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
        case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *value = 1; break;
        case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *value = 2; break;
        case CU_DEVICE_ATTRIBUTE_INTEGRATED: case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = 0; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = device + 1; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = 0; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *value = 2147483647; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

// ---- contexts ---------------------------------------------------------------------------------------------

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
    if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = check_device(device);
    if (r != CUDA_SUCCESS) return r;
    // After a fault, the context stays failed until cuDevicePrimaryCtxReset (as the H200 answered).
    if (primary[device] != nullptr && primary[device]->sticky != CUDA_SUCCESS) return primary[device]->sticky;
    if (primary[device] == nullptr) {
        primary[device] = new jtsim_context();
        primary[device]->device = device;
    }
    primary[device]->retained++;
    *context = primary[device];
    return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice device) {
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = check_device(device);
    if (r != CUDA_SUCCESS) return r;
    if (primary[device] == nullptr || primary[device]->retained == 0) return CUDA_ERROR_INVALID_CONTEXT;
    primary[device]->retained--;  // the context and its memory stay until a reset, as jtorch expects of it
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) { return primary_release(device); }
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) { return primary_release(device); }

// Destroys the primary context's state: its streams stop, its memory is freed; the old handle answers
// CUDA_ERROR_CONTEXT_IS_DESTROYED and the next retain makes a fresh context.
static CUresult primary_reset(CUdevice device) {
    std::unique_lock<std::mutex> lock(mu);
    CUresult r = check_device(device);
    if (r != CUDA_SUCCESS) return r;
    jtsim_context* c = primary[device];
    if (c == nullptr) return CUDA_SUCCESS;
    c->destroyed = true;
    std::vector<jtsim_stream*> owned(c->streams.begin(), c->streams.end());
    std::vector<Op> dropped;  // never run; their cleanups run after the lock (they may take it)
    for (jtsim_stream* s : owned) {
        s->stopping = true;
        for (Op& op : s->queue) dropped.push_back(std::move(op));
        s->queue.clear();
    }
    progress.notify_all();
    lock.unlock();
    for (Op& op : dropped) {
        if (op.cleanup) op.cleanup();
    }
    dropped.clear();
    for (jtsim_stream* s : owned) s->worker.join();
    lock.lock();
    for (jtsim_stream* s : owned) streams.erase(s);
    for (auto it = allocations.begin(); it != allocations.end();) {
        if (it->second.device == device) {
            device_in_use[device] -= it->second.size;
            stat_in_use -= it->second.size;
            free((void*)it->first);
            it = allocations.erase(it);
        } else {
            ++it;
        }
    }
    primary[device] = nullptr;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice device) { return primary_reset(device); }
EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice device) { return primary_reset(device); }

EXPORT CUresult cuCtxSetCurrent(CUcontext context) {
    std::lock_guard<std::mutex> lock(mu);
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    current = context;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext* context) {
    if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *context = current;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    *device = c->device;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
    std::unique_lock<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    if ((r = refuse_during_capture(c)) != CUDA_SUCCESS) return r;
    drain_context(c, lock, "cuCtxSynchronize");
    return c->sticky;
}

// ---- memory -----------------------------------------------------------------------------------------------

EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
    if (free_bytes == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    *total = config.memory;
    *free_bytes = config.memory - device_in_use[c->device];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* out, size_t bytes) {
    if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    std::unique_lock<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    if ((r = refuse_during_capture(c)) != CUDA_SUCCESS) return r;
    if (bytes > config.memory - device_in_use[c->device]) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = nullptr;
    if (posix_memalign(&p, 512, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    allocations[(uintptr_t)p] = Allocation{bytes, c->device};
    device_in_use[c->device] += bytes;
    stat_in_use += bytes;
    stat_peak = std::max(stat_peak, stat_in_use);
    stat_allocs++;
    bool fill = config.fill;
    lock.unlock();
    if (fill) memset(p, 0xff, bytes);
    *out = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

// Frees after the context's work has run (the real cuMemFree synchronises implicitly too).
EXPORT CUresult cuMemFree_v2(CUdeviceptr pointer) {
    if (pointer == 0) return CUDA_SUCCESS;
    std::unique_lock<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    auto it = allocations.find((uintptr_t)pointer);
    if (it == allocations.end() || it->second.device < 0) return CUDA_ERROR_INVALID_VALUE;
    if ((r = refuse_during_capture(c)) != CUDA_SUCCESS) return r;
    drain_context(c, lock, "cuMemFree");
    it = allocations.find((uintptr_t)pointer);
    if (it == allocations.end()) return CUDA_ERROR_INVALID_VALUE;
    device_in_use[it->second.device] -= it->second.size;
    stat_in_use -= it->second.size;
    stat_frees++;
    allocations.erase(it);
    lock.unlock();
    free((void*)(uintptr_t)pointer);
    return CUDA_SUCCESS;
}

static CUresult host_alloc(void** out, size_t bytes) {
    if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    if ((r = refuse_during_capture(c)) != CUDA_SUCCESS) return r;
    void* p = nullptr;
    if (posix_memalign(&p, 4096, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    allocations[(uintptr_t)p] = Allocation{bytes, -1};
    *out = p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost_v2(void** out, size_t bytes) { return host_alloc(out, bytes); }
EXPORT CUresult cuMemHostAlloc(void** out, size_t bytes, unsigned int flags) {
    (void)flags;  // portable, mapped, write-combined: all the same host memory here
    return host_alloc(out, bytes);
}

// With unified addressing a mapped host allocation has the same address on the device (the flags must be 0).
EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* out, void* pointer, unsigned int flags) {
    if (out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    if (context_or(&r) == nullptr) return r;
    const Allocation* a = find_range((uintptr_t)pointer, 1);
    if (a == nullptr || a->device >= 0) return CUDA_ERROR_INVALID_VALUE;
    *out = (CUdeviceptr)(uintptr_t)pointer;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void* pointer) {
    std::unique_lock<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    auto it = allocations.find((uintptr_t)pointer);
    if (it == allocations.end() || it->second.device >= 0) return CUDA_ERROR_INVALID_VALUE;
    if ((r = refuse_during_capture(c)) != CUDA_SUCCESS) return r;
    drain_context(c, lock, "cuMemFreeHost");
    allocations.erase((uintptr_t)pointer);
    lock.unlock();
    free(pointer);
    return CUDA_SUCCESS;
}

static bool is_pinned(const void* p, size_t bytes) {
    const Allocation* a = find_range((uintptr_t)p, bytes);
    return a != nullptr && a->device < 0;
}

// The device range [p, p + bytes) must lie in one live device allocation (or pinned host memory, which a
// device reaches through unified addressing).
static bool device_range_ok(CUdeviceptr p, size_t bytes) {
    return find_range((uintptr_t)p, bytes) != nullptr;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    if (bytes == 0) return CUDA_SUCCESS;
    if (src == nullptr || !device_range_ok(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
    stat_h2d += bytes;
    if (is_pinned(src, bytes)) {
        // Read when the copy runs: reusing the buffer before then races, as on a GPU.
        return enqueue(s, Op{"cuMemcpyHtoDAsync", [dst, src, bytes] { memcpy((void*)(uintptr_t)dst, src, bytes); }, nullptr});
    }
    // Pageable memory: the driver stages it before returning, so the caller may reuse its buffer.
    std::shared_ptr<char[]> staged(new char[bytes]);
    memcpy(staged.get(), src, bytes);
    return enqueue(s, Op{"cuMemcpyHtoDAsync", [dst, staged, bytes] { memcpy((void*)(uintptr_t)dst, staged.get(), bytes); }, nullptr});
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_context* c = call.ctx;
    jtsim_stream* s = call.stream;
    if (bytes == 0) return CUDA_SUCCESS;
    if (dst == nullptr || !device_range_ok(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
    bool pinned = is_pinned(dst, bytes);
    if (!pinned && s->capture) {
        s->capture->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    stat_d2h += bytes;
    CUresult r = enqueue(s, Op{"cuMemcpyDtoHAsync", [dst, src, bytes] { memcpy(dst, (const void*)(uintptr_t)src, bytes); }, nullptr});
    if (r != CUDA_SUCCESS || pinned) return r;
    // Into pageable memory the copy completes before the call returns: a synchronisation.
    drain(s, call.lock, "cuMemcpyDtoHAsync into pageable memory");
    return c->sticky;
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    if (bytes == 0) return CUDA_SUCCESS;
    if (!device_range_ok(dst, bytes) || !device_range_ok(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
    stat_d2d += bytes;
    return enqueue(s, Op{"cuMemcpyDtoDAsync", [dst, src, bytes] {
        memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);
    }, nullptr});
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    if (count == 0) return CUDA_SUCCESS;
    if (!device_range_ok(dst, count)) return CUDA_ERROR_INVALID_VALUE;
    return enqueue(s, Op{"cuMemsetD8Async", [dst, value, count] { memset((void*)(uintptr_t)dst, value, count); }, nullptr});
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    if (count == 0) return CUDA_SUCCESS;
    if (dst % 4 != 0 || count > SIZE_MAX / 4 || !device_range_ok(dst, count * 4)) return CUDA_ERROR_INVALID_VALUE;
    return enqueue(s, Op{"cuMemsetD32Async", [dst, value, count] {
        unsigned int* p = (unsigned int*)(uintptr_t)dst;
        for (size_t i = 0; i < count; i++) p[i] = value;
    }, nullptr});
}

// The synchronous forms: the asynchronous form on the legacy stream, then a wait for it.
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
    CUresult r = cuMemcpyHtoDAsync_v2(dst, src, bytes, nullptr);
    if (r != CUDA_SUCCESS) return r;
    std::unique_lock<std::mutex> lock(mu);
    drain(current->legacy, lock, "cuMemcpyHtoD");
    return current->sticky;
}

EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
    CUresult r = cuMemcpyDtoHAsync_v2(dst, src, bytes, nullptr);
    if (r != CUDA_SUCCESS || bytes == 0) return r;
    std::unique_lock<std::mutex> lock(mu);
    drain(current->legacy, lock, "cuMemcpyDtoH");
    return current->sticky;
}

// ---- streams ------------------------------------------------------------------------------------------

EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
    if (stream == nullptr || (flags & ~1u) != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    *stream = new_stream(c, flags, false);
    return CUDA_SUCCESS;
}

// Work already enqueued still runs (as on a GPU); the call returns at once, the worker ends after it.
EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
    std::unique_lock<std::mutex> lock(mu);
    if (stream == nullptr || streams.count(stream) == 0 || stream->legacy) return CUDA_ERROR_INVALID_HANDLE;
    streams.erase(stream);
    stream->ctx->streams.erase(stream);
    stream->stopping = true;
    progress.notify_all();
    lock.unlock();
    stream->worker.detach();  // it drains the queue, then returns; the stream object stays (a few bytes)
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_context* c = call.ctx;
    jtsim_stream* s = call.stream;
    if (s->capture) {
        s->capture->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    drain(s, call.lock, "cuStreamSynchronize");
    return c->sticky;
}

EXPORT CUresult cuStreamQuery(CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_context* c = call.ctx;
    jtsim_stream* s = call.stream;
    if (s->capture) {
        s->capture->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (c->sticky) return c->sticky;
    if (s->completed < s->enqueued) {
        nudges++;
        progress.notify_all();
        return CUDA_ERROR_NOT_READY;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    if (events.count(event) == 0 || flags != 0) return events.count(event) == 0 ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<CaptureSession> from = event->capture && !event->capture->ended ? event->capture : nullptr;
    if (from != nullptr) {
        // An event recorded in a capture: the waiting stream joins it (a fork) or, already in it, has now
        // waited for the recording stream's work up to the record (a join). Ordering is the list's.
        if (s->capture != nullptr && s->capture != from) {
            s->capture->invalidated = from->invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_MERGE;
        }
        if (s->capture == nullptr) {
            s->capture = from;
            s->captured = s->joined = 0;
            from->members.push_back(s);
        }
        jtsim_stream* recorder = event->captured_on;
        if (recorder != s) recorder->joined = std::max(recorder->joined, event->captured_at);
        return CUDA_SUCCESS;
    }
    uint64_t target = event->records;
    if (target == 0) return CUDA_SUCCESS;  // never recorded: nothing to wait for
    if (s->capture) {
        // A dependency on work outside the capture, unless that work is done.
        if (event->completions < target) {
            s->capture->invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
        }
        return CUDA_SUCCESS;
    }
    return enqueue(s, Op{"cuStreamWaitEvent", [event, target] {
        std::unique_lock<std::mutex> wait(mu);
        wait_for(wait, [&] { return event->completions >= target; }, nullptr);
    }, nullptr});
}

// ---- events ---------------------------------------------------------------------------------------------

EXPORT CUresult cuEventCreate(CUevent* event, unsigned int flags) {
    if (event == nullptr || (flags & ~7u) != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    CUresult r = CUDA_SUCCESS;
    jtsim_context* c = context_or(&r);
    if (c == nullptr) return r;
    jtsim_event* e = new jtsim_event();
    e->ctx = c;
    e->flags = flags;
    events.insert(e);
    *event = e;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent event) {
    std::lock_guard<std::mutex> lock(mu);
    if (events.erase(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
    // The object stays: work already enqueued may still mark it (a few bytes per event).
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    if (events.count(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (s->capture) {
        // An event record node: each replay marks the event. Until the capture ends, a stream that waits on
        // the event joins the capture (see cuStreamWaitEvent).
        CUresult r = enqueue(s, Op{"cuEventRecord", [event] {
            std::lock_guard<std::mutex> mark(mu);
            event->records++;
            event->completions = event->records;
            event->time = now_ms();
            progress.notify_all();
        }, nullptr});
        if (r == CUDA_SUCCESS) {
            event->capture = s->capture;
            event->captured_on = s;
            event->captured_at = s->captured;
        }
        return r;
    }
    event->capture = nullptr;
    uint64_t target = ++event->records;
    return enqueue(s, Op{"cuEventRecord", [event, target] {
        std::lock_guard<std::mutex> mark(mu);
        event->time = now_ms();
        event->completions = std::max(event->completions, target);
        progress.notify_all();
    }, nullptr});
}

// An event last recorded in a capture still under way has no completion to wait for: querying or waiting on
// it conflicts with the capture in every mode; the capture is invalidated. Under mu.
static CUresult refuse_captured_event(jtsim_event* event) {
    if (!event->capture || event->capture->ended) return CUDA_SUCCESS;
    event->capture->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

EXPORT CUresult cuEventQuery(CUevent event) {
    std::lock_guard<std::mutex> lock(mu);
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (events.count(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = refuse_captured_event(event)) return r;
    if (event->ctx->sticky) return event->ctx->sticky;
    if (event->completions < event->records) {
        nudges++;
        progress.notify_all();
        return CUDA_ERROR_NOT_READY;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(CUevent event) {
    std::unique_lock<std::mutex> lock(mu);
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (events.count(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = refuse_captured_event(event)) return r;
    jtsim_context* c = event->ctx;
    uint64_t target = event->records;
    wait_for(lock, [&] { return event->completions >= target || c->sticky != CUDA_SUCCESS || c->destroyed; }, "cuEventSynchronize");
    return c->sticky;
}

static CUresult elapsed(float* ms, CUevent start, CUevent end) {
    if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    if (events.count(start) == 0 || events.count(end) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    if (start->records == 0 || end->records == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (start->completions < start->records || end->completions < end->records) return CUDA_ERROR_NOT_READY;
    *ms = (float)(end->time - start->time);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) { return elapsed(ms, start, end); }
EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) { return elapsed(ms, start, end); }

// ---- modules and launches ---------------------------------------------------------------------------------

// The image the simulated NVRTC produces: this header, then a shared object of the kernels compiled for
// the host. Anything else (real PTX or CUBIN) is refused as CUDA_ERROR_INVALID_IMAGE.
struct ImageHeader {
    char magic[8];   // "JTSIMSO"
    uint64_t size;   // bytes of the shared object that follows
};

EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
    if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    {
        std::lock_guard<std::mutex> lock(mu);
        CUresult r = CUDA_SUCCESS;
        if (context_or(&r) == nullptr) return r;
    }
    ImageHeader header;
    memcpy(&header, image, sizeof header);
    if (memcmp(header.magic, "JTSIMSO", 8) != 0) {
        fprintf(stderr, "jtorch CUDA simulator: cuModuleLoadData: not an image of the simulator's NVRTC (real PTX or CUBIN?)\n");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    char path[] = "/tmp/jtsim-module-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    const char* bytes = (const char*)image + sizeof header;
    size_t written = 0;
    while (written < header.size) {
        ssize_t n = write(fd, bytes + written, header.size - written);
        if (n <= 0) break;
        written += (size_t)n;
    }
    close(fd);
    void* handle = written == header.size ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (handle == nullptr) fprintf(stderr, "jtorch CUDA simulator: cuModuleLoadData: %s\n", dlerror());
    // Mapped now; the file is not needed, except by AddressSanitizer's reports, which read the kernels' names there.
    if (getenv("JTSIM_ASAN") == nullptr) unlink(path);
    if (handle == nullptr) return CUDA_ERROR_INVALID_IMAGE;
    std::lock_guard<std::mutex> lock(mu);
    jtsim_module* m = new jtsim_module();
    m->handle = handle;
    modules.insert(m);
    *module = m;
    return CUDA_SUCCESS;
}

static void release_module(jtsim_module* m) {  // mu held
    if (m->unloaded && m->refs == 0) {
        for (auto& f : m->functions) {
            functions.erase(f.second);
            delete f.second;
        }
        dlclose(m->handle);
        delete m;
    }
}

EXPORT CUresult cuModuleUnload(CUmodule module) {
    std::lock_guard<std::mutex> lock(mu);
    if (modules.erase(module) == 0) return CUDA_ERROR_INVALID_HANDLE;
    module->unloaded = true;
    for (auto& f : module->functions) functions.erase(f.second);
    release_module(module);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
    if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    if (modules.count(module) == 0) return CUDA_ERROR_INVALID_HANDLE;
    auto found = module->functions.find(name);
    if (found != module->functions.end()) {
        *function = found->second;
        return CUDA_SUCCESS;
    }
    std::string n(name);
    jtsim_function* f = new jtsim_function();
    f->module = module;
    f->name = n;
    f->args_size = (size_t (*)())dlsym(module->handle, ("jtsim_args_size_" + n).c_str());
    f->pack = (void (*)(void**, void*))dlsym(module->handle, ("jtsim_pack_" + n).c_str());
    f->unpack = (void (*)(void*))dlsym(module->handle, ("jtsim_unpack_" + n).c_str());
    f->launch = (int (*)(jtsim::LaunchConfig*, const void*))dlsym(module->handle, ("jtsim_launch_" + n).c_str());
    if (!f->args_size || !f->pack || !f->unpack || !f->launch) {
        delete f;
        return CUDA_ERROR_NOT_FOUND;
    }
    module->functions[n] = f;
    functions.insert(f);
    *function = f;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int* value, int attribute, CUfunction function) {
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    if (functions.count(function) == 0) return CUDA_ERROR_INVALID_HANDLE;
    switch (attribute) {
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; return CUDA_SUCCESS;
        case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = 0; return CUDA_SUCCESS;
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = function->max_dynamic_shared; return CUDA_SUCCESS;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
}

EXPORT CUresult cuFuncSetAttribute(CUfunction function, int attribute, int value) {
    std::lock_guard<std::mutex> lock(mu);
    if (functions.count(function) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
    if (value < 0 || value > 232448) return CUDA_ERROR_INVALID_VALUE;
    function->max_dynamic_shared = value;
    return CUDA_SUCCESS;
}

// The limits the H200 enforced at the launch call: block dimensions and size, grid dimensions, dynamic
// shared memory within the function's allowance.
static bool launch_geometry_ok(unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                               unsigned int bz, unsigned int shared, const jtsim_function* f) {
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return false;
    if (gx > 2147483647u || gy > 65535 || gz > 65535) return false;
    if (bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024) return false;
    return shared <= (unsigned int)f->max_dynamic_shared;
}

EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params,
                               void** extra) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_context* c = call.ctx;
    jtsim_stream* s = call.stream;
    if (functions.count(function) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (extra != nullptr) return CUDA_ERROR_NOT_SUPPORTED;  // only the kernelParams form is simulated
    if (!launch_geometry_ok(gx, gy, gz, bx, by, bz, shared, function)) return CUDA_ERROR_INVALID_VALUE;
    size_t size = function->args_size();
    if (size > 0 && params == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::call_once(handlers_installed, install_fault_handlers);
    // Arguments are copied at the call, as the real driver does: the caller may reuse its array at once.
    char* packed = (char*)malloc(size == 0 ? 1 : size);
    function->pack(params, packed);
    jtsim_function* f = function;
    f->module->refs++;
    unsigned int threads = bx * by * bz;
    stat_launches++;
    jtsim_context* ctx = c;
    return enqueue(s, Op{f->name.c_str(), [f, ctx, packed, gx, gy, gz, bx, by, bz, shared, threads] {
        std::vector<void*>& stacks = worker_stacks.stacks;
        while (stacks.size() < threads) {
            void* stack = new_stack();
            if (stack == nullptr) {
                std::lock_guard<std::mutex> guard(mu);
                fail_context(ctx, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, f->name + ": no memory for the block's thread stacks");
                return;
            }
            stacks.push_back(stack);
        }
        jtsim::LaunchConfig config{};
        config.grid[0] = gx, config.grid[1] = gy, config.grid[2] = gz;
        config.block[0] = bx, config.block[1] = by, config.block[2] = bz;
        config.dynamic_shared = shared;
        config.stacks = stacks.data();
        config.stack_size = STACK_SIZE;
        stat_kernels_run++;
        int result = f->launch(&config, packed);
        if (result != 0) {
            std::lock_guard<std::mutex> guard(mu);
            fail_context(ctx, result, config.error);
        }
    }, [f, packed] {
        f->unpack(packed);
        free(packed);
        std::lock_guard<std::mutex> guard(mu);
        f->module->refs--;
        release_module(f->module);
    }});
}

// ---- stream capture and graphs -------------------------------------------------------------------------

static CUresult begin_capture(CUstream stream, int mode) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    if (s->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->capture) return 401;  // CUDA_ERROR_ILLEGAL_STATE
    if (mode < 0 || mode > 2) return CUDA_ERROR_INVALID_VALUE;
    s->capture = std::make_shared<CaptureSession>();
    s->capture->mode = mode;
    s->capture->thread = std::this_thread::get_id();
    s->capture->origin = s;
    s->capture->members.push_back(s);
    s->captured = s->joined = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, int mode) { return begin_capture(stream, mode); }
EXPORT CUresult cuStreamBeginCapture(CUstream stream, int mode) { return begin_capture(stream, mode); }

// Ends the capture begun on `stream`: every stream that joined it must have been waited on after its last
// captured work (else CUDA_ERROR_STREAM_CAPTURE_UNJOINED); all of them stop capturing either way.
EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Capture> work;  // declared first: work not made into a graph is released after the lock
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    if (!s->capture) return 401;  // CUDA_ERROR_ILLEGAL_STATE: not capturing
    if (s->capture->origin != s) {
        s->capture->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    std::shared_ptr<CaptureSession> session = s->capture;
    bool unjoined = false;
    for (jtsim_stream* m : session->members) {
        if (m != s && m->captured > m->joined) unjoined = true;
        m->capture.reset();
    }
    session->ended = true;
    work = std::move(session->work);  // events recorded in the capture keep the session, not its work
    *graph = nullptr;
    if (session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (unjoined) return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    jtsim_graph* g = new jtsim_graph{work};
    graphs.insert(g);
    *graph = g;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamIsCapturing(CUstream stream, int* status) {
    if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_stream* s = call.stream;
    *status = !s->capture ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

// Sets the calling thread's capture interaction mode to *mode and returns the previous one there.
EXPORT CUresult cuThreadExchangeStreamCaptureMode(int* mode) {
    if (mode == nullptr || *mode < 0 || *mode > 2) return CUDA_ERROR_INVALID_VALUE;
    int previous = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = previous;
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec* exec, CUgraph graph) {
    if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    if (graphs.count(graph) == 0) return CUDA_ERROR_INVALID_HANDLE;
    jtsim_graph_exec* e = new jtsim_graph_exec{graph->capture};
    graph_execs.insert(e);
    *exec = e;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
    (void)flags;
    return instantiate(exec, graph);
}
EXPORT CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
    (void)flags;
    return instantiate(exec, graph);
}
EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* error_node, char* log, size_t log_size) {
    (void)error_node;
    if (log != nullptr && log_size > 0) log[0] = 0;
    return instantiate(exec, graph);
}

EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
    StreamCall call(stream);
    if (call.stream == nullptr) return call.error;
    jtsim_context* c = call.ctx;
    jtsim_stream* s = call.stream;
    if (graph_execs.count(exec) == 0) return CUDA_ERROR_INVALID_HANDLE;
    std::shared_ptr<Capture> capture = exec->capture;
    stat_graph_launches++;
    jtsim_context* ctx = c;
    return enqueue(s, Op{"cuGraphLaunch", [capture, ctx] {
        for (Op& op : capture->ops) {
            {
                std::lock_guard<std::mutex> guard(mu);
                if (ctx->sticky != CUDA_SUCCESS) return;  // the rest of the graph does not run after a fault
            }
            if (op.run) op.run();
        }
    }, nullptr});
}

// The captured work is released after the lock: its cleanups (a launch's arguments, a library's job) take it.
EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
    std::shared_ptr<Capture> released;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (graph_execs.erase(exec) == 0) return CUDA_ERROR_INVALID_HANDLE;
        released = std::move(exec->capture);  // queued launches hold their own reference
        delete exec;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(CUgraph graph) {
    std::shared_ptr<Capture> released;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (graphs.erase(graph) == 0) return CUDA_ERROR_INVALID_HANDLE;
        released = std::move(graph->capture);
        delete graph;
    }
    return CUDA_SUCCESS;
}
