package io.flix.index;

import java.io.Serializable;
import java.util.Locale;

/**
 * The most device memory the GPU indexes of this process may hold on one device together: a fraction of the
 * device's memory, a byte count, or {@link #NONE} (the device's own size is the only limit). Every index counts the
 * device memory it allocates (its structure and its batch scratch) in one account per device and process; an
 * allocation that would take that account past the index's budget is refused before the device is asked, with a
 * {@code DeviceMemoryBudgetExceededException} (GPU backend) that names the budget, the bytes in use and the bytes
 * asked for, and the index stays as it was. So in a task manager whose indexes all have the same budget (the
 * operator's subtasks, the shared mode's dimension, the SQL connector's tables), that budget bounds them all; where
 * budgets differ, each index keeps the shared total within its own. The budget does not count the CUDA context
 * itself (a few hundred MiB) or other processes on the device. The CPU backend ignores it.
 *
 * @param bytes    the budget in bytes, or 0 where it is a fraction or none
 * @param fraction the budget as a fraction of the device's memory in (0, 1], or 0 where it is bytes or none
 */
public record GpuMemoryBudget(long bytes, double fraction) implements Serializable {

    private static final long serialVersionUID = 1L;

    /** No budget: indexes grow until the device runs out (a GpuOutOfMemoryException). */
    public static final GpuMemoryBudget NONE = new GpuMemoryBudget(0, 0);

    public GpuMemoryBudget {
        if (bytes < 0) {
            throw new IllegalArgumentException("a GPU memory budget's bytes must be >= 1, was " + bytes);
        }
        if (!(fraction >= 0 && fraction <= 1)) {
            throw new IllegalArgumentException("a GPU memory budget's fraction must be in (0, 1], was " + fraction);
        }
        if (bytes > 0 && fraction > 0) {
            throw new IllegalArgumentException("a GPU memory budget is bytes or a fraction, not both: " + bytes
                    + " bytes and fraction " + fraction);
        }
    }

    /** A budget of {@code bytes} (at least 1). */
    public static GpuMemoryBudget ofBytes(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("a GPU memory budget's bytes must be >= 1, was " + bytes);
        }
        return new GpuMemoryBudget(bytes, 0);
    }

    /** A budget of {@code fraction} (in (0, 1]) of the device's memory. */
    public static GpuMemoryBudget ofFraction(double fraction) {
        if (!(fraction > 0 && fraction <= 1)) {
            throw new IllegalArgumentException("a GPU memory budget's fraction must be in (0, 1], was " + fraction);
        }
        return new GpuMemoryBudget(0, fraction);
    }

    /**
     * Parses a budget: a percentage of the device's memory ({@code 80%}, {@code 12.5%}: above 0, at most 100), a
     * byte count with an optional unit ({@code 40gb}, {@code 512 mb}, {@code 1073741824}; units b, kb, mb, gb, tb or
     * k, m, g, t, any case, multiples of 1024), or {@code none} for no budget.
     *
     * @throws IllegalArgumentException naming the text and the forms allowed
     */
    public static GpuMemoryBudget parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("a GPU memory budget must not be null");
        }
        final String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.equals("none")) {
            return NONE;
        }
        try {
            if (t.endsWith("%")) {
                final double percent = Double.parseDouble(t.substring(0, t.length() - 1).trim());
                if (!(percent > 0 && percent <= 100)) {
                    throw new IllegalArgumentException("a GPU memory budget's percentage must be above 0 and at "
                            + "most 100, was '" + text + "'");
                }
                return ofFraction(percent / 100);
            }
            int digits = 0;
            while (digits < t.length() && Character.isDigit(t.charAt(digits))) {
                digits++;
            }
            if (digits == 0) {
                throw new NumberFormatException();
            }
            final long count = Long.parseLong(t.substring(0, digits));
            final long unit = unit(t.substring(digits).trim());
            if (unit < 0 || count > Long.MAX_VALUE / unit) {
                throw new NumberFormatException();
            }
            if (count == 0) {
                throw new IllegalArgumentException("a GPU memory budget must be at least 1 byte, was '" + text + "'");
            }
            return ofBytes(count * unit);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("a GPU memory budget must be a percentage of the device's memory "
                    + "('80%'), a byte count with an optional unit ('40gb', '512mb', '1073741824') or 'none', was '"
                    + text + "'");
        }
    }

    private static long unit(String suffix) {
        return switch (suffix) {
            case "", "b" -> 1L;
            case "k", "kb" -> 1L << 10;
            case "m", "mb" -> 1L << 20;
            case "g", "gb" -> 1L << 30;
            case "t", "tb" -> 1L << 40;
            default -> -1L;
        };
    }

    /** Whether this budget limits anything (not {@link #NONE}). */
    public boolean isLimited() {
        return bytes > 0 || fraction > 0;
    }

    /** The budget in bytes on a device of {@code deviceBytes}: Long.MAX_VALUE for none, at least 1 otherwise. */
    public long limitOn(long deviceBytes) {
        if (bytes > 0) {
            return bytes;
        }
        if (fraction > 0) {
            return Math.max(1, (long) (deviceBytes * fraction));
        }
        return Long.MAX_VALUE;
    }

    /** The budget as a user writes it: {@code 80%}, {@code 40 GiB (42949672960 bytes)} or {@code none}. */
    @Override
    public String toString() {
        if (bytes > 0) {
            return bytes % (1L << 30) == 0 ? bytes / (1L << 30) + " GiB (" + bytes + " bytes)"
                    : bytes % (1L << 20) == 0 ? bytes / (1L << 20) + " MiB (" + bytes + " bytes)"
                    : bytes + " bytes";
        }
        if (fraction > 0) {
            final double percent = fraction * 100;
            return (percent == Math.rint(percent) ? String.valueOf((long) percent) : String.valueOf(percent))
                    + "% of the device's memory";
        }
        return "none";
    }
}
