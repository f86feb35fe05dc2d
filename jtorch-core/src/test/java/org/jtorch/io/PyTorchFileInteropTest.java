package org.jtorch.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.Flatten;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.types.DType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files written by {@link PyTorchFile#save} are loaded by PyTorch itself: {@code /usr/bin/python3}
 * with Debian's python3-torch (1.13) runs {@code torch.load} on them. Skipped when that Python or its
 * torch is missing (the fixture tests in {@link PyTorchFileTest} cover reading without it).
 */
class PyTorchFileInteropTest {
    private static final String PYTHON = "/usr/bin/python3";

    @TempDir
    Path dir;

    @BeforeAll
    static void needsPyTorch() throws InterruptedException {
        boolean ok;
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", "import torch").redirectErrorStream(true).start();
            ok = p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException ex) {
            ok = false;
        }
        assumeTrue(ok, PYTHON + " with torch is not available");
    }

    /** Runs {@code script} with the arguments; returns its standard output, failing with its output when it fails. */
    private static String python(String script, String... args) throws IOException, InterruptedException {
        List<String> cmd = new java.util.ArrayList<>(List.of(PYTHON, "-c", script));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("python timed out");
        }
        assertEquals(0, p.exitValue(), "python failed:\n" + out);
        return out.strip();
    }

    @Test
    void pyTorchLoadsAStateDictWithWeightsOnlyAndComputesJtorchsOutput() throws Exception {
        Torch.manualSeed(11);
        Module m = new Sequential(new Conv2d(1, 2, 3), new BatchNorm2d(2), new ReLU(), new Flatten(), new Linear(32, 3));
        m.eval();
        Path sd = dir.resolve("cnn.pt");
        Path io = dir.resolve("io.pt");
        PyTorchFile.saveStateDict(sd, m);
        try (Tensor x = Torch.randn(2, 1, 6, 6); Tensor y = m.forward(x)) {
            PyTorchFile.save(io, Map.of("x", x, "y", y));
        }
        String out = python("""
                import sys, torch
                sd = torch.load(sys.argv[1], weights_only=True)
                io = torch.load(sys.argv[2], weights_only=True)
                m = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(32, 3))
                m.load_state_dict(sd)
                m.eval()
                y = m(io["x"])
                print(list(sd.keys())[6], sd["1.num_batches_tracked"].dtype, torch.allclose(y, io["y"], rtol=1e-5, atol=1e-6))
                """, sd.toString(), io.toString());
        assertEquals("1.num_batches_tracked torch.int64 True", out);
    }

    @Test
    void pyTorchSeesTheSameValuesViewsAndStructure() throws Exception {
        Path p = dir.resolve("mixed.pt");
        try (Tensor base = Torch.arange(12).to(DType.FLOAT32).reshape(3, 4);
             Tensor row = base.select(0, 1);
             Tensor t = base.t();
             Tensor bf = Torch.tensor(new double[] {1.5, -2.25}).to(DType.BFLOAT16);
             Tensor i8 = Torch.tensor(new long[] {-128, 127}).to(DType.INT8);
             Tensor p16 = Torch.tensor(new double[] {0.5, 3}).to(DType.FLOAT16);
             Tensor w = Torch.ones(2).requiresGrad_()) {
            Map<String, Object> obj = new LinkedHashMap<>();
            obj.put("base", base);
            obj.put("row", row);
            obj.put("t", t);
            obj.put("bf", bf);
            obj.put("i8", i8);
            obj.put("f16", p16);
            obj.put("w", w);
            obj.put("misc", List.of(1L, 2.5, "gr\u00fc\u00dfe", new Object[] {true, null}, BigInteger.TWO.pow(70), new byte[] {0, (byte) 200}));
            PyTorchFile.save(p, obj);
        }
        String out = python("""
                import sys, torch
                o = torch.load(sys.argv[1])
                print(list(o.keys()))
                print(o["row"].tolist(), o["row"].storage_offset(), o["row"].storage().data_ptr() == o["base"].storage().data_ptr())
                print(o["t"].stride(), o["t"].tolist()[0])
                print(o["bf"].dtype, o["bf"].tolist(), o["i8"].dtype, o["i8"].tolist(), o["f16"].dtype, o["f16"].tolist())
                print(o["w"].requires_grad, o["w"].is_leaf)
                print(o["misc"])
                """, p.toString());
        assertEquals(String.join("\n",
                "['base', 'row', 't', 'bf', 'i8', 'f16', 'w', 'misc']",
                "[4.0, 5.0, 6.0, 7.0] 4 True",
                "(1, 4) [0.0, 4.0, 8.0]",
                "torch.bfloat16 [1.5, -2.25] torch.int8 [-128, 127] torch.float16 [0.5, 3.0]",
                "True True",
                "[1, 2.5, 'gr\u00fc\u00dfe', (True, None), 1180591620717411303424, b'\\x00\\xc8']"), out);
    }
}
