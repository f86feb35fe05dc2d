package org.jtorch.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.Init;
import org.jtorch.nn.Linear;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tensors that view a memory-mapped safetensors file fail with errors that name the op and the file, and
 * say what to do: writing one (it is read-only), using one after the file was closed, or after another
 * program truncated the file. Never the JDK's "Attempt to write a read-only segment", "Already closed"
 * or an {@link InternalError}.
 */
class MappedTensorErrorsTest {
    @TempDir
    Path dir;

    private Path file() throws IOException {
        Path p = dir.resolve("w.safetensors");
        try (Tensor w = Torch.arange(0.0, 1 << 16, 1.0, DType.FLOAT32, Device.cpu())) {
            SafeTensors.save(p, Map.of("w", w));
        }
        return p;
    }

    private static void assertReadOnlyError(Path file, String op, Runnable write) {
        IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, write::run, op);
        assertTrue(ex.getMessage().startsWith(op + ": tensor of shape "), ex.getMessage());
        assertTrue(ex.getMessage().contains(" is a read-only view of the memory-mapped file " + file.toAbsolutePath()
                + "; clone() it for a writable copy"), ex.getMessage());
    }

    @Test
    void writingAMappedTensorSaysItIsReadOnlyAndHowToCopyIt() throws IOException {
        Path p = file();
        try (SafeTensors.Loaded l = SafeTensors.load(p)) {
            Tensor w = l.get("w");
            assertReadOnlyError(p, "add_", () -> w.add_(1.0));
            assertReadOnlyError(p, "copy_", () -> w.copy_(Torch.zeros(1 << 16)));
            assertReadOnlyError(p, "mul_", () -> w.narrow(0, 0, 4).mul_(2.0)); // a view of it too
            try (Tensor copy = w.clone()) {
                copy.add_(1.0); // the way out works
                assertEquals(1.0, copy.narrow(0, 0, 1).item());
            }
            assertEquals(0.0, w.narrow(0, 0, 1).item(), "the mapping is unchanged");
        }
    }

    /** Arguments that get each in-place method as far as its first check. */
    private static Object[] arguments(Method m, Tensor like) {
        Class<?>[] types = m.getParameterTypes();
        Object[] args = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            Class<?> t = types[i];
            if (t == Tensor.class) args[i] = Torch.zerosLike(like);
            else if (t == Tensor[].class) args[i] = new Tensor[] {Torch.zeros(new long[] {1}, DType.INT64, Device.cpu())};
            else if (t == double.class) args[i] = 0.5;
            else if (t == long.class) args[i] = 1L;
            else if (t == int.class) args[i] = 0;
            else if (t == boolean.class) args[i] = false;
            else if (t == Generator.class) args[i] = new Generator(0);
            else if (t == String.class) args[i] = "relu";
            else if (t.isEnum()) args[i] = t.getEnumConstants()[0];
            else throw new AssertionError("no argument of type " + t + " for " + m);
        }
        return args;
    }

    /** Every public in-place method of Tensor and Init, found by reflection, refuses a mapped tensor. */
    @Test
    void everyInPlaceMethodRefusesAMappedTensor() throws Exception {
        Path p = file();
        List<String> checked = new ArrayList<>();
        try (SafeTensors.Loaded l = SafeTensors.load(p)) {
            Tensor w = l.get("w").view(256, 256); // 2-d, for the initialisers that need it
            for (Method m : Tensor.class.getMethods()) {
                if (!m.getName().endsWith("_") || Modifier.isStatic(m.getModifiers())) continue;
                if (m.getName().equals("requiresGrad_") || m.getName().equals("detach_")) continue; // metadata, not data
                invokeExpectingReadOnly(p, m, w, arguments(m, w));
                checked.add(m.getName());
            }
            for (Method m : Init.class.getMethods()) {
                if (!m.getName().endsWith("_") || m.getParameterCount() == 0 || m.getParameterTypes()[0] != Tensor.class) continue;
                Object[] args = arguments(m, w);
                args[0] = w;
                invokeExpectingReadOnly(p, m, null, args);
                checked.add("Init." + m.getName());
            }
            assertEquals(0.0, w.select(0, 0).select(0, 0).item(), "nothing was written");
        }
        assertTrue(checked.size() > 50, checked.toString());
    }

    private static void invokeExpectingReadOnly(Path p, Method m, Tensor target, Object[] args) throws IllegalAccessException {
        try {
            m.invoke(target, args);
            throw new AssertionError(m + " wrote a read-only mapped tensor");
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (!(cause instanceof IllegalArgumentException) || !cause.getMessage().contains("is a read-only view of the memory-mapped file "
                    + p.toAbsolutePath())) {
                throw new AssertionError(m + " threw " + cause, cause);
            }
        }
    }

    @Test
    void anOptimizerStepOnAMappedParameterRefusesIt() throws IOException {
        Path p = file();
        try (SafeTensors.Loaded l = SafeTensors.load(p)) {
            Tensor w = l.get("w").alias().requiresGrad_(true);
            w.setGrad(Torch.onesLike(w));
            SGD opt = new SGD(List.of(w), SGD.options().lr(0.1));
            assertReadOnlyError(p, "optimizer step", opt::step);
        }
    }

    @Test
    void aViewUsedAfterTheFileWasClosedNamesTheFileAndTheOp() throws IOException {
        Path p = file();
        Tensor view;
        SafeTensors.Loaded l = SafeTensors.load(p);
        view = l.get("w").narrow(0, 0, 4); // a view outlives the Loaded's own tensors
        Tensor direct = l.get("w");
        l.close();
        IllegalStateException ex = assertThrows(IllegalStateException.class, view::sum);
        assertEquals("sum: tensor of shape [4] and dtype torch.float32 is a view of the memory-mapped file " + p.toAbsolutePath()
                + ", which was closed (SafeTensors.Loaded.close()); clone() the tensors to keep before closing it", ex.getMessage());
        ex = assertThrows(IllegalStateException.class, () -> direct.mul(2.0));
        assertTrue(ex.getMessage().startsWith("mul: tensor of shape [65536] and dtype torch.float32 is a view of the memory-mapped file "),
                ex.getMessage());
        assertEquals("tensor(<closed>, shape=[4], dtype=torch.float32)", view.toString());
        view.close();
    }

    @Test
    void aFileTruncatedUnderneathIsAClearErrorNamingItNotAFault() throws IOException {
        Path p = file();
        try (SafeTensors.Loaded l = SafeTensors.load(p)) {
            Tensor w = l.get("w");
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                ch.truncate(100);
            }
            IllegalStateException ex = assertThrows(IllegalStateException.class, w::sum);
            assertTrue(ex.getMessage().startsWith("sum: tensor of shape [65536] and dtype torch.float32 is a view of the memory-mapped file "
                    + p.toAbsolutePath() + ", which shrank from "), ex.getMessage());
            assertTrue(ex.getMessage().endsWith(" to 100 bytes after it was loaded (another program truncated or rewrote it in place);"
                    + " load it again"), ex.getMessage());
            assertThrows(IllegalStateException.class, w::clone);
            Linear m = new Linear(256, 256, false, DType.FLOAT32, Device.cpu(), new Generator(0));
            assertThrows(IllegalStateException.class, () -> m.loadStateDict(Map.of("weight", w.view(256, 256))));
        }
    }

    @Test
    void aFileReplacedByRenameKeepsItsMappedTensorsValid() throws IOException {
        Path p = file();
        try (SafeTensors.Loaded l = SafeTensors.load(p)) {
            try (Tensor other = Torch.zeros(4)) {
                SafeTensors.save(p, Map.of("w", other)); // a new file renamed over the old: the mapping keeps the old one
            }
            assertArrayEquals(new float[] {0, 1, 2}, l.get("w").narrow(0, 0, 3).toFloatArray());
        }
    }
}
