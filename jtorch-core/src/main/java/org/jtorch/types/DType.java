package org.jtorch.types;

/**
 * Element types, with PyTorch's names and type-promotion lattice.
 *
 * <p>{@code BOOL} is stored one byte per element (0 or 1); {@code FLOAT16} and {@code BFLOAT16} are
 * stored as their 16-bit patterns and computed in f32 on the CPU.
 */
public enum DType {
    BOOL("bool", 1, Kind.BOOL),
    UINT8("uint8", 1, Kind.INTEGRAL),
    INT8("int8", 1, Kind.INTEGRAL),
    INT16("int16", 2, Kind.INTEGRAL),
    INT32("int32", 4, Kind.INTEGRAL),
    INT64("int64", 8, Kind.INTEGRAL),
    FLOAT16("float16", 2, Kind.FLOATING),
    BFLOAT16("bfloat16", 2, Kind.FLOATING),
    FLOAT32("float32", 4, Kind.FLOATING),
    FLOAT64("float64", 8, Kind.FLOATING);

    /** Category used by type promotion: bool &lt; integral &lt; floating. */
    public enum Kind { BOOL, INTEGRAL, FLOATING }

    private final String pyName;
    private final int byteSize;
    private final Kind kind;

    DType(String pyName, int byteSize, Kind kind) {
        this.pyName = pyName;
        this.byteSize = byteSize;
        this.kind = kind;
    }

    /** Bytes per element. */
    public int byteSize() {
        return byteSize;
    }

    public Kind kind() {
        return kind;
    }

    public boolean isFloatingPoint() {
        return kind == Kind.FLOATING;
    }

    /** Integral types, excluding bool (as {@code torch.is_floating_point}'s complement minus bool). */
    public boolean isIntegral() {
        return kind == Kind.INTEGRAL;
    }

    public boolean isBool() {
        return this == BOOL;
    }

    /** PyTorch's name, e.g. {@code float32}. */
    public String pyName() {
        return pyName;
    }

    @Override
    public String toString() {
        return "torch." + pyName;
    }

    /** Parses a PyTorch name ({@code float32}, {@code torch.int64}, {@code float}, {@code long}, ...). */
    public static DType parse(String name) {
        Arguments.nonNull("DType.parse", "name", name);
        String n = name.startsWith("torch.") ? name.substring(6) : name;
        return switch (n) {
            case "bool" -> BOOL;
            case "uint8" -> UINT8;
            case "int8" -> INT8;
            case "int16", "short" -> INT16;
            case "int32", "int" -> INT32;
            case "int64", "long" -> INT64;
            case "float16", "half" -> FLOAT16;
            case "bfloat16" -> BFLOAT16;
            case "float32", "float" -> FLOAT32;
            case "float64", "double" -> FLOAT64;
            default -> throw new IllegalArgumentException("unknown dtype '" + name + "'");
        };
    }

    /**
     * {@code torch.promote_types}: the smallest type both operands convert to without losing range or
     * kind. Mixed signed/unsigned bytes widen to int16; float16 with bfloat16 gives float32.
     */
    public static DType promote(DType a, DType b) {
        Arguments.nonNull("DType.promote", "a", a);
        Arguments.nonNull("DType.promote", "b", b);
        if (a == b) return a;
        if (a.kind != b.kind) return a.kind.ordinal() > b.kind.ordinal() ? a : b;
        if (a.kind == Kind.FLOATING) {
            if ((a == FLOAT16 && b == BFLOAT16) || (a == BFLOAT16 && b == FLOAT16)) return FLOAT32;
            return a.byteSize >= b.byteSize ? a : b;
        }
        // integral
        if ((a == UINT8 && b == INT8) || (a == INT8 && b == UINT8)) return INT16;
        if (a == UINT8) return b.byteSize > 1 ? b : INT16;
        if (b == UINT8) return a.byteSize > 1 ? a : INT16;
        return a.byteSize >= b.byteSize ? a : b;
    }
}
