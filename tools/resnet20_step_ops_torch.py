"""Where one ResNet-20 training step's thread CPU time goes in PyTorch (docs/BENCHMARKS.md, issue 20, branch r20s26):
bench_examples.py's resnet20 step (bench_cnn.training_step: batch 128, cross entropy, SGD with momentum and weight decay),
each aten op timed in the calling thread's CPU (time.thread_time_ns) by a TorchDispatchMode, grouped by op and shape
and by phase (forward, backward, optimizer). The autograd engine runs CPU backward on the calling thread, so every op
is on this thread; with two threads each op's figure is the calling thread's part (its share of the work, and its
OpenMP barrier's spinning), not the op's whole CPU. Prints ms a step (medians over the profiled steps), the unprofiled step's median,
and what is outside the ops (Python, autograd engine, allocation outside kernels).

  LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 /work/venv-torch213/bin/python \
      tools/resnet20_step_ops_torch.py [threads, default 1] [warm-up cpu seconds, default 4] [steps, default 10]
"""
import os
import statistics
import sys
import time
from collections import defaultdict

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jtorch-bench", "python"))
import bench_cnn  # noqa: E402

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
torch.manual_seed(0)
warm_seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 10

model = bench_cnn.ResNet20()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
x, y = torch.randn(128, 3, 32, 32), torch.randint(0, 10, (128,))
phase = ["forward"]


def step():
    phase[0] = "forward"
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    phase[0] = "backward"
    loss.backward()
    phase[0] = "optimizer"
    opt.step()


def shape_of(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            return "x".join(map(str, a.shape))
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            return f"{len(a)} tensors"
    return ""


class OpClock(TorchDispatchMode):
    """Each aten op's thread CPU time, by (phase, op, first operand's shape)."""

    def __init__(self):
        super().__init__()
        self.ms = defaultdict(float)
        self.calls = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        t0 = time.thread_time_ns()
        out = func(*args, **(kwargs or {}))
        key = (phase[0], func.overloadpacket.__name__, shape_of(args))
        self.ms[key] += (time.thread_time_ns() - t0) * 1e-6
        self.calls[key] += 1
        return out


t0 = time.thread_time()
while time.thread_time() - t0 < warm_seconds:
    step()
plain = []
for _ in range(steps):
    c0 = time.thread_time_ns()
    step()
    plain.append((time.thread_time_ns() - c0) * 1e-6)
per_step, profiled = [], []
for _ in range(steps):
    clock = OpClock()
    c0 = time.thread_time_ns()
    with clock:
        step()
    profiled.append((time.thread_time_ns() - c0) * 1e-6)
    per_step.append(clock)
keys = sorted({k for c in per_step for k in c.ms}, key=lambda k: (k[0], -statistics.median(c.ms.get(k, 0) for c in per_step)))
print(f"torch {torch.__version__}, {threads} thread(s), calling thread's CPU, {time.strftime('%H:%M:%S', time.gmtime())} UTC, "
      f"load {open('/proc/loadavg').read().split()[0]}")
print("phase | op | first operand | calls a step | ms a step")
total = 0.0
for k in keys:
    ms = statistics.median(c.ms.get(k, 0.0) for c in per_step)
    total += ms
    print(f"{k[0]} | {k[1]} | {k[2]} | {per_step[0].calls.get(k, 0)} | {ms:.3f}")
step_ms = statistics.median(plain)
print(f"ops' sum {total:.2f} ms; step unprofiled {step_ms:.2f} ms (rounds {', '.join(f'{v:.1f}' for v in plain)}); "
      f"profiled {statistics.median(profiled):.2f}; outside the ops {step_ms - total:.2f}")
