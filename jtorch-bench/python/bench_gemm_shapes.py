"""PyTorch side of `scripts/bench-gemm --shapes small --threads 1 --cputime`: torch.mm at the given shapes on one thread,
timed in the calling thread's CPU time (best of 7 reps), GFLOP/s. Arguments: m,n,k,LAYOUT ... where LAYOUT is NN, NT
(B transposed) or TN (A transposed), e.g. 20,800,200,NT 20,200,800,NN 800,200,20,TN."""
import sys
import time

import torch


def main(shapes):
    torch.set_num_threads(1)
    for shape in shapes:
        m, n, k, layout = shape.split(",")
        m, n, k = int(m), int(n), int(k)
        a = torch.rand(k, m).t() if layout[0] == "T" else torch.rand(m, k)
        b = torch.rand(n, k).t() if layout[1] == "T" else torch.rand(k, n)
        c = torch.empty(m, n)
        iters = max(3, int(5e7 / (2 * m * n * k)))
        best = float("inf")
        for _ in range(7):
            t0 = time.thread_time()
            for _ in range(iters):
                torch.mm(a, b, out=c)
            best = min(best, time.thread_time() - t0)
        seconds = best / iters
        print(f"{shape}: {seconds * 1e6:.1f} us, {2 * m * n * k / seconds * 1e-9:.1f} GFLOP/s")


if __name__ == "__main__":
    main(sys.argv[1:])
