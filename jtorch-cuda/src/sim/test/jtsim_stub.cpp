// A stand-in for the simulated driver (libcuda.so.1) with just the jtsim.h interface, for testing the
// simulated libraries alone. Device memory is what the test registers; work runs at once on the
// calling thread, or, when deferred, when the test drains the queue; jtsim_fail records a sticky
// error as the driver does, until the test resets it.
#include "../jtsim.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Work {
    void (*fn)(void*);
    void* arg;
    void (*cleanup)(void*);
};

std::mutex mu;
std::map<uintptr_t, size_t> allocations;  // start -> bytes
int stickyError = JTSIM_SUCCESS;
std::string failure;
bool deferred = false;
std::vector<Work> queue;
int enqueued = 0, ran = 0, cleanedUp = 0;

// The stream handle the stub treats as invalid.
constexpr uintptr_t kBadStream = 0xbad;

void finish(const Work& w, bool runIt) {
    if (runIt) {
        w.fn(w.arg);
        std::lock_guard<std::mutex> lock(mu);
        ++ran;
    }
    if (w.cleanup != nullptr) w.cleanup(w.arg);
    std::lock_guard<std::mutex> lock(mu);
    ++cleanedUp;
}

}  // namespace

extern "C" {

int jtsim_stream_enqueue(uintptr_t stream, const char* what, void (*fn)(void* arg), void* arg, void (*cleanup)(void* arg)) {
    (void)what;
    Work w{fn, arg, cleanup};
    int error = JTSIM_SUCCESS;
    {
        std::lock_guard<std::mutex> lock(mu);
        ++enqueued;
        if (stream == kBadStream) {
            error = JTSIM_ERROR_INVALID_HANDLE;
        } else if (stickyError != JTSIM_SUCCESS) {
            error = stickyError;
        } else if (deferred) {
            queue.push_back(w);
            return JTSIM_SUCCESS;
        }
    }
    finish(w, error == JTSIM_SUCCESS);
    return error;
}

int jtsim_check_device_range(uintptr_t address, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = allocations.upper_bound(address);
    if (it == allocations.begin()) return JTSIM_ERROR_INVALID_VALUE;
    --it;
    uintptr_t start = it->first, end = it->first + it->second;
    return address >= start && address <= end && bytes <= end - address ? JTSIM_SUCCESS : JTSIM_ERROR_INVALID_VALUE;
}

int jtsim_fail(int error, const char* message) {
    std::lock_guard<std::mutex> lock(mu);
    if (stickyError == JTSIM_SUCCESS) {
        stickyError = error;
        failure = message;
    }
    return error;
}

const char* jtsim_last_failure(void) {
    std::lock_guard<std::mutex> lock(mu);
    return stickyError == JTSIM_SUCCESS ? "" : failure.c_str();
}

// ---- test hooks (not part of jtsim.h) ------------------------------------------------------------

void jtsim_stub_register(const void* address, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    allocations[reinterpret_cast<uintptr_t>(address)] = bytes;
}

void jtsim_stub_unregister(const void* address) {
    std::lock_guard<std::mutex> lock(mu);
    allocations.erase(reinterpret_cast<uintptr_t>(address));
}

// The sticky error (0 when none), cleared by jtsim_stub_reset.
int jtsim_stub_error(void) {
    std::lock_guard<std::mutex> lock(mu);
    return stickyError;
}

void jtsim_stub_reset(void) {
    std::lock_guard<std::mutex> lock(mu);
    stickyError = JTSIM_SUCCESS;
    failure.clear();
}

void jtsim_stub_set_deferred(int on) {
    std::lock_guard<std::mutex> lock(mu);
    deferred = on != 0;
}

// Runs the deferred work in order; after a failure the rest is dropped (cleaned up, not run).
void jtsim_stub_drain(void) {
    std::vector<Work> pending;
    {
        std::lock_guard<std::mutex> lock(mu);
        pending.swap(queue);
    }
    for (const Work& w : pending) finish(w, jtsim_stub_error() == JTSIM_SUCCESS);
}

void jtsim_stub_counts(int* enqueuedOut, int* ranOut, int* cleanedUpOut) {
    std::lock_guard<std::mutex> lock(mu);
    *enqueuedOut = enqueued;
    *ranOut = ran;
    *cleanedUpOut = cleanedUp;
}

}  // extern "C"
