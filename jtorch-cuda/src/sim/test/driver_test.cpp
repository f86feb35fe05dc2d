// The simulated driver's stream capture and graphs (the thread's capture mode, the calls a capture refuses), its
// barrier-deadlock report and a context reset, through the public CUDA and NVRTC APIs (jtorch's CudaGraphTest and
// DriverBehaviourTest cover the rest through jtorch's own binding). Exits non-zero on a failed check.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "../cuda_types.h"

extern "C" {
CUresult cuInit(unsigned int);
CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void*, CUdeviceptr, size_t, CUstream);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult cuStreamCreate(CUstream*, unsigned int);
CUresult cuEventCreate(CUevent*, unsigned int);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, CUgraph*);
CUresult cuStreamIsCapturing(CUstream, int*);
CUresult cuThreadExchangeStreamCaptureMode(int*);
CUresult cuStreamQuery(CUstream);
CUresult cuEventQuery(CUevent);
CUresult cuMemHostAlloc(void**, size_t, unsigned int);
CUresult cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphDestroy(CUgraph);
CUresult cuGraphExecDestroy(CUgraphExec);
CUresult cuModuleLoadData(CUmodule*, const void*);
CUresult cuModuleGetFunction(CUfunction*, CUmodule, const char*);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**);
int nvrtcCreateProgram(void**, const char*, const char*, int, const char* const*, const char* const*);
int nvrtcCompileProgram(void*, int, const char* const*);
int nvrtcGetCUBINSize(void*, size_t*);
int nvrtcGetCUBIN(void*, char*);
int nvrtcGetProgramLogSize(void*, size_t*);
int nvrtcGetProgramLog(void*, char*);
int nvrtcDestroyProgram(void**);
}

static int failures = 0;

static void expect(const char* what, CUresult got, CUresult want) {
    if (got != want) {
        printf("FAILED %s: %d, expected %d\n", what, got, want);
        failures++;
    }
}

static void check(const char* what, bool ok) {
    if (!ok) {
        printf("FAILED %s\n", what);
        failures++;
    }
}

static const char* SOURCE = R"(
extern "C" __global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
// Dynamic shared memory at namespace scope (aligned) and in a function: each block reverses its values.
extern __shared__ __align__(16) float staged[];
extern "C" __global__ void reverse_blocks(float* x) {
    extern __shared__ int unused_alias[];
    int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    staged[t] = x[base + t];
    __syncthreads();
    x[base + t] = staged[blockDim.x - 1 - t];
    if (t == 0 && (void*)unused_alias != (void*)staged) x[base] = -1.0f;  // one buffer, whatever the declaration
}
// Lane 0 waits at the block's barrier while lanes 1..31 wait for it at a shuffle: no thread can go on.
extern "C" __global__ void stuck(float* x) {
    if (threadIdx.x == 0) __syncthreads();
    else x[0] = __shfl_sync(0xffffffffu, x[0], 0);
}
)";

static CUmodule compile() {
    void* program = nullptr;
    nvrtcCreateProgram(&program, SOURCE, "driver_test.cu", 0, nullptr, nullptr);
    const char* options[] = {"--gpu-architecture=sm_90"};
    if (nvrtcCompileProgram(program, 1, options) != 0) {
        size_t size = 0;
        nvrtcGetProgramLogSize(program, &size);
        std::string log(size, 0);
        nvrtcGetProgramLog(program, &log[0]);
        printf("compile failed:\n%s\n", log.c_str());
        exit(1);
    }
    size_t size = 0;
    nvrtcGetCUBINSize(program, &size);
    std::vector<char> image(size);
    nvrtcGetCUBIN(program, image.data());
    nvrtcDestroyProgram(&program);
    CUmodule module = nullptr;
    expect("cuModuleLoadData", cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
    return module;
}

static std::vector<float> read(CUdeviceptr x, int n, CUstream s) {
    std::vector<float> host(n);
    cuMemcpyDtoHAsync_v2(host.data(), x, sizeof(float) * n, s);
    cuStreamSynchronize(s);
    return host;
}

static CUdeviceptr allocated_before_capture;

int main() {
    expect("cuInit", cuInit(0), CUDA_SUCCESS);
    CUcontext context;
    expect("retain", cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
    cuCtxSetCurrent(context);
    CUmodule module = compile();
    CUfunction add_one, stuck;
    expect("add_one", cuModuleGetFunction(&add_one, module, "add_one"), CUDA_SUCCESS);
    expect("stuck", cuModuleGetFunction(&stuck, module, "stuck"), CUDA_SUCCESS);
    const int n = 1000;
    CUdeviceptr x;
    cuMemAlloc_v2(&x, sizeof(float) * n);
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    cuMemsetD32Async(x, 0, n, s);  // 0.0f
    int count = n;
    void* params[] = {&x, &count};

    // A captured launch runs at each graph launch, not at capture; the graph can go before its instance.
    int status = -1;
    expect("capture", cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    cuStreamIsCapturing(s, &status);
    check("capturing", status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    expect("captured launch", cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
    CUgraph graph = nullptr;
    expect("end capture", cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
    check("nothing ran at capture", read(x, n, s)[7] == 0.0f);
    CUgraphExec exec = nullptr;
    expect("instantiate", cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    for (int i = 0; i < 3; i++) expect("graph launch", cuGraphLaunch(exec, s), CUDA_SUCCESS);
    check("three replays", read(x, n, s)[999] == 3.0f);
    expect("graph destroy", cuGraphDestroy(graph), CUDA_SUCCESS);
    expect("launch after the graph is gone", cuGraphLaunch(exec, s), CUDA_SUCCESS);
    check("a fourth replay", read(x, n, s)[0] == 4.0f);
    expect("exec destroy", cuGraphExecDestroy(exec), CUDA_SUCCESS);

    // What a capture may not do invalidates it (as the H200 answered); its captured work is dropped.
    cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, s, params, nullptr);
    expect("synchronize in a capture", cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cuStreamIsCapturing(s, &status);
    check("invalidated", status == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    expect("end of an invalidated capture", cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    check("no graph", graph == nullptr);
    cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUdeviceptr y;
    expect("cuMemAlloc in a global capture", cuMemAlloc_v2(&y, 4096), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect("end", cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    expect("the legacy stream cannot be captured", cuStreamBeginCapture_v2(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

    // The thread's capture interaction mode: RELAXED lets cuMemAlloc run in a global capture (PyTorch's caching
    // allocator grows its graph pool so); a free, a pinned allocation, a stream query and a query of an event
    // recorded in the capture are still refused and invalidate it.
    int mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    expect("exchange mode", cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    check("the thread started in global mode", mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    expect("capture", cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    expect("cuMemAlloc in relaxed mode", cuMemAlloc_v2(&y, 4096), CUDA_SUCCESS);
    mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    expect("exchange back", cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    check("the previous mode returned", mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    CUevent in_capture;
    cuEventCreate(&in_capture, 2);
    cuEventRecord(in_capture, s);
    expect("end of a capture that allocated", cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
    cuGraphDestroy(graph);
    expect("free after the capture", cuMemFree_v2(y), CUDA_SUCCESS);
    struct Refused { const char* what; CUresult (*call)(CUstream, CUevent); };
    Refused refused[] = {
        {"cuMemFree in a capture", [](CUstream, CUevent) { return cuMemFree_v2(allocated_before_capture); }},
        {"pinned allocation in a capture", [](CUstream, CUevent) { void* p; return cuMemHostAlloc(&p, 64, 0); }},
        {"stream query in a capture", [](CUstream st, CUevent) { return cuStreamQuery(st); }},
        {"query of an event recorded in the capture", [](CUstream st, CUevent e) { cuEventRecord(e, st); return cuEventQuery(e); }},
    };
    for (const Refused& r : refused) {
        cuMemAlloc_v2(&allocated_before_capture, 64);
        cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        expect(r.what, r.call(s, in_capture), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        cuStreamIsCapturing(s, &status);
        check(r.what, status == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        expect("end", cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    expect("the stream is usable after an invalidated capture", cuStreamQuery(s), CUDA_SUCCESS);
    check("the dropped work never ran", read(x, n, s)[0] == 4.0f);

    // A capture across two streams: the side stream joins by waiting on an event of the origin (fork) and
    // must be waited on again after its last work (join); its work replays with the origin's.
    CUstream side;
    cuStreamCreate(&side, CU_STREAM_NON_BLOCKING);
    CUevent forked, done;
    cuEventCreate(&forked, 2);
    cuEventCreate(&done, 2);
    CUdeviceptr z;
    cuMemAlloc_v2(&z, sizeof(float) * n);
    cuMemsetD32Async(z, 0, n, s);
    cuStreamSynchronize(s);
    void* side_params[] = {&z, &count};
    expect("capture", cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    cuEventRecord(forked, s);
    expect("fork", cuStreamWaitEvent(side, forked, 0), CUDA_SUCCESS);
    cuStreamIsCapturing(side, &status);
    check("the side stream captures", status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, s, params, nullptr);
    cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, side, side_params, nullptr);
    expect("ending on the side stream", cuStreamEndCapture(side, &graph), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    expect("end of the invalidated capture", cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cuStreamIsCapturing(side, &status);
    check("the side stream stopped capturing", status == CU_STREAM_CAPTURE_STATUS_NONE);
    cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    cuEventRecord(forked, s);
    cuStreamWaitEvent(side, forked, 0);
    cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, side, side_params, nullptr);
    expect("unjoined work", cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    cuEventRecord(forked, s);
    cuStreamWaitEvent(side, forked, 0);
    cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, s, params, nullptr);
    cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, side, side_params, nullptr);
    cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, side, side_params, nullptr);
    cuEventRecord(done, side);
    expect("join", cuStreamWaitEvent(s, done, 0), CUDA_SUCCESS);
    expect("end of a joined capture", cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
    expect("instantiate", cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    expect("replay", cuGraphLaunch(exec, s), CUDA_SUCCESS);
    check("the origin's work replayed, nothing at capture", read(x, n, s)[5] == 5.0f);
    check("the side stream's work replayed", read(z, n, s)[5] == 2.0f);
    cuGraphExecDestroy(exec);
    cuGraphDestroy(graph);

    // Dynamic shared memory: the launch's bytes, one buffer per block's threads.
    CUfunction reverse;
    expect("reverse_blocks", cuModuleGetFunction(&reverse, module, "reverse_blocks"), CUDA_SUCCESS);
    std::vector<float> values(512);
    for (int i = 0; i < 512; i++) values[i] = float(i);
    cuMemcpyHtoDAsync_v2(x, values.data(), sizeof(float) * 512, s);
    void* reverse_params[] = {&x};
    expect("launch with dynamic shared memory", cuLaunchKernel(reverse, 2, 1, 1, 256, 1, 1, 256 * 4, s, reverse_params, nullptr),
           CUDA_SUCCESS);
    std::vector<float> reversed = read(x, 512, s);
    check("block 0 reversed", reversed[0] == 255.0f && reversed[255] == 0.0f);
    check("block 1 reversed", reversed[256] == 511.0f && reversed[511] == 256.0f);

    // A barrier no thread can pass fails the launch and the context, which a reset brings back.
    void* stuck_params[] = {&x};
    expect("launch", cuLaunchKernel(stuck, 1, 1, 1, 64, 1, 1, 0, s, stuck_params, nullptr), CUDA_SUCCESS);
    expect("the deadlock is reported", cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_FAILED);
    expect("and sticks", cuMemAlloc_v2(&y, 4096), CUDA_ERROR_LAUNCH_FAILED);
    expect("reset", cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
    expect("old context", cuMemAlloc_v2(&y, 4096), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    expect("retain again", cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
    cuCtxSetCurrent(context);
    expect("a fresh context allocates", cuMemAlloc_v2(&y, 4096), CUDA_SUCCESS);
    cuMemFree_v2(y);

    printf(failures == 0 ? "driver_test: all passed\n" : "driver_test: %d failed\n", failures);
    return failures == 0 ? 0 : 1;
}
