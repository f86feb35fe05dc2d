package org.jtorch.testing;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.nn.Module;

/**
 * The final instance fields of the {@link Module} classes under a class folder whose declared type may hold a module or
 * a tensor: the fields {@link Module#deepCopy()} would have to write, which it refuses (JEP 500). Classes that declare
 * their own {@code deepCopy} (to refuse copying) are skipped.
 */
public final class FinalModuleFields {
    private FinalModuleFields() {}

    /** The folder {@code type} was loaded from. */
    public static Path classFolder(Class<?> type) {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().getPath());
    }

    /** {@code Class.field} of each offending field, and in {@code modules[0]} how many module classes were looked at. */
    public static List<String> find(Path classes, int[] modules) throws IOException, ClassNotFoundException {
        List<Path> files;
        try (Stream<Path> walk = Files.walk(classes)) {
            files = walk.filter(p -> p.toString().endsWith(".class")).toList();
        }
        List<String> offenders = new ArrayList<>();
        for (Path file : files) {
            String name = classes.relativize(file).toString().replace('/', '.').replaceAll("\\.class$", "");
            Class<?> c = Class.forName(name, false, FinalModuleFields.class.getClassLoader());
            if (!Module.class.isAssignableFrom(c) || c == Module.class || declaresDeepCopy(c)) continue;
            modules[0]++;
            for (Field f : c.getDeclaredFields()) {
                int m = f.getModifiers();
                if (!Modifier.isStatic(m) && Modifier.isFinal(m) && mayHoldState(f.getGenericType())) offenders.add(c.getName() + "." + f.getName());
            }
        }
        return offenders;
    }

    private static boolean declaresDeepCopy(Class<?> c) {
        return Stream.of(c.getDeclaredMethods()).anyMatch(m -> m.getName().equals("deepCopy") && m.getParameterCount() == 0);
    }

    /** Whether a field of this type may hold a module or a tensor, directly or in an array, list or map. */
    private static boolean mayHoldState(Type type) {
        if (type instanceof ParameterizedType p) {
            Class<?> raw = (Class<?>) p.getRawType();
            if (Collection.class.isAssignableFrom(raw) || Map.class.isAssignableFrom(raw)) {
                Type[] args = p.getActualTypeArguments();
                return mayHoldState(args[args.length - 1]); // a list's elements, a map's values
            }
            return mayHoldState(raw);
        }
        if (!(type instanceof Class<?> c)) return true; // a type variable or wildcard: anything
        if (c.isPrimitive() || c == String.class || c.isEnum() || c.isRecord()) return false;
        if (c.isArray()) return mayHoldState(c.getComponentType());
        if (Module.class.isAssignableFrom(c) || Tensor.class.isAssignableFrom(c) || c.isAssignableFrom(Module.class)
                || c.isAssignableFrom(Tensor.class) || Collection.class.isAssignableFrom(c) || Map.class.isAssignableFrom(c)) {
            return true;
        }
        // Any of jtorch's own interfaces may be implemented by a module (AttentionEncoder, TupleModule...).
        return c.isInterface() && c.getName().startsWith("org.jtorch.");
    }
}
