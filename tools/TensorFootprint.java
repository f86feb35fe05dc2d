import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;

/**
 * Retained heap per tensor handle (issue 15's footprint gate): holds a million tensors of each kind and prints the heap
 * used after a collection, divided by their count. A single-file program over a build's classes, so that two trees run
 * the same code, e.g. {@code java -Xmx3g --add-modules jdk.incubator.vector -cp TREE/jtorch-core/target/classes
 * tools/TensorFootprint.java}. Argument: how many tensors of each kind (default 1,000,000). Each figure counts the handle
 * with what it alone retains: its shape and strides arrays, its autograd state and, where a kind records one, its graph
 * node; the storage is shared by all views (an op's output owns its own, counted too).
 */
public final class TensorFootprint {
    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        Tensor m = Torch.randn(4, 4);
        Tensor leaf = Torch.randn(4, 4).requiresGrad_(true);
        Map<String, Supplier<Tensor>> kinds = new LinkedHashMap<>();
        kinds.put("view of a plain tensor (narrow)", () -> m.narrow(0, 1, 2));
        kinds.put("view of a leaf, grad mode off", () -> {
            try (Grad.Mode g = Grad.noGrad()) {
                return leaf.narrow(0, 1, 2);
            }
        });
        kinds.put("view of a leaf (narrow, records a node)", () -> leaf.narrow(0, 1, 2));
        kinds.put("detach of a plain tensor", m::detach);
        Tensor one = Torch.ones(1);
        Tensor oneLeaf = Torch.ones(1).requiresGrad_(true);
        kinds.put("1-element add (output with its storage)", () -> one.add(one));
        kinds.put("1-element add of a leaf (records a node)", () -> oneLeaf.add(one));
        kinds.put("leaf with its gradient accumulator", () -> {
            Tensor t = m.detach().requiresGrad_(true);
            t.gradAccumulator();
            return t;
        });
        for (Map.Entry<String, Supplier<Tensor>> k : kinds.entrySet()) {
            Tensor[] held = new Tensor[n];
            long before = usedAfterGc();
            for (int i = 0; i < n; i++) held[i] = k.getValue().get();
            long after = usedAfterGc();
            System.out.printf("%-45s %8.1f bytes per tensor%n", k.getKey(), (after - before) / (double) n);
            for (Tensor t : held) t.close();
        }
    }

    private static long usedAfterGc() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) System.gc();
        return rt.totalMemory() - rt.freeMemory();
    }
}
