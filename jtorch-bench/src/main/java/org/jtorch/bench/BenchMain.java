package org.jtorch.bench;

import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import org.jtorch.backend.cpu.Parallel;

/** {@code jtorch bench}: prints benchmark results as {@code name value} lines, one per measurement. */
public final class BenchMain {
    /** The suites whose {@code --cputime} figures are the calling thread's CPU time for the whole measured work. */
    private static final Set<String> CALLER_CPU_TIME_SUITES = Set.of("reduce", "training", "conv", "rnn", "jit", "jit-steps", "jit-inference");

    private BenchMain() {}

    public static void main(String[] args) {
        String what = args.length > 0 ? args[0] : "--help";
        boolean quick = Arrays.asList(args).contains("--quick");
        Timing.balanceReport = Arrays.asList(args).contains("--balance");
        if (Arrays.asList(args).contains("--cputime") && CALLER_CPU_TIME_SUITES.contains(what) && Parallel.numThreads() > 1) {
            // The other intra-op threads' share of each kernel would go uncounted: the figures would read about 1/N.
            System.err.println("jtorch bench " + what + ": --cputime times the calling thread only, and this JVM has "
                    + Parallel.numThreads() + " intra-op threads; run it with JTORCH_NUM_THREADS=1");
            System.exit(2);
        }
        switch (what) {
            case "peak" -> print(PeakBench.run(quick));
            case "core" -> print(CoreBench.run(quick));
            case "reduce" -> print(ReduceBench.run(quick, Arrays.asList(args).contains("--cputime")));
            case "training" -> {
                print(TrainingBench.run(quick, Arrays.asList(args).contains("--cputime")));
                if (Arrays.asList(args).contains("--profile")) {
                    System.err.println("MLP step, float32:");
                    System.err.print(TrainingBench.profileMlp(false, 200));
                    System.err.println("MLP step, bf16 autocast:");
                    System.err.print(TrainingBench.profileMlp(true, 200));
                }
            }
            case "conv" -> print(ConvBench.run(quick, Arrays.asList(args).contains("--cputime"), option(args, "--only")));
            case "cnn" -> {
                print(CnnBench.run(quick, Arrays.asList(args).contains("--amp")));
                // To stderr: scripts/bench reads the measurements from stdout.
                if (Arrays.asList(args).contains("--profile")) System.err.print(CnnBench.profileResnet20(20));
            }
            case "data" -> print(DataBench.run(quick));
            case "sort" -> print(SortBench.run(quick));
            case "rnn" -> print(RnnBench.run(quick, Arrays.asList(args).contains("--cputime")));
            case "optim" -> print(OptimBench.run(quick));
            case "jit" -> print(JitBench.run(quick, Arrays.asList(args).contains("--cputime")));
            case "jit-steps" -> {
                boolean cpuTime = Arrays.asList(args).contains("--cputime");
                if (Arrays.asList(args).contains("--phases")) {
                    System.out.print(JitStepBench.phases(quick, cpuTime));
                } else {
                    print(JitStepBench.run(quick, cpuTime, option(args, "--only")));
                    if (Arrays.asList(args).contains("--profile")) System.err.print(JitStepBench.profile(quick ? 5 : 20));
                }
            }
            case "jit-inference" -> print(JitInferenceBench.run(quick, Arrays.asList(args).contains("--cputime"), option(args, "--only")));
            case "examples" -> {
                String program = option(args, "--program");
                if (program != null) {
                    print(ExamplesBench.runOne(program, quick, Long.parseLong(option(args, "--launched-at")),
                            Arrays.asList(args).contains("--profile"), Arrays.asList(args).contains("--cputime")));
                } else {
                    ExamplesBench.runAll(quick, option(args, "--only"), Arrays.asList(args).contains("--profile"),
                            Arrays.asList(args).contains("--cputime"));
                }
            }
            case "warmup" -> {
                String workload = option(args, "--workload");
                if (workload != null) {
                    try {
                        String seconds = option(args, "--seconds");
                        print(WarmupBench.runOne(workload, Long.parseLong(option(args, "--launched-at")), option(args, "--tag"),
                                seconds == null ? null : Double.parseDouble(seconds), Arrays.asList(args).contains("--cputime")));
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                } else {
                    String rounds = option(args, "--rounds");
                    WarmupBench.runAll(option(args, "--only"), Arrays.asList(args).contains("--aot"),
                            rounds == null ? 3 : Integer.parseInt(rounds), option(args, "--seconds"),
                            Arrays.asList(args).contains("--cputime"));
                }
            }
            case "dtype" -> print(DtypeBench.run(quick, option(args, "--only")));
            case "rows" -> print(RowsBench.run(quick));
            case "gpu-sim" -> System.out.print(Arrays.asList(args).contains("--graphs") ? GpuSimBench.runGraphs() : GpuSimBench.run());
            case "--help", "-h", "help" -> System.out.println("""
                    usage: jtorch bench <suite> [--quick] [--profile]

                    suites:
                      peak       this machine's ceilings: f32 FMA GFLOP/s (one core, all threads), read/copy/write GB/s
                                 (arrays of 256 MiB or twice the last-level cache); conv prints fractions of the FMA
                                 figures (*_of_peak), core and reduce of the bandwidth at their own size (*_of_ceiling)
                      core       eager overhead, elementwise bandwidth, machine copy bandwidth
                      reduce     sum, mean, amax, argmax, var, norm, softmax and log-softmax on 16M floats: over everything,
                                 rows and columns of 4096x4096 (GB/s, and fractions of the read/copy bandwidth at 64 MiB;
                                 --cputime: in thread CPU time, for JTORCH_NUM_THREADS=1)
                      training   MLP 784-512-512-10 training step (batch 128), in f32 and with bf16 autocast; tiny autograd
                                 graph (--cputime: the MLP steps in thread CPU time, for JTORCH_NUM_THREADS=1)
                      conv       conv2d forward and forward+backward: 128x64x32x32 3x3, ResNet-20 and ResNet-50 shapes,
                                 each also as a fraction of the FMA peak (--only NAME: the shapes whose name contains it;
                                 --cputime: in thread CPU time, for JTORCH_NUM_THREADS=1)
                      cnn        ResNet-20 (CIFAR shape, batch 128) and LeNet-5 (MNIST shape, batch 64) training steps
                                 (--amp: also the ResNet-20 step with CPU bf16 autocast)
                      rnn        LSTM and GRU layers (seq 35, batch 20, hidden 200, 2 layers) forward and forward+backward;
                                 one cell step's fused kernels against the same formulas as tensor ops
                                 (--cputime: the layers in thread CPU time, for JTORCH_NUM_THREADS=1)
                      sort       sort, argsort, topk, median, unique, searchsorted, multinomial (ms)
                      jit        pointwise chains (relu(x) + c, gelu(x * w + b), a tanh/sigmoid chain), layer norm over rows of
                                 1024 with and without a residual add, at 1M and 16M floats, and gelu(x @ w + b) at 1M,
                                 eager against Jit.trace, and the first compiled call (python/bench_jit.py: torch.compile;
                                 --cputime: in thread CPU time, for JTORCH_NUM_THREADS=1)
                      jit-steps  MLP (batch 128), ResNet-20 (batch 32), LSTM word LM and char GPT training steps, eager
                                 against Jit.compile in alternating rounds, and each step's peak CPU allocator bytes
                                 (--cputime: in thread CPU time, for JTORCH_NUM_THREADS=1; --only mlp,resnet20,wordlm,chargpt;
                                 --profile: each kernel's time per step, both ways; --phases: the MLP step's forward,
                                 loss, backward and optimizer times, both ways)
                      jit-inference  ResNet-20 (32x32) and ResNet-50 (224x224) forwards in evaluation, batch 32 and 1,
                                 eager against Jit.compile (batch norms folded, convolution epilogues) in alternating
                                 rounds (--cputime: in thread CPU time, for JTORCH_NUM_THREADS=1; --only NAME,...:
                                 resnet20_b32, resnet20_b1, resnet50_b1, resnet50_b32; python/bench_jit.py --models)
                      optim      one step of Adam, NAdam, RAdam, Adamax, SparseAdam (1024x1024 float32); one LBFGS step
                                 with the strong-Wolfe line search (least squares, 65,536 parameters, 10 iterations)
                      examples   training steps of the pytorch/examples ports (mnist, vae, dcgan, word LM LSTM and
                                 Transformer, char GPT, time-sequence prediction in float64) and LeNet-5, ResNet-20,
                                 ResNet-18 at 64x64, each in a fresh JVM: steady-state step (ms), time to the first
                                 step and to 90% of the steady state (s, from the launch); --only NAME: one program;
                                 --cputime: the steps in thread CPU time, for JTORCH_NUM_THREADS=1, for 10 s of the
                                 main thread's CPU, and both times also in the main thread's and the process's CPU
                      warmup     time to the steady state in a fresh JVM, MLP (batch 128) and ResNet-20 (batch 128), under
                                 JFR: per-step curve, steps and seconds to 90% of the steady state from the first step, where
                                 each half second went (interpreter, C1, C2, Vector API fallbacks, compile queue), when C2
                                 compiled the hot methods, the first step's hottest methods; --only mlp|resnet20 or one
                                 of the examples' programs; --aot: records an AOT cache with the same workload, then
                                 alternates runs without and with it (--rounds N, default 3; needs the jars);
                                 --seconds S: seconds of steps per run (default 20, at least 40 ResNet-20 steps);
                                 --cputime: the steps in the main thread's CPU time, for JTORCH_NUM_THREADS=1
                      dtype      float64 against float32 per element: GEMM, elementwise, sum, an LSTM cell, an L-BFGS step
                                 (--only REGEX: those ops; JTORCH_NUM_THREADS=1: in thread CPU time)
                      rows       integer add/mul per dtype (1M), float64 erf/gelu (1 and 1M), integer casts (1M), in µs
                                 (JTORCH_NUM_THREADS=1: in thread CPU time)
                      data       DataLoader batches/s, ~1 ms CPU transform per sample, batch 32: 0 vs 2 workers
                      gpu-sim    per training step on the CUDA simulator (JTORCH_CUDA_PATH=$(scripts/cuda-sim build)): kernel
                                 launches, library calls, host waits, bytes copied, allocations, peak memory; then
                                 eager, compiled and CUDA graph launches per step (digits MLP, ResNet-20, ResNet-50);
                                 --graphs: only that second table
                    Prints 'name value' lines; scripts/bench runs PyTorch side by side and writes a table.
                    --profile (cnn, training, examples): afterwards, each kernel's host time in a ResNet-20 step (cnn), in an
                              MLP step in f32 and with bf16 autocast (training), or in each program's step (examples), to stderr.
                    --balance (with --profile): also how each kernel's CPU work split over the intra-op threads, per step
                              (thread CPU time): all threads' ms; the kernel's ms had each thread its own core (its serial
                              part, then its chunks as the threads take them) and that less an even split (what the split
                              keeps from the other threads, whatever the load: the list's order); the caller's serial ms
                              (outside parallel chunks; of it, regions of one chunk); as the threads ran, the busiest one's
                              share, the caller's ms spinning for the others' chunks, the workers' ms. Run with
                              JTORCH_NUM_THREADS=2 (or more); the pool reads the threads' CPU clocks around each chunk then, so
                              kernel times grow a little.""");
            default -> {
                System.err.println("jtorch bench: unknown suite '" + what + "'");
                System.exit(2);
            }
        }
    }

    /** The value after {@code name} in {@code args}, or null. */
    private static String option(String[] args, String name) {
        int i = Arrays.asList(args).indexOf(name);
        return i >= 0 && i + 1 < args.length ? args[i + 1] : null;
    }

    static void print(Map<String, Double> results) {
        results.forEach((k, v) -> System.out.printf("%s %.4f%n", k, v));
    }
}
