// The CUDA simulator's kernel runtime: what a CUDA C++ source needs to compile for the host with g++ and
// run under the simulated driver. The simulated NVRTC (nvrtc.cpp) force-includes this header before the
// source, then appends JTSIM_ENTRY(name) for every __global__ function it found, which exports the
// entry's argument packing and its grid launcher (jtsim_entry.h).
//
// Execution model. A launch runs on the stream's worker thread, block after block. The threads of one
// block are fibers on that worker thread, switched by hand-written code (no system call): a fiber runs
// until it waits at __syncthreads or at a warp operation, or ends. So every thread of a block can wait
// at a barrier; a warp's lanes meet at each shuffle, ballot or __syncwarp, as in lock step there.
// __shared__ variables are thread-local to the worker, so one block's fibers share them and
// concurrent launches on other streams do not. A barrier that can never be passed (some threads wait
// at __syncthreads while the others wait at a warp operation or at another barrier) fails the launch
// with CUDA_ERROR_LAUNCH_FAILED naming the kernel, where a GPU would hang or be undefined.
//
// Arithmetic: the _rn intrinsics are IEEE operations (g++ for generic x86-64 contracts nothing into an
// FMA); math functions are glibc's, a few ulps from CUDA's, as the conformance tolerances allow.
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include "jtsim_launch.h"

// ---- qualifiers -------------------------------------------------------------------------------------

#define __global__ __attribute__((used, noinline))
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))
#define __constant__ static const
#define __managed__

// ---- built-in variables -------------------------------------------------------------------------------

struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace jtsim {

// The launch a worker is running and the fiber it is running now.
struct Fiber;
struct BlockRun;
inline thread_local Fiber* current = nullptr;
inline thread_local BlockRun* block = nullptr;

}  // namespace jtsim

#define threadIdx (jtsim::current_thread_idx())
#define blockIdx (jtsim::current_block_idx())
#define blockDim (jtsim::current_block_dim())
#define gridDim (jtsim::current_grid_dim())
#define warpSize 32

// ---- the fibers ---------------------------------------------------------------------------------------

// jtsim_fiber_switch(save, load): saves the callee-saved registers and the floating-point control words on
// the current stack, stores the stack pointer to *save, continues on stack `load` (System V x86-64).
__asm__(
    ".text\n"
    ".globl jtsim_fiber_switch\n"
    ".hidden jtsim_fiber_switch\n"
    ".type jtsim_fiber_switch,@function\n"
    "jtsim_fiber_switch:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  subq $16, %rsp\n"
    "  stmxcsr (%rsp)\n"
    "  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n"
    "  fldcw 4(%rsp)\n"
    "  addq $16, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size jtsim_fiber_switch, .-jtsim_fiber_switch\n");
extern "C" void jtsim_fiber_switch(void** save, void* load);

namespace jtsim {

enum class State : unsigned char { NEW, READY, RUNNING, AT_BARRIER, AT_WARP, DONE };

struct Fiber {
    void* sp;
    void* stack;
    uint3 idx;
    unsigned int linear;
    State state;
};

// One warp's meeting point: values published by the lanes that arrived, and the snapshot the last
// arrival takes for everyone (safe to reuse: a lane reads it before it can arrive again).
struct Warp {
    unsigned int arrived;
    unsigned long long values[32];
    unsigned long long snapshot[32];
    unsigned int ballot;
    unsigned int ballot_result;
};

struct BlockRun {
    const LaunchConfig* config;
    uint3 block_idx, block_dim, grid_dim;
    unsigned int threads;
    Fiber* fibers;
    Warp* warps;
    unsigned int alive;            // threads not yet ended
    unsigned int at_barrier;       // threads waiting at __syncthreads
    void* scheduler_sp;
    void (*body)(const void* args);
    const void* args;
    const char* kernel;
    bool failed;
#if defined(__SANITIZE_ADDRESS__)
    void* fake_stack;
    const void* scheduler_stack_bottom;
    size_t scheduler_stack_size;
#endif
};

// Dynamic shared memory (`extern __shared__ T name[];`, which the simulated NVRTC rewrites into a pointer to
// this): one buffer per worker thread, as large as a block may ask for, so its address never changes; like
// static __shared__ variables, a block's fibers share it and other streams' launches have their own.
inline void* dynamic_shared() {
    static thread_local void* buffer = nullptr;
    if (buffer == nullptr) {
        buffer = aligned_alloc(256, 232448);  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN on sm_90
        if (buffer == nullptr) abort();
    }
    return buffer;
}

inline uint3 current_thread_idx() { return current->idx; }
inline uint3 current_block_idx() { return block->block_idx; }
inline uint3 current_block_dim() { return block->block_dim; }
inline uint3 current_grid_dim() { return block->grid_dim; }

inline void switch_to_scheduler(Fiber* f) {
    BlockRun* b = block;
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_start_switch_fiber(f->state == State::DONE ? nullptr : &b->fake_stack, b->scheduler_stack_bottom,
                                   b->scheduler_stack_size);
#endif
    jtsim_fiber_switch(&f->sp, b->scheduler_sp);
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(b->fake_stack, nullptr, nullptr);
#endif
}

// Marks every fiber waiting at __syncthreads ready; the barrier is passed.
inline void release_barrier(BlockRun* b) {
    for (unsigned int i = 0; i < b->threads; i++) {
        if (b->fibers[i].state == State::AT_BARRIER) b->fibers[i].state = State::READY;
    }
    b->at_barrier = 0;
}

inline void sync_block() {
    BlockRun* b = block;
    Fiber* f = current;
    if (++b->at_barrier == b->alive) {
        release_barrier(b);
        return;
    }
    f->state = State::AT_BARRIER;
    switch_to_scheduler(f);
}

// The lanes of f's warp that take part in a warp operation with `mask`: in the mask, existing, not ended.
inline unsigned int warp_participants(BlockRun* b, unsigned int warp, unsigned int mask) {
    unsigned int lanes = 0;
    for (unsigned int lane = 0; lane < 32; lane++) {
        unsigned int t = warp * 32 + lane;
        if (t < b->threads && (mask >> lane & 1u) && b->fibers[t].state != State::DONE) lanes |= 1u << lane;
    }
    return lanes;
}

// Every participating lane has arrived: snapshot the values and votes, wake the waiting lanes.
inline void pass_warp(BlockRun* b, unsigned int warp, Warp* w, unsigned int lanes) {
    memcpy(w->snapshot, w->values, sizeof w->values);
    w->ballot_result = w->ballot & lanes;
    for (unsigned int l = 0; l < 32 && warp * 32 + l < b->threads; l++) {
        Fiber* lane = &b->fibers[warp * 32 + l];
        if (lane->state == State::AT_WARP) lane->state = State::READY;
    }
    w->arrived = 0;
    w->ballot = 0;
}

// Publishes `value` (and the ballot bit `vote`) for f's lane and waits until every participating lane of
// the warp has done the same; then the warp's snapshot holds all values and ballot_result the votes.
inline Warp* warp_meet(unsigned int mask, unsigned long long value, bool vote) {
    BlockRun* b = block;
    Fiber* f = current;
    unsigned int warp = f->linear / 32, lane = f->linear % 32;
    Warp* w = &b->warps[warp];
    w->values[lane] = value;
    w->arrived |= 1u << lane;
    if (vote) w->ballot |= 1u << lane;
    unsigned int lanes = warp_participants(b, warp, mask | (1u << lane));
    if ((w->arrived & lanes) == lanes) {
        pass_warp(b, warp, w, lanes);
        return w;
    }
    f->state = State::AT_WARP;
    switch_to_scheduler(f);
    return w;
}

template <typename T> inline unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof v);
    return bits;
}

template <typename T> inline T from_bits(unsigned long long bits) {
    T v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

// A shuffle reading lane `source` of the caller's width-wide segment (the caller's own value when out of it).
template <typename T> inline T shuffle(unsigned int mask, T value, int source, bool in_segment) {
    unsigned int lane = current->linear % 32;
    Warp* w = warp_meet(mask, to_bits(value), false);
    return in_segment ? from_bits<T>(w->snapshot[source & 31]) : from_bits<T>(w->snapshot[lane]);
}

// Runs f's thread body; called on f's own stack and never returns (the fiber ends by switching away).
inline void fiber_main() {
    BlockRun* b = block;
    Fiber* f = current;
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(nullptr, &b->scheduler_stack_bottom, &b->scheduler_stack_size);
#endif
    b->body(b->args);
    f->state = State::DONE;
    b->alive--;
    if (b->at_barrier > 0 && b->at_barrier == b->alive) release_barrier(b);
    // Lanes waiting for this one at a warp operation no longer wait for it.
    unsigned int warp = f->linear / 32;
    Warp* w = &b->warps[warp];
    if (w->arrived != 0) {
        unsigned int lanes = warp_participants(b, warp, 0xffffffffu);
        if ((w->arrived & lanes) == lanes) pass_warp(b, warp, w, lanes);
    }
    switch_to_scheduler(f);
    __builtin_unreachable();
}

extern "C" inline void jtsim_fiber_entry() {
    fiber_main();
}

// A new fiber's stack: jtsim_fiber_switch's frame (control words, six registers) with the entry as the
// return address, laid out so that the entry starts with the stack aligned as after a call.
inline void* initial_stack(void* stack, size_t size) {
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    uintptr_t sp = top - 80;
    unsigned int* control = (unsigned int*)sp;
    __asm__ volatile("stmxcsr %0" : "=m"(control[0]));
    __asm__ volatile("fnstcw %0" : "=m"(*(unsigned short*)&control[1]));
    void** frame = (void**)(sp + 16);
    for (int i = 0; i < 6; i++) frame[i] = nullptr;  // r15, r14, r13, r12, rbx, rbp
    frame[6] = (void*)&jtsim_fiber_entry;
    return (void*)sp;
}

// Runs one block to its end. Returns false (and writes the message) when its threads can make no progress.
inline bool run_block(BlockRun* b) {
    b->alive = b->threads;
    b->at_barrier = 0;
    for (unsigned int w = 0; w < (b->threads + 31) / 32; w++) {
        b->warps[w].arrived = 0;
        b->warps[w].ballot = 0;
    }
    unsigned int bx = b->block_dim.x, by = b->block_dim.y;
    for (unsigned int i = 0; i < b->threads; i++) {
        Fiber* f = &b->fibers[i];
        f->state = State::NEW;
        f->linear = i;
        f->idx = uint3{i % bx, i / bx % by, i / (bx * by)};
        f->stack = b->config->stacks[i];
    }
    block = b;
    for (;;) {
        bool progress = false, all_done = true;
        for (unsigned int i = 0; i < b->threads; i++) {
            Fiber* f = &b->fibers[i];
            if (f->state == State::NEW) {
                f->sp = initial_stack(f->stack, b->config->stack_size);
            } else if (f->state != State::READY) {
                if (f->state != State::DONE) all_done = false;
                continue;
            }
            f->state = State::RUNNING;
            current = f;
            progress = true;
#if defined(__SANITIZE_ADDRESS__)
            __sanitizer_start_switch_fiber(&b->fake_stack, f->stack, b->config->stack_size);
#endif
            jtsim_fiber_switch(&b->scheduler_sp, f->sp);
#if defined(__SANITIZE_ADDRESS__)
            __sanitizer_finish_switch_fiber(b->fake_stack, nullptr, nullptr);
#endif
            if (f->state != State::DONE) all_done = false;
        }
        if (all_done) return true;
        if (!progress) {
            unsigned int at_barrier = 0, at_warp = 0;
            for (unsigned int i = 0; i < b->threads; i++) {
                at_barrier += b->fibers[i].state == State::AT_BARRIER;
                at_warp += b->fibers[i].state == State::AT_WARP;
            }
            snprintf(((LaunchConfig*)b->config)->error, sizeof b->config->error,
                     "%s: block (%u, %u, %u) cannot go on: %u threads wait at __syncthreads, %u at a warp operation, "
                     "%u ended (a barrier not reached by every thread)", b->kernel, b->block_idx.x, b->block_idx.y,
                     b->block_idx.z, at_barrier, at_warp, b->threads - b->alive);
            return false;
        }
    }
}

// Runs every block of a launch in order. Returns 0, or CUDA_ERROR_LAUNCH_FAILED (719) with config->error.
inline int run_grid(LaunchConfig* config, const char* kernel, void (*body)(const void*), const void* args) {
    unsigned int threads = config->block[0] * config->block[1] * config->block[2];
    Fiber* fibers = new Fiber[threads];
    Warp* warps = new Warp[(threads + 31) / 32];
    BlockRun b{};
    b.config = config;
    b.block_dim = uint3{config->block[0], config->block[1], config->block[2]};
    b.grid_dim = uint3{config->grid[0], config->grid[1], config->grid[2]};
    b.threads = threads;
    b.fibers = fibers;
    b.warps = warps;
    b.body = body;
    b.args = args;
    b.kernel = kernel;
    int result = 0;
    for (unsigned int z = 0; z < config->grid[2] && result == 0; z++) {
        for (unsigned int y = 0; y < config->grid[1] && result == 0; y++) {
            for (unsigned int x = 0; x < config->grid[0] && result == 0; x++) {
                b.block_idx = uint3{x, y, z};
                if (!run_block(&b)) result = 719;
            }
        }
    }
    block = nullptr;
    current = nullptr;
    delete[] fibers;
    delete[] warps;
    return result;
}

// The launcher of kernel F: arguments packed as a tuple of their decayed types, each thread calling F.
template <typename... A> struct Entry {
    using Args = std::tuple<std::decay_t<A>...>;
    template <size_t... I> static void pack(void** params, void* out, std::index_sequence<I...>) {
        new (out) Args(*static_cast<const std::decay_t<A>*>(params[I])...);
    }
};

template <typename... A> Entry<A...> entry_of(void (*)(A...));

}  // namespace jtsim

// ---- synchronisation and warp operations --------------------------------------------------------------

inline void __syncthreads() { jtsim::sync_block(); }
inline void __syncwarp(unsigned int mask = 0xffffffffu) { jtsim::warp_meet(mask, 0, false); }
inline unsigned int __activemask() { return jtsim::warp_participants(jtsim::block, jtsim::current->linear / 32, 0xffffffffu); }
inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
    return jtsim::warp_meet(mask, 0, predicate != 0)->ballot_result;
}
inline int __any_sync(unsigned int mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned int mask, int predicate) {
    unsigned int lanes = jtsim::warp_participants(jtsim::block, jtsim::current->linear / 32, mask | (1u << (jtsim::current->linear % 32)));
    return __ballot_sync(mask, predicate) == lanes;
}

template <typename T> inline T __shfl_sync(unsigned int mask, T value, int source, int width = 32) {
    int lane = (int)(jtsim::current->linear % 32), base = lane / width * width;
    return jtsim::shuffle(mask, value, base + ((source % width) + width) % width, true);
}
template <typename T> inline T __shfl_down_sync(unsigned int mask, T value, unsigned int delta, int width = 32) {
    int lane = (int)(jtsim::current->linear % 32), base = lane / width * width;
    int source = lane + (int)delta;
    return jtsim::shuffle(mask, value, source, source < base + width);
}
template <typename T> inline T __shfl_up_sync(unsigned int mask, T value, unsigned int delta, int width = 32) {
    int lane = (int)(jtsim::current->linear % 32), base = lane / width * width;
    int source = lane - (int)delta;
    return jtsim::shuffle(mask, value, source, source >= base);
}
template <typename T> inline T __shfl_xor_sync(unsigned int mask, T value, int lane_mask, int width = 32) {
    int lane = (int)(jtsim::current->linear % 32), base = lane / width * width;
    int source = lane ^ lane_mask;
    return jtsim::shuffle(mask, value, source, source >= base && source < base + width);
}

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <typename T> inline T __ldg(const T* p) { return *p; }

// ---- atomics (fibers of one block never run at once; other streams' kernels may) ------------------

template <typename T> inline T jtsim_atomic_add(T* address, T value) { return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST); }
template <typename T> inline T jtsim_atomic_float_op(T* address, T value, int op) {
    T old, next;
    __atomic_load(address, &old, __ATOMIC_SEQ_CST);
    do {
        next = op == 0 ? (T)(old + value) : op == 1 ? (value < old ? value : old) : (value > old ? value : old);
    } while (!__atomic_compare_exchange(address, &old, &next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}

inline int atomicAdd(int* a, int v) { return jtsim_atomic_add(a, v); }
inline unsigned int atomicAdd(unsigned int* a, unsigned int v) { return jtsim_atomic_add(a, v); }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) { return jtsim_atomic_add(a, v); }
inline long long atomicAdd(long long* a, long long v) { return jtsim_atomic_add(a, v); }
inline float atomicAdd(float* a, float v) { return jtsim_atomic_float_op(a, v, 0); }
inline double atomicAdd(double* a, double v) { return jtsim_atomic_float_op(a, v, 0); }
inline int atomicSub(int* a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
inline unsigned int atomicSub(unsigned int* a, unsigned int v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
template <typename T> inline T atomicMin(T* a, T v) { return jtsim_atomic_float_op(a, v, 1); }
template <typename T> inline T atomicMax(T* a, T v) { return jtsim_atomic_float_op(a, v, 2); }
template <typename T> inline T atomicExch(T* a, T v) {
    T old;
    __atomic_exchange(a, &v, &old, __ATOMIC_SEQ_CST);
    return old;
}
template <typename T> inline T atomicCAS(T* a, T compare, T value) {
    __atomic_compare_exchange(a, &compare, &value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return compare;  // the old value: unchanged on success, the current one on failure
}
template <typename T> inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }
template <typename T> inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }
template <typename T> inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }

// ---- intrinsics -----------------------------------------------------------------------------------

inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
inline long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }
inline double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }

// Volatile keeps each operation a separately rounded IEEE operation whatever the optimiser does.
inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
inline float __fsub_rn(float a, float b) { volatile float r = a - b; return r; }
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline float __fdiv_rn(float a, float b) { volatile float r = a / b; return r; }
inline float __frcp_rn(float a) { volatile float r = 1.0f / a; return r; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
inline double __dsub_rn(double a, double b) { volatile double r = a - b; return r; }
inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
inline double __ddiv_rn(double a, double b) { volatile double r = a / b; return r; }
inline double __drcp_rn(double a) { volatile double r = 1.0 / a; return r; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float a) { return expf(a); }
inline float __logf(float a) { return logf(a); }
inline float __sinf(float a) { return sinf(a); }
inline float __cosf(float a) { return cosf(a); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __saturatef(float a) { return a != a ? 0.0f : a < 0.0f ? 0.0f : a > 1.0f ? 1.0f : a; }
inline float rsqrtf(float a) { return 1.0f / sqrtf(a); }
inline double rsqrt(double a) { return 1.0 / sqrt(a); }
inline float exp10f(float a) { return powf(10.0f, a); }

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }

// CUDA's overloaded min/max for mixed integer and floating arguments.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;

#include "jtsim_entry.h"
