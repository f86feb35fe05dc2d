"""PyTorch's side of `jtorch bench gpu-sim` (docs/BENCHMARKS.md): what one training step asks of the GPU, for the
same loops, counted with torch.profiler on a real GPU (scripts/gpu-check device runs it).

  python3 tools/torch_step_counts.py [--out counts.tsv]

Each workload trains as GpuSimBench's loop does: batch copied from pinned memory with non_blocking=True,
forward (under bf16 autocast for the bf16 rows), cross entropy, zero_grad, backward, SGD with momentum,
loss.item(). Two warm-up steps, then three profiled steps; per step: kernel launches (cudaLaunchKernel and
cuLaunchKernel calls; library kernels included, unlike the simulator's count, which gives library calls
separately), synchronising calls (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, and
synchronous cudaMemcpy), and bytes copied each way. Without CUDA it says so and writes nothing.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jtorch-bench", "python"))

STEPS = 3
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cuStreamSynchronize",
              "cuCtxSynchronize", "cuEventSynchronize")
LAUNCH_CALLS = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")


def workloads(torch):
    from gpu_bench_torch import resnet50
    from bench_cnn import ResNet20
    nn = torch.nn
    return [
        ("digits MLP 64-128-10, batch 64", lambda: nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)), (64, 64), 10),
        ("CIFAR ResNet-20, batch 32", lambda: ResNet20(), (32, 3, 32, 32), 10),
        ("ResNet-50, batch 8, 64x64", lambda: resnet50(torch), (8, 3, 64, 64), 1000),
    ]


def count(torch, name, factory, shape, classes, bf16):
    from torch.profiler import ProfilerActivity, profile
    torch.manual_seed(0)
    model = factory().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(*shape).pin_memory()
    y = torch.randint(0, classes, (shape[0],)).pin_memory()

    def step():
        xs, ys = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(model(xs), ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()

    step()
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            step()
    launches = syncs = h2d = d2h = 0
    for e in prof.events():
        if e.name in LAUNCH_CALLS:
            launches += 1
        elif e.name in SYNC_CALLS or e.name.startswith("cudaMemcpy") and "Async" not in e.name:
            syncs += 1
        if e.name.startswith("Memcpy HtoD"):
            h2d += 1
        elif e.name.startswith("Memcpy DtoH"):
            d2h += 1
    precision = "bf16 autocast" if bf16 else "f32"
    return f"{name}\t{precision}\t{launches / STEPS:.0f}\t{syncs / STEPS:.1f}\t{h2d / STEPS:.1f}\t{d2h / STEPS:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("torch_step_counts: not run: CUDA is not available to PyTorch here")
        return
    lines = ["workload\tprecision\tkernel launches\tsynchronising calls\tcopies H2D\tcopies D2H"]
    for bf16 in (False, True):
        for name, factory, shape, classes in workloads(torch):
            lines.append(count(torch, name, factory, shape, classes, bf16))
    text = "\n".join(lines) + "\n"
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}, per training step:")
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
