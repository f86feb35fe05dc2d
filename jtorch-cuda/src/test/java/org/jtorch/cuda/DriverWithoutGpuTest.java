package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.List;
import org.jtorch.cuda.driver.CuConstants;
import org.jtorch.cuda.driver.CudaDriver;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The driver binding against a real {@code libcuda.so.1} on a machine without a GPU (Debian's Tesla
 * 525 driver library, unpacked by {@code scripts/fetch-cuda-libs}): every symbol the binding uses
 * resolves, calls that work without a device work, and failing calls become {@link CudaException}s
 * named after the call and the driver's error name. Skipped when the library was not fetched.
 */
class DriverWithoutGpuTest {
    private static CudaLibraries libraries;
    private static CudaDriver driver;

    @BeforeAll
    static void load() {
        if (TestLibraries.driverWithoutGpuDir().isPresent()) {
            Path dir = TestLibraries.driverWithoutGpuDir().get();
            libraries = new CudaLibraries(List.of(dir));
            driver = new CudaDriver(libraries.load(CudaLibraries.Kind.DRIVER)); // binds every function: all symbols exist
        }
    }

    @BeforeEach
    void onlyWithTheLibrary() {
        assumeTrue(driver != null, TestLibraries.SKIP); // each test reported skipped with the reason
    }

    @Test
    void driverVersionIsReadBeforeInit() {
        int v = driver.driverGetVersion(); // 12000 for the 525 driver (CUDA 12.0)
        assertTrue(v >= 11000, "driver version " + v);
        assertEquals(v / 1000 + "." + (v % 1000) / 10, libraries.status(CudaLibraries.Kind.DRIVER).version());
    }

    @Test
    void cuInitWithoutADeviceThrowsNamingTheCallAndError() {
        CudaException e = assertThrows(CudaException.class, () -> driver.init(0));
        assertEquals("cuInit", e.call());
        assertEquals(CuConstants.CUDA_ERROR_NO_DEVICE, e.code());
        assertEquals("cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", e.getMessage());
    }

    @Test
    void callsBeforeASuccessfulInitReportNotInitialized() {
        CudaException e = assertThrows(CudaException.class, driver::deviceGetCount);
        assertEquals("cuDeviceGetCount", e.call());
        assertTrue(e.errorName().equals("CUDA_ERROR_NOT_INITIALIZED") || e.errorName().equals("CUDA_ERROR_NO_DEVICE"), e.getMessage());
        assertThrows(CudaException.class, () -> driver.memAlloc(1024));
    }

    @Test
    void theDriverNamesEveryCuResultConstantAsWeDo() throws IllegalAccessException {
        int checked = 0;
        for (Field f : CuConstants.class.getFields()) {
            if (!Modifier.isStatic(f.getModifiers()) || !f.getName().startsWith("CUDA_")) continue;
            assertEquals(f.getName(), driver.errorName(f.getInt(null)), "cuGetErrorName(" + f.getInt(null) + ")");
            checked++;
        }
        assertTrue(checked >= 9, "checked " + checked);
    }

    @Test
    void theRuntimeReportsUnavailableWithTheDriversErrorAndWhere() {
        CudaRuntime rt = CudaRuntime.probe(libraries);
        assertFalse(rt.available());
        Path lib = libraries.status(CudaLibraries.Kind.DRIVER).path();
        String version = libraries.status(CudaLibraries.Kind.DRIVER).version();
        assertEquals("cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected) (driver " + lib + ", CUDA " + version + ")",
                rt.reason());
        assertEquals(0, rt.devices().size());
        assertEquals("CUDA is not available: " + rt.reason(), assertThrows(IllegalStateException.class, rt::driver).getMessage());
    }
}
