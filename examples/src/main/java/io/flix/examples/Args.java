package io.flix.examples;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The examples' command-line options: {@code --name value} pairs and bare {@code --flag}s (a name followed by
 * another name or by nothing). Numbers may group digits with underscores ({@code 10_000_000}); a value that is not
 * one fails naming the option.
 */
public final class Args {

    private final List<String> args;

    private Args(List<String> args) {
        this.args = args;
    }

    public static Args of(String[] args) {
        return new Args(List.copyOf(Arrays.asList(args)));
    }

    /** Whether {@code --name} was given, with or without a value. */
    public boolean flag(String name) {
        return args.contains(requireDashes(name));
    }

    /** The value of {@code --name}, or {@code fallback} where it was not given; a bare {@code --name} fails. */
    public String text(String name, String fallback) {
        if (!flag(name)) {
            return fallback;
        }
        final String value = valueOf(name);
        if (value == null) {
            throw new IllegalArgumentException(name + " needs a value");
        }
        return value;
    }

    /** The value of {@code --name} or, given bare, {@code bare}; {@code fallback} where it was not given. */
    public String textOr(String name, String bare, String fallback) {
        if (!flag(name)) {
            return fallback;
        }
        final String value = valueOf(name);
        return value == null ? bare : value;
    }

    /** The whole number given as {@code --name}, or {@code fallback}. */
    public long number(String name, long fallback) {
        final String value = text(name, null);
        if (value == null) {
            return fallback;
        }
        try {
            return Long.parseLong(value.replace("_", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "%s takes a whole number, not '%s'", name,
                    value), e);
        }
    }

    /** The word after the last {@code --name}, or null where none follows or another option does. */
    private String valueOf(String name) {
        final int at = args.lastIndexOf(requireDashes(name));
        if (at < 0 || at + 1 >= args.size() || args.get(at + 1).startsWith("--")) {
            return null;
        }
        return args.get(at + 1);
    }

    private static String requireDashes(String name) {
        if (!name.startsWith("--")) {
            throw new IllegalArgumentException("an option is named with its dashes, e.g. --keys, not '" + name + "'");
        }
        return name;
    }
}
