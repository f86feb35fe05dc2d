"""PyTorch's DDP over gloo on 2 CPU ranks, the same steps as jtorch's DdpStepBench (scripts/bench-ddp): an MLP
(784-2048-2048-10, batch 64 per rank) or ResNet-20 (CIFAR, batch 32 of 3x32x32 per rank), SGD lr 0.01, three ways
alternating round by round: alone (no communication), DDP (buckets all-reduced during backward), and every
gradient all-reduced after backward. One compute thread per rank. Rank 0 prints one line per way, in
DdpStepBench's format.

    python bench_ddp.py ROUNDS MODEL PORT
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cnn import ResNet20  # noqa: E402

NAMES = ["alone (no communication)", "DDP (buckets reduced during backward)", "all-reduce after backward"]


def model(name):
    torch.manual_seed(0)
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    return ResNet20(10)


def steps(n, m, opt, x, y, reduce_after, world):
    t = []
    for _ in range(n):
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(m(x), y).backward()
        if reduce_after:
            works = [dist.all_reduce(p.grad, async_op=True) for p in m.parameters()]
            for w in works:
                w.wait()
            for p in m.parameters():
                p.grad.div_(world)  # gloo has no AVG
        opt.step()
        t.append(time.perf_counter() - start)
    return t


def rank_main(rank, rounds, name, port):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    mlp = name == "mlp"
    x = torch.randn(64, 784) if mlp else torch.randn(32, 3, 32, 32)
    y = torch.randint(0, 10, (64 if mlp else 32,))
    models = [model(name), nn.parallel.DistributedDataParallel(model(name)), model(name)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]
    for k in range(3):
        steps(10, models[k], opts[k], x, y, k == 2, 2)  # warm-up
    times = [[], [], []]
    for _ in range(rounds):
        for k in range(3):
            times[k] += steps(10, models[k], opts[k], x, y, k == 2, 2)
    if rank == 0:
        for k in range(3):
            upper_median = sorted(times[k])[len(times[k]) // 2]  # as DdpStepBench
            print("%-9s %-40s median %.1f ms" % (name, NAMES[k], upper_median * 1e3), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    rounds, name, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    mp.spawn(rank_main, args=(rounds, name, port), nprocs=2)
