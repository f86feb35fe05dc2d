package org.jtorch.types;

/**
 * Null checks for the public API's arguments, with messages naming the op and the parameter, as
 * {@code Objects.requireNonNull(x, "op: parameter must not be null")} would give, but without building
 * the message unless it is thrown (an op name is often computed, and these run on every op call).
 */
public final class Arguments {
    private Arguments() {}

    /** {@code value}; a {@link NullPointerException} {@code "op: param must not be null"} when it is null. */
    public static <T> T nonNull(String op, String param, T value) {
        if (value == null) throw new NullPointerException(op + ": " + param + " must not be null");
        return value;
    }

    /** {@code values}, rejecting a null array or a null element ({@code "op: tensors[1] must not be null"}). */
    public static <T> T[] nonNullElements(String op, String param, T[] values) {
        nonNull(op, param, values);
        for (int i = 0; i < values.length; i++) {
            if (values[i] == null) throw new NullPointerException(op + ": " + param + "[" + i + "] must not be null");
        }
        return values;
    }

    /** {@code values}, rejecting a null list or a null element. */
    public static <L extends Iterable<?>> L nonNullElements(String op, String param, L values) {
        nonNull(op, param, values);
        int i = 0;
        for (Object v : values) {
            if (v == null) throw new NullPointerException(op + ": " + param + "[" + i + "] must not be null");
            i++;
        }
        return values;
    }
}
