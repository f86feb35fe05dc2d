package org.jtorch.op;

/**
 * One parameter of an op's signature, as PyTorch's schema writes it: {@code float? eps=None}.
 * {@code defaultValue} is the schema's text of the default, or null when the parameter has none.
 */
public record Param(String name, String type, String defaultValue) {
    public static Param tensor(String name) {
        return new Param(name, "Tensor", null);
    }

    public static Param scalar(String name, String type, String defaultValue) {
        return new Param(name, type, defaultValue);
    }

    /**
     * An optional callback argument ({@link Callback}): written {@code Callback? name=None} in the signature and in
     * docs/OPS.md, passed by {@code Dispatcher.call(op, inputs, callback, scalars)} beside the tensors and scalars, never
     * counted among either.
     */
    public static Param callback(String name) {
        return new Param(name, "Callback?", "None");
    }

    /** Whether this is a callback parameter ({@link #callback}). */
    public boolean isCallback() {
        return type.startsWith("Callback");
    }

    @Override
    public String toString() {
        return type + " " + name + (defaultValue == null ? "" : "=" + defaultValue);
    }
}
