// What the real CUDA driver returns for each misuse the simulator must reproduce (issue 14): built and run by
// scripts/gpu-check device with gcc against the machine's libcuda; the H200 results are in docs/CUDA.md.
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
static const char *nm(CUresult r){const char*s="?";cuGetErrorName(r,&s);return s;}
#define P(label, call) do{CUresult _r=(call);printf("%-58s %d %s\n",label,(int)_r,nm(_r));fflush(stdout);}while(0)
static const char *ptx =
".version 7.0\n.target sm_52\n.address_size 64\n"
".visible .entry k(.param .u64 p){\n .reg .b64 %rd<3>; .reg .b32 %r<2>;\n"
" ld.param.u64 %rd1,[p]; cvta.to.global.u64 %rd2,%rd1; mov.u32 %r1,%tid.x; st.global.u32 [%rd2],%r1; ret;}\n"
".visible .entry big(.param .u64 p){\n .shared .align 4 .b8 s[40000]; .reg .b64 %rd<3>; .reg .b32 %r<2>;\n"
" ld.param.u64 %rd1,[p]; cvta.to.global.u64 %rd2,%rd1; mov.u32 %r1,%tid.x; st.shared.u32 [s],%r1; ld.shared.u32 %r1,[s]; st.global.u32 [%rd2],%r1; ret;}\n";
int main(void){
  CUdevice d; CUcontext c; CUdeviceptr p,q; int v; char buf[64]={0};
  P("cuInit", cuInit(0)); P("cuDeviceGet", cuDeviceGet(&d,0));
  int attrs[]={CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT,CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE};
  for(unsigned i=0;i<sizeof attrs/sizeof*attrs;i++){cuDeviceGetAttribute(&v,attrs[i],d);printf("attr %d = %d\n",attrs[i],v);}
  P("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&c,d)); P("cuCtxSetCurrent", cuCtxSetCurrent(c));
  P("cuMemAlloc 1MiB", cuMemAlloc(&p,1<<20)); printf("ptr %% 256 = %llu, ptr=%llx\n",(unsigned long long)(p%256),(unsigned long long)p);
  P("cuMemAlloc 0 bytes", cuMemAlloc(&q,0));
  P("cuMemAlloc 1<<50", cuMemAlloc(&q,(size_t)1<<50));
  P("cuMemcpyHtoD inside", cuMemcpyHtoD(p+8,buf,16));
  P("cuMemcpyHtoD straddling end", cuMemcpyHtoD(p+(1<<20)-8,buf,16));
  P("cuMemcpyHtoD past end", cuMemcpyHtoD(p+(1<<20)+4096,buf,16));
  P("cuMemcpyDtoH straddling end", cuMemcpyDtoH(buf,p+(1<<20)-8,16));
  P("cuMemsetD8 straddling end", cuMemsetD8(p+(1<<20)-8,0,16));
  P("cuMemsetD32 misaligned", cuMemsetD32(p+2,0,4));
  P("cuMemcpyHtoD wild 0x1000", cuMemcpyHtoD((CUdeviceptr)0x1000,buf,16));
  P("cuMemcpyDtoD straddling", cuMemcpyDtoD(p, p+(1<<20)-8, 16));
  P("cuMemFree interior", cuMemFree(p+8));
  P("cuMemFree wild", cuMemFree((CUdeviceptr)0x7f0012345000ULL));
  P("cuMemFree 0", cuMemFree(0));
  P("cuMemAlloc q", cuMemAlloc(&q,4096)); P("cuMemFree q", cuMemFree(q)); P("cuMemFree q again", cuMemFree(q));
  P("cuMemcpyHtoD after free", cuMemcpyHtoD(q,buf,16));
  CUstream s; P("cuStreamCreate", cuStreamCreate(&s,1));
  P("cuMemcpyHtoDAsync past end (pageable)", cuMemcpyHtoDAsync(p+(1<<20)+4096,buf,16,s)); P("sync", cuStreamSynchronize(s));
  CUevent e1,e2,e3; P("cuEventCreate default", cuEventCreate(&e1,0)); P("cuEventCreate default", cuEventCreate(&e2,0));
  P("cuEventCreate DISABLE_TIMING", cuEventCreate(&e3,CU_EVENT_DISABLE_TIMING));
  P("cuEventQuery never recorded", cuEventQuery(e1)); P("cuEventSynchronize never recorded", cuEventSynchronize(e1));
  float ms; P("cuEventElapsedTime neither recorded", cuEventElapsedTime(&ms,e1,e2));
  P("record e1", cuEventRecord(e1,s)); P("cuEventElapsedTime e2 unrecorded", cuEventElapsedTime(&ms,e1,e2));
  P("record e2", cuEventRecord(e2,s)); P("sync e2", cuEventSynchronize(e2)); P("cuEventElapsedTime ok", cuEventElapsedTime(&ms,e1,e2));
  P("record e3", cuEventRecord(e3,s)); P("sync", cuEventSynchronize(e3)); P("cuEventElapsedTime disable-timing", cuEventElapsedTime(&ms,e1,e3));
  P("cuStreamWaitEvent unrecorded-ok", cuStreamWaitEvent(s,e1,0));
  CUmodule m; CUfunction k,kb; P("cuModuleLoadData ptx", cuModuleLoadData(&m,ptx));
  P("cuModuleGetFunction k", cuModuleGetFunction(&k,m,"k")); P("cuModuleGetFunction big", cuModuleGetFunction(&kb,m,"big"));
  P("cuModuleGetFunction missing", cuModuleGetFunction(&kb,m,"nope")); cuModuleGetFunction(&kb,m,"big");
  void *args[]={&p};
  P("launch 1x1 ok", cuLaunchKernel(k,1,1,1,1,1,1,0,s,args,0));
  P("launch block 1025", cuLaunchKernel(k,1,1,1,1025,1,1,0,s,args,0));
  P("launch block (32,32,2)", cuLaunchKernel(k,1,1,1,32,32,2,0,s,args,0));
  P("launch block z=65", cuLaunchKernel(k,1,1,1,1,1,65,0,s,args,0));
  P("launch grid x=2^31", cuLaunchKernel(k,0x80000000u,1,1,1,1,1,0,s,args,0));
  P("launch grid x=2^31-1", cuLaunchKernel(k,0x7fffffffu,1,1,1,1,1,0,s,args,0)); P("sync", cuStreamSynchronize(s));
  P("launch grid y=65536", cuLaunchKernel(k,1,65536,1,1,1,1,0,s,args,0));
  P("launch grid 0", cuLaunchKernel(k,0,1,1,1,1,1,0,s,args,0));
  P("launch dyn smem 48KiB", cuLaunchKernel(k,1,1,1,32,1,1,48*1024,s,args,0));
  P("launch dyn smem 48KiB+4", cuLaunchKernel(k,1,1,1,32,1,1,48*1024+4,s,args,0));
  P("launch static 40000 + dyn 9000", cuLaunchKernel(kb,1,1,1,32,1,1,9000,s,args,0));
  P("cuFuncSetAttribute max dyn 200KiB", cuFuncSetAttribute(k,CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,200*1024));
  P("launch dyn smem 200KiB after optin", cuLaunchKernel(k,1,1,1,32,1,1,200*1024,s,args,0));
  P("launch dyn smem 240KiB after optin", cuLaunchKernel(k,1,1,1,32,1,1,240*1024,s,args,0));
  P("sync", cuStreamSynchronize(s));
  // capture
  CUgraph g; CUgraphExec ge;
  P("cuStreamBeginCapture global", cuStreamBeginCapture(s,CU_STREAM_CAPTURE_MODE_GLOBAL));
  P("  launch in capture", cuLaunchKernel(k,1,1,1,1,1,1,0,s,args,0));
  P("  cuMemcpyHtoDAsync pageable in capture", cuMemcpyHtoDAsync(p,buf,16,s));
  P("  cuStreamSynchronize in capture", cuStreamSynchronize(s));
  P("cuStreamEndCapture", cuStreamEndCapture(s,&g));
  P("cuStreamBeginCapture 2", cuStreamBeginCapture(s,CU_STREAM_CAPTURE_MODE_GLOBAL));
  P("  launch in capture", cuLaunchKernel(k,1,1,1,1,1,1,0,s,args,0));
  P("  cuMemAlloc in capture (global mode)", cuMemAlloc(&q,4096));
  P("cuStreamEndCapture 2", cuStreamEndCapture(s,&g));
  P("cuStreamBeginCapture 3", cuStreamBeginCapture(s,CU_STREAM_CAPTURE_MODE_GLOBAL));
  P("  launch in capture", cuLaunchKernel(k,1,1,1,1,1,1,0,s,args,0));
  P("cuStreamEndCapture 3", cuStreamEndCapture(s,&g));
  P("cuGraphInstantiate", cuGraphInstantiate(&ge,g,0)); P("cuGraphLaunch", cuGraphLaunch(ge,s)); P("sync", cuStreamSynchronize(s));
  // what jtorch's CudaGraph relies on: cuMemAlloc in relaxed thread mode; the calls the simulator refuses in a capture
  CUstreamCaptureMode mode=CU_STREAM_CAPTURE_MODE_RELAXED; CUevent ev; void *h; CUdeviceptr before;
  P("cuEventCreate", cuEventCreate(&ev,CU_EVENT_DISABLE_TIMING)); P("cuMemAlloc", cuMemAlloc(&before,4096));
  P("cuStreamBeginCapture 4", cuStreamBeginCapture(s,CU_STREAM_CAPTURE_MODE_GLOBAL));
  P("  cuThreadExchangeStreamCaptureMode relaxed", cuThreadExchangeStreamCaptureMode(&mode));
  P("  cuMemAlloc in capture (relaxed thread mode)", cuMemAlloc(&q,4096));
  P("  cuThreadExchangeStreamCaptureMode back", cuThreadExchangeStreamCaptureMode(&mode));
  P("  launch in capture", cuLaunchKernel(k,1,1,1,1,1,1,0,s,args,0));
  P("cuStreamEndCapture 4", cuStreamEndCapture(s,&g));
  P("cuStreamBeginCapture 5", cuStreamBeginCapture(s,CU_STREAM_CAPTURE_MODE_GLOBAL));
  P("  cuStreamQuery in capture", cuStreamQuery(s));
  P("cuStreamEndCapture 5", cuStreamEndCapture(s,&g));
  P("cuStreamBeginCapture 6", cuStreamBeginCapture(s,CU_STREAM_CAPTURE_MODE_GLOBAL));
  P("  cuEventRecord in capture", cuEventRecord(ev,s)); P("  cuEventQuery of it", cuEventQuery(ev));
  P("cuStreamEndCapture 6", cuStreamEndCapture(s,&g));
  P("cuStreamBeginCapture 7", cuStreamBeginCapture(s,CU_STREAM_CAPTURE_MODE_GLOBAL));
  P("  cuMemHostAlloc in capture", cuMemHostAlloc(&h,4096,0));
  P("cuStreamEndCapture 7", cuStreamEndCapture(s,&g));
  P("cuStreamBeginCapture 8", cuStreamBeginCapture(s,CU_STREAM_CAPTURE_MODE_GLOBAL));
  P("  cuMemFree in capture", cuMemFree(before));
  P("cuStreamEndCapture 8", cuStreamEndCapture(s,&g));
  // sticky error: illegal address
  CUdeviceptr bad=(CUdeviceptr)0x10; void *bargs[]={&bad};
  P("launch writing to 0x10", cuLaunchKernel(k,1,1,1,1,1,1,0,s,bargs,0));
  P("cuStreamSynchronize after fault", cuStreamSynchronize(s));
  P("cuMemAlloc after fault", cuMemAlloc(&q,4096));
  P("cuCtxSynchronize after fault", cuCtxSynchronize());
  P("cuDevicePrimaryCtxReset after fault", cuDevicePrimaryCtxReset(d));
  P("cuDevicePrimaryCtxRetain again", cuDevicePrimaryCtxRetain(&c,d)); P("cuCtxSetCurrent", cuCtxSetCurrent(c));
  P("cuMemAlloc after reset", cuMemAlloc(&q,4096));
  return 0;
}
