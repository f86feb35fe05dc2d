package org.jtorch.bench;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * The parts of {@link GpuBench} that need no GPU: the smoke test's training and pass rule on the CPU (the
 * same code trains on cuda:0 in {@code scripts/gpu-check device}), and the table with missing results.
 */
class GpuBenchTest {
    @Test
    void theSmokeTestPassesOnTheCpu() {
        Map<String, String> r = GpuBench.smoke(Device.cpu());
        System.out.println("GpuBench smoke on cpu: " + r);
        assertTrue(r.get("smoke_loss").startsWith("PASS"), r.toString());
        assertTrue(r.get("smoke_accuracy").startsWith("PASS"), r.toString());
    }

    @Test
    void theTableNumbersLongReasonsAsNotesAndNamesMissingResults() {
        Map<String, String> jtorch = new LinkedHashMap<>();
        jtorch.put("matmul_4096_f32", "41.2");
        jtorch.put("resnet50_images_s", "not run: UnsupportedOperationException: conv2d: no CUDA kernel is wired to this op yet");
        Map<String, String> torch = new LinkedHashMap<>();
        torch.put("_torch_version", "2.11.0");
        torch.put("matmul_4096_f32", "50.3");
        String table = GpuBench.table(jtorch, torch, java.nio.file.Path.of("torch.tsv"));
        assertTrue(table.contains("jtorch vs PyTorch 2.11.0"), table);
        assertTrue(table.matches("(?s).*matmul 4096 f32\\s+41\\.2\\s+50\\.3\\s+TFLOP/s.*"), table);
        assertTrue(table.matches("(?s).*ResNet-50 train b128 224 f32\\s+not run \\[\\d\\]\\s+not run \\[\\d\\].*"), table);
        assertTrue(table.matches("(?s).*\\n\\[\\d\\] not run: UnsupportedOperationException: conv2d: no CUDA kernel.*"), table);
        assertTrue(table.matches("(?s).*\\n\\[\\d\\] not run: no result \\(see the PyTorch script's output\\).*"), table);
        assertTrue(table.contains("not run: not measured"), "a key neither side wrote says so");
    }
}
