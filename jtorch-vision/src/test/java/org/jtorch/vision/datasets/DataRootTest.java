package org.jtorch.vision.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The folders searched for downloaded datasets, in order. */
class DataRootTest {
    @Test
    void explicitFolderThenWorkingDirectoryThenTheInstallation() {
        assertEquals(List.of(Path.of("/data/x"), Path.of(".data"), Path.of("..", ".data"), Path.of("/opt/jtorch", ".data")),
                DataRoot.candidates(Map.of("JTORCH_DATA", "/data/x", "JTORCH_HOME", "/opt/jtorch")));
    }

    @Test
    void withoutEnvironmentOnlyTheWorkingDirectoryAndItsParent() {
        assertEquals(List.of(Path.of(".data"), Path.of("..", ".data")), DataRoot.candidates(Map.of("JTORCH_DATA", " ")));
    }
}
