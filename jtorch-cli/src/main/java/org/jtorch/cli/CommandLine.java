package org.jtorch.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A subcommand's options: declared with a help line and a default, parsed from {@code --name value},
 * {@code --name=value} and bare {@code --flag}s. Unknown options and missing or malformed values are
 * {@link UsageException}s whose message says what was wrong and what is accepted.
 */
final class CommandLine {
    /** A mistake on the command line; the command prints it with its usage and exits with status 2. */
    static final class UsageException extends RuntimeException {
        UsageException(String message) {
            super(message);
        }
    }

    private record Option(String name, String placeholder, String defaultValue, String help, boolean flag) {}

    private final String command;
    private final String summary;
    private final Map<String, Option> options = new LinkedHashMap<>();
    private final Map<String, String> values = new LinkedHashMap<>();

    CommandLine(String command, String summary) {
        this.command = command;
        this.summary = summary;
    }

    /** An option taking a value; {@code defaultValue} may be null (absent unless given). */
    CommandLine option(String name, String placeholder, String defaultValue, String help) {
        options.put(name, new Option(name, placeholder, defaultValue, help, false));
        return this;
    }

    /** An option without a value (false unless given). */
    CommandLine flag(String name, String help) {
        options.put(name, new Option(name, null, null, help, true));
        return this;
    }

    /** Parses {@code args}; returns false when {@code --help} was asked for (the usage is then printed). */
    boolean parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (arg.equals("--help") || arg.equals("-h")) {
                System.out.println(usage());
                return false;
            }
            if (!arg.startsWith("--")) throw new UsageException("unexpected argument '" + arg + "'");
            String name = arg.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            Option o = options.get(name);
            if (o == null) throw new UsageException("unknown option '--" + name + "'");
            if (o.flag) {
                if (value != null) throw new UsageException("option '--" + name + "' takes no value");
                value = "true";
            } else if (value == null) {
                if (i + 1 >= args.length) throw new UsageException("option '--" + name + "' needs a value (" + o.placeholder + ")");
                value = args[++i];
            }
            values.put(name, value);
        }
        return true;
    }

    /** The value given, else the default (null when neither). */
    String get(String name) {
        Option o = options.get(name);
        if (o == null) throw new IllegalArgumentException("undeclared option " + name);
        return values.getOrDefault(name, o.defaultValue);
    }

    boolean given(String name) {
        return values.containsKey(name);
    }

    boolean flag(String name) {
        return "true".equals(get(name));
    }

    int getInt(String name) {
        String v = get(name);
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException ex) {
            throw new UsageException("option '--" + name + "' needs an integer, got '" + v + "'");
        }
    }

    long getLong(String name) {
        String v = get(name);
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException ex) {
            throw new UsageException("option '--" + name + "' needs an integer, got '" + v + "'");
        }
    }

    /** An integer, or null when absent. */
    Integer getIntOrNull(String name) {
        return get(name) == null ? null : getInt(name);
    }

    double getDouble(String name) {
        String v = get(name);
        try {
            return Double.parseDouble(v);
        } catch (NumberFormatException ex) {
            throw new UsageException("option '--" + name + "' needs a number, got '" + v + "'");
        }
    }

    /** The value, which must be one of {@code allowed}. */
    String choice(String name, List<String> allowed) {
        String v = get(name);
        if (!allowed.contains(v)) throw new UsageException("option '--" + name + "' must be one of " + String.join(", ", allowed) + "; got '" + v + "'");
        return v;
    }

    String usage() {
        StringBuilder sb = new StringBuilder("usage: jtorch " + command + " [options]\n\n" + summary + "\n\noptions:\n");
        List<String[]> rows = new ArrayList<>();
        int width = 0;
        for (Option o : options.values()) {
            String left = "--" + o.name + (o.flag ? "" : " " + o.placeholder);
            width = Math.max(width, left.length());
            rows.add(new String[] {left, o.help + (o.defaultValue != null ? " (default: " + o.defaultValue + ")" : "")});
        }
        rows.add(new String[] {"--help", "this text"});
        for (String[] r : rows) sb.append("  ").append(String.format("%-" + width + "s", r[0])).append("  ").append(r[1]).append('\n');
        return sb.toString().stripTrailing();
    }
}
