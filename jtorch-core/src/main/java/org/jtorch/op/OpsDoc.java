package org.jtorch.op;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/** Prints docs/OPS.md from the registry (a test fails when the committed file differs). */
public final class OpsDoc {
    private OpsDoc() {}

    public static String render() {
        StringBuilder sb = new StringBuilder();
        sb.append("# Ops\n\n");
        sb.append("Generated from the op registry (`org.jtorch.op.OpRegistry`) by `PointwiseOpTableTest`; do not edit by hand.\n");
        sb.append("Regenerate with `mvn -B -q -pl jtorch-core test -Dtest=PointwiseOpTableTest -Djtorch.regenerateDocs=true`.\n\n");
        sb.append("Devices: the device types whose backend registers a kernel for the op (CUDA registers when its backend loads;\n");
        sb.append("`generated`: the kernels come from the declared formula: the CPU's generated Vector API loops and reference, the CUDA C\n");
        sb.append("that jtorch-cuda renders). Kernel: a pointwise op's `formula`, a composite's composition, a reduction's accumulating\n");
        sb.append("kernel, else the kernel it runs. A `Callback?` parameter is code the caller hands to the kernel (the JIT's GEMM and\n");
        sb.append("convolution epilogues, `org.jtorch.op.Callback`): such an op is never traced or autocast.\n\n");
        sb.append("| op | signature | dtypes | devices | differentiable | autocast (cpu / cuda) | kernel |\n");
        sb.append("|---|---|---|---|---|---|---|\n");
        for (OpDef op : OpRegistry.all()) {
            sb.append("| `").append(op.name()).append("` | `").append(op.signature()).append("` | ")
                    .append(dtypes(op)).append(" | ").append(devices(op)).append(" | ")
                    .append(op.isDifferentiable() ? "yes" : "no").append(" | ")
                    .append(policy(op, Device.Type.CPU)).append(" / ").append(policy(op, Device.Type.CUDA)).append(" | ")
                    .append(kernel(op)).append(halfAccumulation(op)).append(" |\n");
        }
        return sb.toString();
    }

    private static String dtypes(OpDef op) {
        List<String> names = new ArrayList<>();
        for (DType t : DType.values()) if (op.rule().admits(t)) names.add(t.pyName());
        String s = String.join(", ", names);
        return op.rule() == DTypeRule.FLOAT ? s + " (integers compute in the default float)" : s;
    }

    private static String devices(OpDef op) {
        if (op.hasDecomposition()) return "every (fused kernel where registered, else decomposed)";
        if (op.kind() == OpDef.Kind.COMPOSITE || op.composition() != null) return "every (composite)";
        if (op.kind() == OpDef.Kind.REDUCTION || op.kind() == OpDef.Kind.ALONG_DIM || op.kind() == OpDef.Kind.FRONT_END
                || op.kind() == OpDef.Kind.STRUCTURED || op.kind() == OpDef.Kind.MUTATING) return "cpu, cuda";
        return "cpu, cuda (generated)";
    }

    private static String policy(OpDef op, Device.Type type) {
        CastPolicy p = op.autocast(type);
        return p == null ? "-" : p.name().toLowerCase();
    }

    private static String halfAccumulation(OpDef op) {
        DType t = op.halfAccumulation();
        return t == null ? "" : "; float16 and bfloat16 compute in " + t.pyName() + ", rounded once";
    }

    private static String kernel(OpDef op) {
        if (op.hasDecomposition()) {
            return "`" + op.kernel() + "` (meta function + kernel per device) where one takes the call, else `" + op.composition() + "`"
                    + (op.doc().isEmpty() ? "" : ": " + op.doc());
        }
        if (op.composition() != null) return "`" + op.composition() + "`";
        if (op.accumulation() != null) return "accumulating reduction `" + op.accumulation().name().toLowerCase() + "`";
        if (op.kind() == OpDef.Kind.FRONT_END) return "hand-written front end" + (op.doc() == null ? "" : ": " + op.doc());
        if (op.takesCallback()) {
            return "`" + op.kernel() + "` (meta function + kernel per device, given the callback; JIT-internal: not traced, not autocast)"
                    + (op.doc().isEmpty() ? "" : ": " + op.doc());
        }
        if (op.kind() == OpDef.Kind.STRUCTURED) return "`" + op.kernel() + "` (meta function + kernel per device)" + (op.doc().isEmpty() ? "" : ": " + op.doc());
        if (!op.kind().isPointwise()) return "`" + op.kernel() + "`";
        String formula = "formula `" + op.formula() + "`";
        return op.kernel().equals(op.name()) ? formula : formula + " (`" + op.kernel() + "`'s kernel)";
    }
}
