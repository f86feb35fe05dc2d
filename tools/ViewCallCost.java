import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;

/**
 * Per-call thread CPU time of the view ops, without and with autograd, and of their backwards (issue 15's view
 * derivatives), and of the eager overhead of a one-element add and of a tiny graph's forward and backward (issue 15's
 * handle gates): a single-file program over a build's classes, so that two trees run the same code, e.g.
 * {@code JTORCH_NUM_THREADS=1 java --add-modules jdk.incubator.vector -cp TREE/jtorch-core/target/classes tools/ViewCallCost.java}.
 * Arguments: rounds (default 7) and substrings of the cases' names to run, separated by commas (default all). The cases first run in turn
 * for 3 s of thread CPU time. Prints one line per case: its name and the median over rounds of the thread CPU
 * nanoseconds per call.
 */
public final class ViewCallCost {
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    interface Call {
        void run();
    }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 7;
        Tensor m = Torch.randn(64, 64);
        Tensor leaf = Torch.randn(64, 64).requiresGrad_(true);
        Tensor row = Torch.randn(1, 64);
        Tensor rowLeaf = Torch.randn(1, 64).requiresGrad_(true);
        Tensor ones64 = Torch.ones(64);
        Tensor seq = Torch.randn(35 * 20, 4 * 650).requiresGrad_(true);
        Tensor[] stepGrads = new Tensor[35];
        for (int i = 0; i < 35; i++) stepGrads[i] = Torch.ones(20, 4 * 650);
        Tensor batch = Torch.randn(64, 32).requiresGrad_(true);
        Tensor[] rowGrads = new Tensor[64];
        for (int i = 0; i < 64; i++) rowGrads[i] = Torch.ones(32);

        Tensor one = Torch.ones(1);

        Map<String, Call> cases = new LinkedHashMap<>();
        cases.put("add 1-element", () -> one.add(one).close());
        Tensor oneLeaf = Torch.ones(1).requiresGrad_(true);
        cases.put("add 1-element (autograd)", () -> oneLeaf.add(one).close());
        // forward and backward of a few ops on small tensors (issue 15's tiny-graph gate)
        Tensor x4 = Torch.randn(4).requiresGrad_(true);
        Tensor w4 = Torch.randn(4);
        cases.put("tiny graph + backward", () -> {
            try (Tensor xw = x4.mul(w4); Tensor h = xw.add(x4); Tensor t = h.tanh(); Tensor y = t.sum()) {
                Autograd.grad(y, x4).close();
            }
        });
        cases.put("view", () -> m.view(16, 256).close());
        cases.put("reshape (a view)", () -> m.reshape(4096).close());
        cases.put("unsqueeze", () -> m.unsqueeze(0).close());
        cases.put("permute", () -> m.permute(1, 0).close());
        cases.put("transpose", () -> m.transpose(0, 1).close());
        cases.put("select", () -> m.select(0, 3).close());
        cases.put("narrow", () -> m.narrow(1, 2, 8).close());
        cases.put("expand", () -> row.expand(64, 64).close());
        cases.put("transpose (autograd)", () -> leaf.transpose(0, 1).close());
        cases.put("select (autograd)", () -> leaf.select(0, 3).close());
        cases.put("narrow (autograd)", () -> leaf.narrow(1, 2, 8).close());
        cases.put("expand (autograd)", () -> rowLeaf.expand(64, 64).close());
        cases.put("select + backward", () -> {
            try (Tensor y = leaf.select(0, 3)) {
                Autograd.grad(new Tensor[] {y}, new Tensor[] {leaf}, new Tensor[] {ones64}, false, false, false)[0].close();
            }
        });
        cases.put("split [700, 2600] into 35 + backward", () -> {
            List<Tensor> steps = seq.split(20, 0);
            Autograd.grad(steps.toArray(new Tensor[0]), new Tensor[] {seq}, stepGrads, false, false, false)[0].close();
            for (Tensor t : steps) t.close();
        });
        cases.put("Recurrent.splitRows 35 + backward", () -> {
            long[] sizes = new long[35];
            Arrays.fill(sizes, 20);
            List<Tensor> steps = org.jtorch.ops.Recurrent.splitRows(seq, sizes);
            Autograd.grad(steps.toArray(new Tensor[0]), new Tensor[] {seq}, stepGrads, false, false, false)[0].close();
            for (Tensor t : steps) t.close();
        });
        cases.put("unbind 64 (autograd)", () -> {
            for (Tensor t : batch.unbind(0)) t.close();
        });
        cases.put("unbind 64 + backward", () -> {
            List<Tensor> rows = batch.unbind(0);
            Autograd.grad(rows.toArray(new Tensor[0]), new Tensor[] {batch}, rowGrads, false, false, false)[0].close();
            for (Tensor t : rows) t.close();
        });

        String[] only = (args.length > 1 ? args[1] : "").split(",");
        cases.keySet().removeIf(name -> Arrays.stream(only).noneMatch(name::contains));
        warmUp(cases.values());
        for (Map.Entry<String, Call> c : cases.entrySet()) {
            Call call = c.getValue();
            long calls = calibrate(call);
            long[] perCall = new long[rounds];
            for (int r = 0; r < rounds; r++) {
                long t0 = MX.getCurrentThreadCpuTime();
                for (long i = 0; i < calls; i++) call.run();
                perCall[r] = (MX.getCurrentThreadCpuTime() - t0) / calls;
            }
            Arrays.sort(perCall);
            System.out.printf("%-40s %12d ns%n", c.getKey(), perCall[rounds / 2]);
        }
    }

    /**
     * Runs the cases in turn until they took {@value #WARM_UP_NS} ns of thread CPU time: on a loaded machine a JVM gets a
     * fraction of a core, and a warm-up by wall time would leave the calls interpreted.
     */
    private static void warmUp(Iterable<Call> calls) {
        long t0 = MX.getCurrentThreadCpuTime();
        while (MX.getCurrentThreadCpuTime() - t0 < WARM_UP_NS) {
            for (Call call : calls) {
                for (int i = 0; i < 100; i++) call.run();
            }
        }
    }

    private static final long WARM_UP_NS = 3_000_000_000L;

    /** Warms the call up and returns how many calls take about 0.2 s of thread CPU time. */
    private static long calibrate(Call call) {
        long calls = 1;
        while (true) {
            long t0 = MX.getCurrentThreadCpuTime();
            for (long i = 0; i < calls; i++) call.run();
            long dt = MX.getCurrentThreadCpuTime() - t0;
            if (dt > 200_000_000L) return Math.max(1, calls * 200_000_000L / dt);
            calls *= 2;
        }
    }
}
