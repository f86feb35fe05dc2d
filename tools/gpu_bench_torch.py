"""PyTorch side of the GPU table (scripts/gpu-check device): the same measurements as
jtorch-bench's GpuBench, on the same card in the same call, written as `key<TAB>value` lines.

  python3 tools/gpu_bench_torch.py --out torch.tsv [--seconds 60]

Parts (each under its own time limit; a failure or the limit writes `not run: <reason>`):
matmul 4096 and 8192 square in float32 (TF32 off), TF32 and bfloat16 (TFLOP/s = 2n^3 / time);
an add of 2^28 float32 (3 x 1 GiB moved) and a device-to-device copy of 1 GiB (2 x 1 GiB), GB/s;
a ResNet-50 training step (batch 128, 224x224, float32, SGD momentum), images/s, eager;
ResNet-20 (CIFAR shape, batch 128, synthetic inputs) epoch = median step x 391, on the CPU and on cuda:0.
Times are wall clock around torch.cuda.synchronize(), as GpuBench's around Cuda.synchronize.
"""
import argparse
import math
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jtorch-bench", "python"))

EPOCH_STEPS = math.ceil(50_000 / 128)


class PartTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise PartTimeout()


def part(results, keys, seconds, body):
    """Runs body(results) under a time limit; keys it did not fill read 'not run: <reason>'."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    t0 = time.perf_counter()
    failure = None
    try:
        body(results)
    except PartTimeout:
        failure = f"timed out after {seconds} s"
    except Exception as e:  # report and go on: the table must come out
        failure = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    finally:
        signal.alarm(0)
    for k in keys:
        if failure is not None and k not in results:
            results[k] = "not run: " + failure
    print(f"torch-bench: {keys[0]:<22} {time.perf_counter() - t0:6.1f} s {failure or 'done'}", flush=True)


def fmt(v):
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def timed(torch, warmup, reps, body):
    for _ in range(warmup):
        body()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        body()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def matmul(torch, n, mode):
    def run(results):
        torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
        dtype = torch.bfloat16 if mode == "bf16" else torch.float32
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        s = timed(torch, 3, 30 if n <= 4096 else 8, lambda: torch.matmul(a, b))
        results[f"matmul_{n}_{mode}"] = fmt(2 * n ** 3 / s / 1e12)
        torch.backends.cuda.matmul.allow_tf32 = False
    return run


def bandwidth(torch):
    def run(results):
        n = 1 << 28
        x = torch.full((n,), 1.0, device="cuda")
        y = torch.full((n,), 2.0, device="cuda")
        z = torch.empty(n, device="cuda")
        add = 3 * 4 * n / timed(torch, 2, 10, lambda: torch.add(x, y)) / 1e9
        results["add_gbs"] = fmt(add)
        copy = 2 * 4 * n / timed(torch, 2, 10, lambda: z.copy_(x)) / 1e9
        results["copy_gbs"] = fmt(copy)
        results["add_vs_copy"] = fmt(add / copy)
    return run


def resnet50(torch):
    """torchvision's ResNet-50 (v1.5: stride on the 3x3 convolution), written out so torchvision is not needed."""
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
            self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = torch.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    layers, cin = [], 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    return nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
                         *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000))


def step_seconds(torch, model, device, shape, classes, warmup, reps, amp=None):
    """Median training-step seconds; with amp (torch.bfloat16) the forward runs under torch.autocast."""
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(*shape, device=device)
    y = torch.randint(0, classes, (shape[0],), device=device)
    times = []
    for i in range(warmup + reps):
        t0 = time.perf_counter()
        with torch.autocast(device_type=device, dtype=amp or torch.float32, enabled=amp is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=60, help="time limit of each part")
    args = ap.parse_args()
    results = {}
    keys = ["matmul_%d_%s" % (n, m) for n in (4096, 8192) for m in ("f32", "tf32", "bf16")] + [
        "add_gbs", "copy_gbs", "add_vs_copy", "resnet50_images_s", "resnet50_peak_gib", "resnet50_bf16_images_s",
        "resnet50_bf16_peak_gib", "resnet50_bf16_speedup", "resnet20_epoch_cpu_s", "resnet20_epoch_cuda_s",
        "resnet20_speedup"]
    results["smoke_loss"] = results["smoke_accuracy"] = "n/a (jtorch only)"
    try:
        import torch
        results["_torch_version"] = torch.__version__
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        results["_device"] = torch.cuda.get_device_name(0)
    except Exception as e:
        for k in keys:
            results[k] = f"not run: {type(e).__name__}: {e}"
        write(args.out, results)
        return 1
    torch.manual_seed(0)
    for n in (4096, 8192):
        for mode in ("f32", "tf32", "bf16"):
            part(results, [f"matmul_{n}_{mode}"], args.seconds, matmul(torch, n, mode))
    part(results, ["add_gbs", "copy_gbs", "add_vs_copy"], args.seconds, bandwidth(torch))
    def resnet50_run(key, amp):
        def run(r):
            torch.cuda.reset_peak_memory_stats()
            r[f"resnet50{key}_images_s"] = fmt(128 / step_seconds(torch, resnet50(torch), "cuda", (128, 3, 224, 224), 1000, 3, 10, amp))
            r[f"resnet50{key}_peak_gib"] = fmt(torch.cuda.max_memory_allocated() / 2 ** 30)
        return run
    part(results, ["resnet50_images_s", "resnet50_peak_gib"], args.seconds, resnet50_run("", None))
    part(results, ["resnet50_bf16_images_s", "resnet50_bf16_peak_gib"], args.seconds, resnet50_run("_bf16", torch.bfloat16))
    try:
        results["resnet50_bf16_speedup"] = fmt(float(results["resnet50_bf16_images_s"]) / float(results["resnet50_images_s"]))
    except ValueError:
        results["resnet50_bf16_speedup"] = "not run: needs both ResNet-50 rates"

    def resnet20(device, warmup, reps):
        from bench_cnn import ResNet20
        return lambda r: r.__setitem__(f"resnet20_epoch_{device}_s",
                                       fmt(EPOCH_STEPS * step_seconds(torch, ResNet20(), device, (128, 3, 32, 32), 10, warmup, reps)))
    part(results, ["resnet20_epoch_cpu_s"], args.seconds, resnet20("cpu", 3, 5))
    part(results, ["resnet20_epoch_cuda_s"], args.seconds, resnet20("cuda", 5, 20))
    try:
        results["resnet20_speedup"] = fmt(float(results["resnet20_epoch_cpu_s"]) / float(results["resnet20_epoch_cuda_s"]))
    except ValueError:
        results["resnet20_speedup"] = "not run: needs both epoch times"
    write(args.out, results)
    return 0


def write(path, results):
    with open(path, "w") as f:
        for k, v in results.items():
            f.write(f"{k}\t{v}\n")


if __name__ == "__main__":
    sys.exit(main())
