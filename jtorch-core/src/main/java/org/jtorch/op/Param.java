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

    @Override
    public String toString() {
        return type + " " + name + (defaultValue == null ? "" : "=" + defaultValue);
    }
}
