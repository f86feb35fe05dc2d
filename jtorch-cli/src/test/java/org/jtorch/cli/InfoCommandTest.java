package org.jtorch.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code jtorch info}: the CPU line names the model with its vendor, family and model numbers (figures cite it). */
class InfoCommandTest {
    @Test
    void cpuLineNamesTheModelWithItsFamilyAndModelNumbers() throws IOException {
        Path cpuinfo = Path.of("/proc/cpuinfo");
        assumeTrue(Files.isReadable(cpuinfo), "no /proc/cpuinfo on this system");
        List<String> lines = Files.readAllLines(cpuinfo);
        String name = first(lines, "model name"), vendor = first(lines, "vendor_id"), family = first(lines, "cpu family"),
                model = first(lines, "model");
        assumeTrue(name != null && vendor != null && family != null && model != null, "/proc/cpuinfo without x86's fields");

        var out = new ByteArrayOutputStream();
        PrintStream saved = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            assertEquals(0, Main.run(new String[] {"info"}));
        } finally {
            System.setOut(saved);
        }
        String cpuLine = out.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith("cpu:")).findFirst().orElseThrow();
        assertEquals("cpu:          " + name + " (" + vendor + " family " + family + " model " + model + ")", cpuLine);
    }

    /** The value of the first line whose key (before the colon, trimmed) is {@code key}: "model" is not "model name". */
    private static String first(List<String> lines, String key) {
        for (String line : lines) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equals(key)) return line.substring(colon + 1).trim();
        }
        return null;
    }
}
