package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.testing.ChildJvm;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * No C2 compile of a CPU kernel refuses an inline for its node count. Past C2's fixed cutoff of 18,000 parse nodes
 * (NodeCountInliningCutoff) a call that is not {@code @ForceInline} stays a call, and in a vector loop every step
 * then boxes its vectors: the generated GELU backward ran at half speed in some JVMs and not others, as the parse's
 * node count moved with the profile (issue 20, 2026-12-07). A child JVM runs the largest pointwise formulas (eager
 * and fused by the JIT, forward and backward, float32 and float64) until C2 compiles their rows, and its
 * compilation log must show no such refusal in a generated kernel: the JIT splits a fused group that would
 * ({@link C2NodeBudget}).
 */
class KernelInliningTest {
    private static final Pattern TASK = Pattern.compile("<task [^>]*method='([^' ]+) ([^' ]+)");
    private static final Pattern KLASS = Pattern.compile("<klass id='(\\d+)' name='([^']+)'");
    private static final Pattern METHOD = Pattern.compile("<method id='(\\d+)' holder='(\\d+)' name='([^']+)'");
    private static final Pattern CALL = Pattern.compile("<call method='(\\d+)'");

    @Test
    void noGeneratedKernelPassesTheNodeCountCutoff(@TempDir Path dir) throws IOException, InterruptedException {
        Path log = dir.resolve("compilation.xml");
        Process p = ChildJvm.command(null, List.of("-XX:+UnlockDiagnosticVMOptions", "-XX:+LogCompilation",
                "-XX:LogFile=" + log, "-Djtorch.cpu.c2NodeBudget=" + System.getProperty("jtorch.test.c2NodeBudget", "true")), Workload.class).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "child JVM timed out");
        assertEquals(0, p.exitValue(), new String(out, StandardCharsets.UTF_8));

        String task = null;
        String callee = null;
        int c2Rows = 0;
        Map<String, String> klasses = new HashMap<>();
        Map<String, String> methods = new HashMap<>();
        Set<String> refused = new TreeSet<>();
        for (String line : (Iterable<String>) Files.lines(log, StandardCharsets.ISO_8859_1)::iterator) {
            Matcher m;
            if ((m = TASK.matcher(line)).find()) {
                // hidden classes get a new address per JVM: name the generated kernels without it
                task = m.group(1).replaceAll("/0x[0-9a-f]+", "") + "::" + m.group(2);
                if (!line.contains(" level='") && task.contains("GeneratedPointwiseKernel")) c2Rows++;
            } else if ((m = KLASS.matcher(line)).find()) {
                klasses.put(m.group(1), m.group(2).replace('/', '.'));
            } else if ((m = METHOD.matcher(line)).find()) {
                methods.put(m.group(1), klasses.getOrDefault(m.group(2), "?") + "::" + m.group(3));
            } else if ((m = CALL.matcher(line)).find()) {
                callee = methods.get(m.group(1));
            } else if (line.contains("NodeCountInliningCutoff") && task != null && task.contains("GeneratedPointwiseKernel")) {
                refused.add(task + " -> " + callee);
            }
        }
        // The check means something only if C2 compiled the generated rows.
        assertTrue(c2Rows >= 10, "C2 compiled " + c2Rows + " generated pointwise rows");
        assertEquals(Set.of(), refused, "kernel compiles that refused an inline past C2's node-count cutoff");
    }

    /** GELU (exact and tanh), Mish, softplus and SiLU forward and backward, eager and in one fused JIT chain. */
    public static final class Workload {
        public static void main(String[] args) {
            for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor x = Torch.randn(new long[] {4096}).to(dtype).requiresGrad_();
                    Tensor bias = Torch.randn(new long[] {4096}).to(dtype);
                    TensorFunction chain = in -> F.gelu(in[0].mul(1.5).add(bias)).mul(F.sigmoid(in[0])).add(F.softplus(in[0])).tanh();
                    TensorFunction fused = Jit.trace(chain, x);
                    for (int step = 0; step < 3000; step++) {
                        try (MemoryScope stepScope = new MemoryScope()) {
                            Tensor eager = F.gelu(x).add(F.gelu(x, "tanh")).add(F.mish(x)).add(F.softplus(x)).add(F.silu(x));
                            eager.add(fused.apply(x)).sum().backward();
                            x.setGrad(null);
                        }
                    }
                }
            }
            System.out.println("done");
        }
    }
}
