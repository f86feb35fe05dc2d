"""PyTorch side of `jtorch bench jit`: the same pointwise chains eager and compiled by torch.compile (Inductor, CPU);
with `--models`, the side of `jtorch bench jit-inference` (ResNet-20 and ResNet-50 forwards in evaluation); with
`--steps`, the side of `jtorch bench jit-steps` (MLP and ResNet-20 training steps); with `--train`, dropout chains in
a training step.

Needs PyTorch 2 (the 2.13 wheel in a virtual environment) and a C++ compiler for Inductor.
Prints `name value` lines as JitBench does.
"""
import sys
import time

import torch

from bench_cnn import ResNet20
from timing import median

quick = "--quick" in sys.argv
torch.manual_seed(0)


def measure(name, f, x):
    """`name`'s chain eager and compiled, medians of 3 rounds; with `--cputime` in this thread's CPU time, one thread;
    with `--only NAME,...` those chains alone."""
    if "--only" in sys.argv and name not in sys.argv[sys.argv.index("--only") + 1].split(","):
        return
    reps = 20 if quick else 60
    clock = time.thread_time if "--cputime" in sys.argv else time.perf_counter
    t0 = time.perf_counter()
    compiled = torch.compile(f)
    compiled(x)
    print(f"{name}_first_call_ms {(time.perf_counter() - t0) * 1e3:.3f}")
    eager = fused = 0.0
    for _ in range(3):
        eager += median(lambda: f(x), 5, reps, clock)
        fused += median(lambda: compiled(x), 5, reps, clock)
    print(f"{name}_eager_ms {eager / 3 * 1e3:.3f}")
    print(f"{name}_compiled_ms {fused / 3 * 1e3:.3f}")


def alternate(tag, eager_call, compiled_call, rounds, per_round, clock):
    """Rounds of `per_round` calls, eager and compiled alternating; prints the medians (ms per call) and the speedup."""
    eager, fused = [], []
    for _ in range(rounds):
        for f, ts in ((eager_call, eager), (compiled_call, fused)):
            t0 = clock()
            for _ in range(per_round):
                f()
            ts.append((clock() - t0) / per_round * 1e3)
    eager.sort()
    fused.sort()
    print(f"{tag}_eager_ms {eager[rounds // 2]:.3f}")
    print(f"{tag}_compiled_ms {fused[rounds // 2]:.3f}")
    print(f"{tag}_compiled_speedup {eager[rounds // 2] / fused[rounds // 2]:.3f}", flush=True)


def resnet50():
    """torchvision's ResNet-50 (v1.5: the stride on the 3x3 convolution), written out: torchvision is not installed."""
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, inp, planes, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(inp, planes, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * 4)
            self.downsample = None
            if stride != 1 or inp != planes * 4:
                self.downsample = nn.Sequential(nn.Conv2d(inp, planes * 4, 1, stride, bias=False), nn.BatchNorm2d(planes * 4))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = torch.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return torch.relu(out + (x if self.downsample is None else self.downsample(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            layers, inp = [], 64
            for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                for i in range(blocks):
                    layers.append(Bottleneck(inp, planes, stride if i == 0 else 1))
                    inp = planes * 4
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x):
            h = self.layers(self.maxpool(torch.relu(self.bn1(self.conv1(x)))))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(h, 1), 1))

    return Net()


def models():
    """`--models`: the forwards of JitInferenceBench (`jtorch bench jit-inference`) in evaluation without autograd, eager
    against torch.compile (Inductor's defaults, and with `freezing`, which folds batch norms into convolutions and
    prepacks their weights), in alternating rounds of the same number of forwards, medians of the rounds; with
    `--cputime` in this thread's CPU time (run with one thread: torch.set_num_threads(1) here)."""
    import torch._inductor.config as inductor
    torch.set_num_threads(1)
    clock = time.thread_time if "--cputime" in sys.argv else time.perf_counter
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    variants = sys.argv[sys.argv.index("--variants") + 1].split(",") if "--variants" in sys.argv else ["default", "freezing"]
    work = [("resnet20_b32", ResNet20, (32, 3, 32, 32), 2 if quick else 10), ("resnet20_b1", ResNet20, (1, 3, 32, 32), 20 if quick else 200),
            ("resnet50_b1", resnet50, (1, 3, 224, 224), 1 if quick else 6), ("resnet50_b32", resnet50, (32, 3, 224, 224), 1)]
    rounds = 3 if quick else 5
    for name, make, shape, per_round in work:
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = make().eval()
        x = torch.randn(shape)
        for variant in variants:
            torch._dynamo.reset()
            inductor.freezing = variant == "freezing"
            tag = name if variant == "default" else f"{name}_{variant}"
            with torch.no_grad():
                t0 = time.perf_counter()
                compiled = torch.compile(model)
                compiled(x)
                print(f"{tag}_first_call_ms {(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
                for _ in range(2):
                    model(x)
                    compiled(x)
                alternate(tag, lambda: model(x), lambda: compiled(x), rounds, per_round, clock)


def steps():
    """`--steps`: the training steps of JitStepBench (`jtorch bench jit-steps`): the MLP 784-512-512-10 at batch 128 and
    ResNet-20 at batch 32 (cross entropy, backward, SGD with momentum 0.9, lr 0.01), the model eager against the model
    compiled by torch.compile (Inductor's defaults; the loss, backward and optimizer step run as in eager, as in the
    jtorch bench where `Jit.compile` compiles the model), in alternating rounds, medians of the rounds; with
    `--cputime` in this thread's CPU time, one thread."""
    torch.set_num_threads(1)
    clock = time.thread_time if "--cputime" in sys.argv else time.perf_counter
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    nn = torch.nn
    mlp = lambda: nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    work = [("mlp_b128", mlp, (128, 784), 10 if quick else 50), ("resnet20_b32", ResNet20, (32, 3, 32, 32), 2 if quick else 5)]
    rounds = 3 if quick else 5
    for name, make, shape, per_round in work:
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = make().train()
        x = torch.randn(shape)
        y = torch.randint(0, 10, (shape[0],))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step(f):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(f(x), y).backward()
            opt.step()

        torch._dynamo.reset()
        t0 = time.perf_counter()
        compiled = torch.compile(model)
        step(compiled)
        print(f"{name}_train_first_call_ms {(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
        for _ in range(per_round):
            step(model)
            step(compiled)
        alternate(f"{name}_train", lambda: step(model), lambda: step(compiled), rounds, per_round, clock)


def train_chains():
    """`--train`: dropout chains in a training step, forward + `sum().backward()` with the input requiring grad, eager
    and compiled (the functions of jtorch's dropout benchmarks, docs/BENCHMARKS.md, branch jit12)."""
    if "--cputime" in sys.argv:
        torch.set_num_threads(1)
    n = 1 << 20
    x, c, w, b = (torch.randn(n) for _ in range(4))
    rows, residual = x.view(n // 1024, 1024).clone().requires_grad_(), c.view(n // 1024, 1024)
    x = x.clone().requires_grad_()
    gamma, beta = torch.randn(1024), torch.randn(1024)
    ln, drop, gelu = torch.nn.functional.layer_norm, torch.nn.functional.dropout, torch.nn.functional.gelu
    chains = [("dropout_residual_layer_norm_1M_train", lambda t: ln(drop(t, 0.1, True) + residual, (1024,), gamma, beta, 1e-5), rows),
              ("dropout_bias_gelu_1M_train", lambda t: drop(gelu(t * w + b), 0.1, True), x),
              ("dropout_bias_mul_1M_train", lambda t: drop((t * w + b) * c, 0.1, True), x)]
    # Every operand requiring grad, as in a transformer block (branch lnfuse): the block's input, the residual and the
    # norm's parameters; the attention scores of a GPT (T = 256) scaled and causally masked.
    leaves = {}
    for m in (1, 16):
        size = m << 20
        xs, rs = torch.randn(size // 1024, 1024, requires_grad=True), torch.randn(size // 1024, 1024, requires_grad=True)
        g2, b2 = torch.randn(1024, requires_grad=True), torch.randn(1024, requires_grad=True)
        name = f"dropout_residual_layer_norm_{m}M_train_all"
        leaves[name] = [rs, g2, b2]
        chains.append((name, lambda t, rs=rs, g2=g2, b2=b2: ln(drop(t, 0.1, True) + rs, (1024,), g2, b2, 1e-5), xs))
        scores = torch.randn(size // (256 * 256), 256, 256, requires_grad=True)
        mask = torch.ones(256, 256).triu(1) * -1e9
        chains.append((f"scaled_masked_softmax_{m}M_train", lambda t, mask=mask: torch.softmax(t * 0.125 + mask, -1), scores))
    for name, f, inp in chains:
        if "--only" in sys.argv and name not in sys.argv[sys.argv.index("--only") + 1].split(","):
            continue
        compiled = torch.compile(f)

        def step(g):
            g(inp).sum().backward()
            inp.grad = None
            for t in leaves.get(name, []):
                t.grad = None

        t0 = time.perf_counter()
        step(compiled)
        print(f"{name}_first_call_ms {(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
        clock = time.thread_time if "--cputime" in sys.argv else time.perf_counter
        for _ in range(3):
            step(f)
            step(compiled)
        alternate(name, lambda: step(f), lambda: step(compiled), 7, 10, clock)


if "--train" in sys.argv:
    train_chains()
    sys.exit(0)
if "--models" in sys.argv:
    models()
    sys.exit(0)
if "--steps" in sys.argv:
    steps()
    sys.exit(0)

if "--cputime" in sys.argv:
    torch.set_num_threads(1)
with torch.no_grad():
    for n in ([1 << 20] if quick else [1 << 20, 1 << 24]):
        size = "1M" if n == 1 << 20 else "16M"
        x, c, w, b = (torch.randn(n) for _ in range(4))
        measure(f"relu_add_{size}", lambda t: t.relu() + c, x)
        measure(f"bias_gelu_{size}", lambda t: torch.nn.functional.gelu(t * w + b), x)
        measure(f"dropout_bias_gelu_{size}", lambda t: torch.nn.functional.dropout(torch.nn.functional.gelu(t * w + b), 0.1, True), x)
        measure(f"tanh_chain_{size}", lambda t: torch.sigmoid(torch.tanh(t * 0.5) * t + 1.0) * c, x)
        rows, residual = x.view(n // 1024, 1024), c.view(n // 1024, 1024)
        gamma, beta = torch.randn(1024), torch.randn(1024)
        ln = torch.nn.functional.layer_norm
        measure(f"layer_norm_{size}", lambda t: ln(t, (1024,), gamma, beta, 1e-5), rows)
        measure(f"residual_layer_norm_{size}", lambda t: ln(t + residual, (1024,), gamma, beta, 1e-5), rows)
        drop = torch.nn.functional.dropout
        measure(f"dropout_residual_layer_norm_{size}", lambda t: ln(drop(t, 0.1, True) + residual, (1024,), gamma, beta, 1e-5), rows)
        if n == 1 << 20:
            a, m, bias = torch.randn(1024, 256), torch.randn(256, 1024) * 0.06, torch.randn(1024)
            measure("matmul_bias_gelu_1M", lambda t: torch.nn.functional.gelu(t @ m + bias), a)
