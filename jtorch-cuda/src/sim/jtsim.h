// The CUDA simulator's internal interface: what its driver library (libcuda.so.1) exports to the other
// simulated libraries (cuBLASLt, cuDNN, NCCL), which link against it. jtorch itself never sees these
// names: it binds the public CUDA entry points only.
//
// Device memory is host memory: a device pointer is the address of a block the simulated driver
// allocated, so library code reads and writes it directly, after checking the range here.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// CUresult values the libraries report (the real driver's numbers).
#define JTSIM_SUCCESS 0
#define JTSIM_ERROR_INVALID_VALUE 1
#define JTSIM_ERROR_NOT_INITIALIZED 3
#define JTSIM_ERROR_INVALID_CONTEXT 201
#define JTSIM_ERROR_INVALID_HANDLE 400
#define JTSIM_ERROR_ILLEGAL_ADDRESS 700
#define JTSIM_ERROR_LAUNCH_FAILED 719

// Runs fn(arg) on `stream` (a CUstream of the current context; 0 is the legacy default stream) after
// the work already enqueued there, asynchronously, on the stream's worker thread; then cleanup(arg)
// when cleanup is not null (also when the work is dropped because the context has failed). `what`
// names the call in error messages ("cublasLtMatmul"). While the stream is being captured, the call
// is recorded into the graph instead and runs at each launch of it (cleanup then runs when the graph
// is destroyed). Returns JTSIM_SUCCESS, or the error the driver would return for the stream
// (invalid handle, the context's sticky error); on an error fn never runs and cleanup runs at once.
int jtsim_stream_enqueue(uintptr_t stream, const char* what, void (*fn)(void* arg), void* arg, void (*cleanup)(void* arg));

// JTSIM_SUCCESS when [address, address + bytes) lies inside one live device allocation (bytes 0:
// address inside or at the end of one), else JTSIM_ERROR_INVALID_VALUE.
int jtsim_check_device_range(uintptr_t address, size_t bytes);

// Called from work running on a stream that found an error a real GPU would raise there (an
// operand outside any allocation is CUDA_ERROR_ILLEGAL_ADDRESS): records it as the context's sticky
// error with `message` (which names the call and the operand), returned by every later call, as a
// faulting kernel does on a GPU. Returns `error`.
int jtsim_fail(int error, const char* message);

// The message of the context's sticky error, or "" when there is none (for tests and logs).
const char* jtsim_last_failure(void);

// What the simulated GPU did since the process started (or since jtsim_reset_stats): the counts a GPU
// profiler would give, exact here. Read by `jtorch bench gpu-sim` through FFM.
typedef struct jtsim_stats {
    uint64_t kernel_launches;         // cuLaunchKernel calls accepted
    uint64_t graph_launches;          // cuGraphLaunch calls accepted
    uint64_t kernels_run;             // kernel grids executed (graph replays included)
    uint64_t library_calls;           // work enqueued by cuBLASLt, cuDNN, NCCL
    uint64_t synchronizations;        // synchronising calls: stream, context and event synchronizations,
                                      // cuMemFree(Host), copies into pageable host memory (JTSIM_TRACE=1 names each)
    uint64_t bytes_host_to_device;
    uint64_t bytes_device_to_host;
    uint64_t bytes_device_to_device;
    uint64_t device_allocations;      // cuMemAlloc calls that succeeded
    uint64_t device_frees;
    uint64_t device_bytes_in_use;
    uint64_t device_bytes_peak;       // since the start or the last reset
} jtsim_stats;

void jtsim_get_stats(jtsim_stats* out);

// Zeroes the counters; the peak restarts from the bytes in use.
void jtsim_reset_stats(void);

#ifdef __cplusplus
}
#endif
