package org.jtorch.types;

import java.util.Objects;

/** Where a tensor's storage lives: {@code cpu} or {@code cuda:N}. Immutable. */
public final class Device {
    /** Device kinds; each is served by one {@link org.jtorch.backend.Backend}. */
    public enum Type { CPU, CUDA }

    private static final Device CPU = new Device(Type.CPU, -1);

    private final Type type;
    private final int index;

    private Device(Type type, int index) {
        this.type = type;
        this.index = index;
    }

    public static Device cpu() {
        return CPU;
    }

    /** The current CUDA device ({@code cuda:0} unless changed). */
    public static Device cuda() {
        return cuda(0);
    }

    public static Device cuda(int index) {
        if (index < 0) throw new IllegalArgumentException("Device.cuda: index must be >= 0, got " + index);
        return new Device(Type.CUDA, index);
    }

    /** Parses {@code cpu}, {@code cuda} or {@code cuda:N}. */
    public static Device parse(String spec) {
        Arguments.nonNull("Device.parse", "spec", spec);
        String s = spec.trim().toLowerCase();
        if (s.equals("cpu")) return CPU;
        if (s.equals("cuda")) return cuda();
        if (s.startsWith("cuda:")) {
            try {
                return cuda(Integer.parseInt(s.substring(5)));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("invalid device '" + spec + "': expected cpu, cuda or cuda:N");
            }
        }
        throw new IllegalArgumentException("invalid device '" + spec + "': expected cpu, cuda or cuda:N");
    }

    public Type type() {
        return type;
    }

    /** Device ordinal, or -1 for the CPU. */
    public int index() {
        return index;
    }

    public boolean isCpu() {
        return type == Type.CPU;
    }

    public boolean isCuda() {
        return type == Type.CUDA;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Device d && d.type == type && d.index == index;
    }

    @Override
    public int hashCode() {
        return Objects.hash(type, index);
    }

    @Override
    public String toString() {
        return type == Type.CPU ? "cpu" : "cuda:" + index;
    }
}
