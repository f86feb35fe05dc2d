package org.jtorch.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where a fresh JVM's first seconds go, from a JFR recording reduced to plain records: which tier ran each execution
 * sample (the interpreter, C1 or C2, looked up from the method's compilations before the sample), whether the sample
 * was in the Vector API's Java fallbacks (vector classes on the stack, not running as C2 code, so the vector ops are
 * boxed objects rather than intrinsics), and when C2 compiled the methods the steady state spends its time in.
 * Times are seconds from the first training step.
 */
final class WarmupTimeline {
    /** One finished compilation: {@code level} 1-3 is C1, 4 is C2; {@code seconds}: how long it took (wall). */
    record Compile(String method, int level, boolean osr, double endSeconds, double seconds) {}

    /** One stack frame of a sample; {@code type} is JFR's: "Interpreted", "JIT compiled", "Inlined" or "Native". */
    record Frame(String method, String type) {}

    /** One execution sample, its frames from the top. */
    record Sample(double seconds, List<Frame> frames) {}

    /** Periodic compile-queue lengths. */
    record Queue(double seconds, String compiler, long size) {}

    enum Tier { INTERPRETER, C1, C2, NATIVE, UNKNOWN }

    /** A sample's tier, and whether it ran the Vector API's Java fallbacks (vector code outside C2). */
    record Classified(Tier tier, boolean vectorFallback) {}

    private final Map<String, List<Compile>> compilesByMethod = new HashMap<>();
    private final List<Compile> compiles;
    private final List<Sample> samples;
    private final List<Queue> queues;

    WarmupTimeline(List<Compile> compiles, List<Sample> samples, List<Queue> queues) {
        this.compiles = compiles.stream().sorted(Comparator.comparingDouble(Compile::endSeconds)).toList();
        this.samples = samples;
        this.queues = queues;
        for (Compile c : this.compiles) compilesByMethod.computeIfAbsent(c.method(), m -> new ArrayList<>()).add(c);
    }

    /**
     * The tier of a sample: its top frame's if interpreted or native, else that of the compiled method that holds
     * the top frame (inlined frames sit above it), whose most recent compilation before the sample says C1 or C2.
     */
    Classified classify(Sample s) {
        List<Frame> frames = s.frames();
        Tier tier = Tier.UNKNOWN;
        if (!frames.isEmpty()) {
            String top = frames.get(0).type();
            if (top.equals("Interpreted")) tier = Tier.INTERPRETER;
            else if (top.equals("Native")) tier = Tier.NATIVE;
            else {
                for (Frame f : frames) {
                    if (f.type().equals("JIT compiled")) {
                        tier = tierAt(f.method(), s.seconds());
                        break;
                    }
                }
            }
        }
        boolean vector = tier != Tier.C2 && frames.stream().limit(12).anyMatch(f -> isVectorApi(f.method()));
        return new Classified(tier, vector);
    }

    private Tier tierAt(String method, double seconds) {
        Compile last = null;
        for (Compile c : compilesByMethod.getOrDefault(method, List.of())) {
            if (c.endSeconds() > seconds) break;
            last = c;
        }
        if (last == null) return Tier.UNKNOWN;
        return last.level() == 4 ? Tier.C2 : Tier.C1;
    }

    static boolean isVectorApi(String method) {
        return method.startsWith("jdk.incubator.vector.") || method.startsWith("jdk.internal.vm.vector.");
    }

    /** Per bucket of {@code bucketSeconds} from 0 to {@code untilSeconds}: samples by tier, fallbacks, compiles, C2 queue. */
    String table(double bucketSeconds, double untilSeconds) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("%9s %7s %6s %6s %6s %6s %6s %9s %5s %5s %8s%n", "from (s)", "samples", "interp", "C1", "C2", "native",
                "other", "vec-fallb", "C1+", "C2+", "C2 queue"));
        int n = (int) Math.ceil(untilSeconds / bucketSeconds);
        for (int b = 0; b < n; b++) {
            double lo = b * bucketSeconds, hi = lo + bucketSeconds;
            Map<Tier, Integer> counts = new EnumMap<>(Tier.class);
            int vector = 0, total = 0;
            for (Sample s : samples) {
                if (s.seconds() < lo || s.seconds() >= hi) continue;
                Classified c = classify(s);
                counts.merge(c.tier(), 1, Integer::sum);
                if (c.vectorFallback()) vector++;
                total++;
            }
            long c1 = compiles.stream().filter(c -> c.endSeconds() >= lo && c.endSeconds() < hi && c.level() < 4).count();
            long c2 = compiles.stream().filter(c -> c.endSeconds() >= lo && c.endSeconds() < hi && c.level() == 4).count();
            long queue = queues.stream().filter(q -> q.seconds() >= lo && q.seconds() < hi && q.compiler().contains("2"))
                    .mapToLong(Queue::size).max().orElse(-1);
            sb.append(String.format("%9.1f %7d %6s %6s %6s %6s %6s %9s %5d %5d %8s%n", lo, total, pct(counts.get(Tier.INTERPRETER), total),
                    pct(counts.get(Tier.C1), total), pct(counts.get(Tier.C2), total), pct(counts.get(Tier.NATIVE), total),
                    pct(counts.get(Tier.UNKNOWN), total), pct(vector, total), c1, c2, queue < 0 ? "-" : Long.toString(queue)));
        }
        return sb.toString();
    }

    private static String pct(Integer count, int total) {
        if (total == 0) return "-";
        return Math.round(100.0 * (count == null ? 0 : count) / total) + "%";
    }

    /** The fraction of the samples from {@code lo} to {@code hi} seconds that ran the Vector API's Java fallbacks. */
    double vectorFallbackShare(double lo, double hi) {
        int vector = 0, total = 0;
        for (Sample s : samples) {
            if (s.seconds() < lo || s.seconds() >= hi) continue;
            total++;
            if (classify(s).vectorFallback()) vector++;
        }
        return total == 0 ? Double.NaN : (double) vector / total;
    }

    /**
     * The methods that hold the most samples from {@code fromSeconds} on (the steady state's hot code: the compiled
     * method under the top frame), each with the times of its C2 compilations (OSR marked), most samples first. A
     * JDK method among them (the Vector API's fallbacks, run as calls where C2 did not intrinsify them) also names
     * the jtorch method that called it most often.
     */
    String hotMethods(double fromSeconds, int count) {
        return hotMethods(fromSeconds, Double.POSITIVE_INFINITY, count);
    }

    /** {@link #hotMethods(double, int)} over the samples from {@code fromSeconds} to {@code toSeconds}. */
    String hotMethods(double fromSeconds, double toSeconds, int count) {
        Map<String, Integer> hot = new HashMap<>();
        Map<String, Map<String, Integer>> callers = new HashMap<>();
        int total = 0;
        for (Sample s : samples) {
            if (s.seconds() < fromSeconds || s.seconds() >= toSeconds || s.frames().isEmpty()) continue;
            String holder = holder(s.frames());
            hot.merge(holder, 1, Integer::sum);
            s.frames().stream().map(Frame::method).filter(m -> m.startsWith("org.jtorch.")).findFirst()
                    .ifPresent(c -> callers.computeIfAbsent(holder, h -> new HashMap<>()).merge(c, 1, Integer::sum));
            total++;
        }
        StringBuilder sb = new StringBuilder();
        final int all = total;
        hot.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed()).limit(count).forEach(e -> {
            List<String> c2 = new ArrayList<>();
            for (Compile c : compilesByMethod.getOrDefault(e.getKey(), List.of())) {
                if (c.level() == 4) c2.add(String.format("%.2f%s", c.endSeconds(), c.osr() ? "(osr)" : ""));
            }
            sb.append(String.format("%5.1f%%  %-90s C2 at %s%n", 100.0 * e.getValue() / all, e.getKey(),
                    c2.isEmpty() ? "never (or before the recording)" : String.join(", ", c2)));
            if (!e.getKey().startsWith("org.jtorch.") && callers.containsKey(e.getKey())) {
                callers.get(e.getKey()).entrySet().stream().max(Map.Entry.comparingByValue())
                        .ifPresent(c -> sb.append(String.format("        called from %s (%d of %d samples)%n", c.getKey(),
                                c.getValue(), e.getValue())));
            }
        });
        return sb.toString();
    }

    /** The method whose code a sample was running: the first frame that is not inlined into another. */
    private static String holder(List<Frame> frames) {
        for (Frame f : frames) if (!f.type().equals("Inlined")) return f.method();
        return frames.get(frames.size() - 1).method();
    }

    /** C2 compilations of methods whose name starts with {@code prefix}, per second of the run: when the kernels arrive. */
    String c2PerSecond(String prefix, double untilSeconds) {
        TreeMap<Integer, Integer> perSecond = new TreeMap<>();
        for (Compile c : compiles) {
            if (c.level() == 4 && c.method().startsWith(prefix) && c.endSeconds() < untilSeconds) {
                perSecond.merge((int) Math.floor(c.endSeconds()), 1, Integer::sum);
            }
        }
        StringBuilder sb = new StringBuilder();
        perSecond.forEach((s, k) -> sb.append(s).append("s:").append(k).append(' '));
        return sb.toString().trim();
    }

    /**
     * The {@code count} longest C2 compilations that finished before {@code untilSeconds}, and the C2 compile time of
     * all of them: what the compiler thread spent before the steady state, and on which methods.
     */
    String longestC2(double untilSeconds, int count) {
        List<Compile> c2 = compiles.stream().filter(c -> c.level() == 4 && c.endSeconds() < untilSeconds).toList();
        double total = c2.stream().mapToDouble(Compile::seconds).sum();
        double osr = c2.stream().filter(Compile::osr).mapToDouble(Compile::seconds).sum();
        StringBuilder sb = new StringBuilder(String.format(
                "  %d C2 compilations, %.2f s in all (wall, compiler thread), of which %d OSR compilations %.2f s%n",
                c2.size(), total, c2.stream().filter(Compile::osr).count(), osr));
        c2.stream().sorted(Comparator.comparingDouble(Compile::seconds).reversed()).limit(count).forEach(c -> sb.append(
                String.format("  %6.0f ms  done at %6.2f s%s  %s%n", c.seconds() * 1e3, c.endSeconds(), c.osr() ? " (osr)" : "      ",
                        c.method())));
        return sb.toString();
    }

    /** The compilations at tiers {@code minLevel} to {@code maxLevel} that finished before {@code untilSeconds}. */
    long compilations(int minLevel, int maxLevel, double untilSeconds) {
        return compiles.stream().filter(c -> c.level() >= minLevel && c.level() <= maxLevel && c.endSeconds() < untilSeconds)
                .count();
    }

    /** Methods C2 compiled more than once (not counting OSR) after {@code fromSeconds}: recompilations in the steady state. */
    String recompilations(double fromSeconds) {
        StringBuilder sb = new StringBuilder();
        compilesByMethod.forEach((m, cs) -> {
            List<Compile> c2 = cs.stream().filter(c -> c.level() == 4 && !c.osr()).toList();
            if (c2.size() > 1 && c2.get(c2.size() - 1).endSeconds() >= fromSeconds) {
                sb.append(String.format("  %-90s C2 at %s%n", m,
                        String.join(", ", c2.stream().map(c -> String.format("%.2f", c.endSeconds())).toList())));
            }
        });
        return sb.toString();
    }
}
