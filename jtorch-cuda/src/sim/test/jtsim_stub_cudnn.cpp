// A stand-in for the simulated driver (libcuda.so.1) for cudnn_test: the four jtsim_* functions of
// jtsim.h, plus hooks for the test. Enqueued work runs at once on the caller's thread; "device memory" is
// whatever blocks the test registers; a failure is sticky, as the driver's: later enqueues return it.
#include "../jtsim.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace {
std::mutex mutex;
std::map<uintptr_t, size_t> blocks;  // start -> bytes
int stickyError = JTSIM_SUCCESS;
std::string failure;
}  // namespace

extern "C" {

// The stream value the test uses for a stream that does not exist.
const uintptr_t JTSIM_STUB_BAD_STREAM = 0xbad;

int jtsim_stream_enqueue(uintptr_t stream, const char*, void (*fn)(void*), void* arg, void (*cleanup)(void*)) {
    int error;
    {
        std::lock_guard<std::mutex> lock(mutex);
        error = stickyError != JTSIM_SUCCESS ? stickyError : stream == JTSIM_STUB_BAD_STREAM ? JTSIM_ERROR_INVALID_HANDLE : JTSIM_SUCCESS;
    }
    if (error == JTSIM_SUCCESS) fn(arg);
    if (cleanup != nullptr) cleanup(arg);
    return error;
}

int jtsim_check_device_range(uintptr_t address, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = blocks.upper_bound(address);
    if (it == blocks.begin()) return JTSIM_ERROR_INVALID_VALUE;
    --it;  // the last block starting at or below address
    uintptr_t end = it->first + it->second;
    return address <= end && bytes <= end - address ? JTSIM_SUCCESS : JTSIM_ERROR_INVALID_VALUE;
}

int jtsim_fail(int error, const char* message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (stickyError == JTSIM_SUCCESS) {
        stickyError = error;
        failure = message;
    }
    return error;
}

const char* jtsim_last_failure(void) {
    std::lock_guard<std::mutex> lock(mutex);
    return failure.c_str();
}

// ---- test hooks ----

void jtsim_stub_add_block(const void* start, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    blocks[uintptr_t(start)] = bytes;
}

void jtsim_stub_remove_block(const void* start) {
    std::lock_guard<std::mutex> lock(mutex);
    blocks.erase(uintptr_t(start));
}

// Clears the sticky failure (the driver's context reset).
void jtsim_stub_reset(void) {
    std::lock_guard<std::mutex> lock(mutex);
    stickyError = JTSIM_SUCCESS;
    failure.clear();
}

}  // extern "C"
