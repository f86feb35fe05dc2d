package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * One shared library opened with {@code dlopen} (through {@link SymbolLookup#libraryLookup}) and never
 * closed: CUDA libraries keep global state, so they stay loaded for the life of the process.
 */
public final class NativeLibrary {
    private static final Linker LINKER = Linker.nativeLinker();

    private final Path path;
    private final SymbolLookup lookup;

    private NativeLibrary(Path path, SymbolLookup lookup) {
        this.path = path;
        this.lookup = lookup;
    }

    /** Opens the library at {@code path}; throws {@link CudaException} with the loader's message when it cannot. */
    public static NativeLibrary open(Path path) {
        try {
            return new NativeLibrary(path, SymbolLookup.libraryLookup(path, Arena.global()));
        } catch (IllegalArgumentException e) {
            throw new CudaException("cannot load " + path + ": " + e.getMessage(), e);
        }
    }

    public Path path() {
        return path;
    }

    public Optional<MemorySegment> find(String symbol) {
        return lookup.find(symbol);
    }

    /**
     * A downcall handle for the first of {@code symbols} the library exports (newer versioned names
     * first, e.g. {@code cuEventElapsedTime_v2} then {@code cuEventElapsedTime}).
     */
    public MethodHandle downcall(FunctionDescriptor descriptor, String... symbols) {
        for (String s : symbols) {
            Optional<MemorySegment> address = lookup.find(s);
            if (address.isPresent()) return LINKER.downcallHandle(address.get(), descriptor);
        }
        throw new CudaException(path + " exports none of " + String.join(", ", symbols), null);
    }

    /** Like {@link #downcall} but empty when the library lacks every name (optional entry points). */
    public Optional<MethodHandle> optionalDowncall(FunctionDescriptor descriptor, String... symbols) {
        for (String s : symbols) {
            Optional<MemorySegment> address = lookup.find(s);
            if (address.isPresent()) return Optional.of(LINKER.downcallHandle(address.get(), descriptor));
        }
        return Optional.empty();
    }

    @Override
    public String toString() {
        return path.toString();
    }
}
