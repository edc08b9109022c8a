package io.flix.index;

import java.util.Locale;
import java.util.function.Function;

/**
 * The GPU backend's tuning: when it measures, cuts and flattens node chains, how it slices and sorts batches, how
 * its node pool grows, and tracing. The defaults are what the backend was measured with; each field trades one
 * cost against another (docs/gpu-tuning.md has the table). The CPU backend ignores them. Start from
 * {@link #DEFAULTS} and change fields with the {@code with} methods; every value is checked when the record is made.
 *
 * <p>A system property {@code flix.gpu.<field>} (for example {@code -Dflix.gpu.trace=true}) overrides the field
 * for every GPU index the process opens after it is set: {@link #withSystemPropertyOverrides()} is where they are
 * read, once per index, when it opens.
 *
 * @param autoRestructure          an upsert after which a chain may have grown past {@code max(64, size / 32768)}
 *                                 nodes ends with a restructure (bounds the cost of skewed inserts)
 * @param longChain                unsorted gets and ranges first cut chains where one is longer than this many
 *                                 nodes (they walk each chain from its head for every query); at least 1
 * @param chainGroup               nodes a bucket keeps where a long chain is cut: at least 1, at most longChain
 * @param anyOrderChainMax         unsorted gets take the one-thread-a-query path while no chain is longer than
 *                                 this many nodes plus one, else the full sort and a warp per bucket; at least 0
 * @param touchedBucketsRatio      batches of fewer than buckets / ratio keys run one work item per touched
 *                                 bucket instead of one per bucket; at least 1 (a huge value turns it off)
 * @param localitySortRatio        unsorted gets of at least buckets / ratio keys are sorted by their top varying
 *                                 bits first; 0 turns that sort off
 * @param localityBitsBelowBuckets the locality sort orders queries by their top log2(buckets) - this many
 *                                 varying bits; in [0, 31]
 * @param growInPlace              large node pools grow in place (memory mapped behind reserved addresses, no
 *                                 copy) where the device has virtual memory management; false: into new, copied
 *                                 arrays
 * @param inPlaceMinNodes          pools of at least this many nodes grow in place (where growInPlace); at least 0
 * @param growWhileSorting         the pool grows ahead, by a guess, while the device sorts an upsert's batch
 *                                 (where it grows in place); false: only after the count pass knows the need
 * @param trace                    each step is timed on the host and, by an event on the index's stream, on the
 *                                 device, without waiting for it; a call's steps are printed to stderr when the
 *                                 next call begins (profiling)
 * @param registerHeap             host arrays cross the bus straight from and into the Java heap, which the first
 *                                 index to open registers with the driver (once per process), where the heap can
 *                                 never shrink ({@code -Xms} = {@code -Xmx}) under G1, Parallel or Serial; else, or
 *                                 false, through pinned staging and host copies (docs/gpu-tuning.md)
 * @param pipelinedGets            where host arrays go straight from the heap and no chain is long, a get's,
 *                                 ceiling's or floor's copies and launches (one a chunk) are issued from native code
 *                                 as one pipeline with no host step between chunks (up to 2^17 keys: one launch in
 *                                 place); false: its chunks are handed to copy threads
 */
public record GpuTuning(boolean autoRestructure, int longChain, int chainGroup, int anyOrderChainMax,
                        int touchedBucketsRatio, int localitySortRatio, int localityBitsBelowBuckets,
                        boolean growInPlace, int inPlaceMinNodes, boolean growWhileSorting, boolean trace,
                        boolean registerHeap, boolean pipelinedGets) {

    /** The values the backend is measured and tested with. */
    public static final GpuTuning DEFAULTS = new GpuTuning(true, 16, 8, 256, 8, 1, 5, true, 1 << 20, true, false, true,
            true);

    /** Prefix of the system properties that override fields: {@code flix.gpu.} and the field's name. */
    public static final String PROPERTY_PREFIX = "flix.gpu.";

    public GpuTuning {
        atLeast("longChain", longChain, 1);
        atLeast("chainGroup", chainGroup, 1);
        if (chainGroup > longChain) {
            throw new IllegalArgumentException("chainGroup must be <= longChain (" + longChain + "), was "
                    + chainGroup + ": chains cut to that length would be cut again before every unsorted get");
        }
        atLeast("anyOrderChainMax", anyOrderChainMax, 0);
        atLeast("touchedBucketsRatio", touchedBucketsRatio, 1);
        atLeast("localitySortRatio", localitySortRatio, 0);
        atLeast("localityBitsBelowBuckets", localityBitsBelowBuckets, 0);
        if (localityBitsBelowBuckets > 31) {
            throw new IllegalArgumentException("localityBitsBelowBuckets must be in [0, 31], was "
                    + localityBitsBelowBuckets);
        }
        atLeast("inPlaceMinNodes", inPlaceMinNodes, 0);
    }

    private static void atLeast(String field, int value, int min) {
        if (value < min) {
            throw new IllegalArgumentException(field + " must be >= " + min + ", was " + value);
        }
    }

    public GpuTuning withAutoRestructure(boolean on) {
        return new GpuTuning(on, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio, localitySortRatio,
                localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withLongChain(int nodes) {
        return new GpuTuning(autoRestructure, nodes, chainGroup, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withChainGroup(int nodes) {
        return new GpuTuning(autoRestructure, longChain, nodes, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withAnyOrderChainMax(int nodes) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, nodes, touchedBucketsRatio, localitySortRatio,
                localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withTouchedBucketsRatio(int ratio) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, ratio, localitySortRatio,
                localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withLocalitySortRatio(int ratio) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio, ratio,
                localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withLocalityBitsBelowBuckets(int bits) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, bits, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withGrowInPlace(boolean on) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, localityBitsBelowBuckets, on, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withInPlaceMinNodes(int nodes) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, localityBitsBelowBuckets, growInPlace, nodes, growWhileSorting, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withGrowWhileSorting(boolean on) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, on, trace,
                registerHeap, pipelinedGets);
    }

    public GpuTuning withRegisterHeap(boolean on) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                on, pipelinedGets);
    }

    public GpuTuning withPipelinedGets(boolean on) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, trace,
                registerHeap, on);
    }

    public GpuTuning withTrace(boolean on) {
        return new GpuTuning(autoRestructure, longChain, chainGroup, anyOrderChainMax, touchedBucketsRatio,
                localitySortRatio, localityBitsBelowBuckets, growInPlace, inPlaceMinNodes, growWhileSorting, on,
                registerHeap, pipelinedGets);
    }

    /**
     * This tuning with every field for which a system property {@code flix.gpu.<field>} is set taken from it: the
     * one place the GPU backend reads system properties. Integers are decimal, booleans {@code true} or
     * {@code false} (any case).
     *
     * @throws IllegalArgumentException naming the property and its value where one does not parse or is out of
     *                                  range
     */
    public GpuTuning withSystemPropertyOverrides() {
        GpuTuning t = this;
        t = override(t, "autoRestructure", GpuTuning::parseBoolean, GpuTuning::withAutoRestructure);
        t = override(t, "anyOrderChainMax", GpuTuning::parseInt, GpuTuning::withAnyOrderChainMax);
        t = override(t, "touchedBucketsRatio", GpuTuning::parseInt, GpuTuning::withTouchedBucketsRatio);
        t = override(t, "localitySortRatio", GpuTuning::parseInt, GpuTuning::withLocalitySortRatio);
        t = override(t, "localityBitsBelowBuckets", GpuTuning::parseInt, GpuTuning::withLocalityBitsBelowBuckets);
        t = override(t, "growInPlace", GpuTuning::parseBoolean, GpuTuning::withGrowInPlace);
        t = override(t, "inPlaceMinNodes", GpuTuning::parseInt, GpuTuning::withInPlaceMinNodes);
        t = override(t, "growWhileSorting", GpuTuning::parseBoolean, GpuTuning::withGrowWhileSorting);
        t = override(t, "trace", GpuTuning::parseBoolean, GpuTuning::withTrace);
        t = override(t, "registerHeap", GpuTuning::parseBoolean, GpuTuning::withRegisterHeap);
        t = override(t, "pipelinedGets", GpuTuning::parseBoolean, GpuTuning::withPipelinedGets);
        // longChain and chainGroup are checked against each other: set both, then check
        final String longChainValue = System.getProperty(PROPERTY_PREFIX + "longChain");
        final String chainGroupValue = System.getProperty(PROPERTY_PREFIX + "chainGroup");
        if (longChainValue != null || chainGroupValue != null) {
            final int lc = longChainValue == null ? t.longChain
                    : parsed("longChain", longChainValue, GpuTuning::parseInt);
            final int cg = chainGroupValue == null ? t.chainGroup
                    : parsed("chainGroup", chainGroupValue, GpuTuning::parseInt);
            try {
                t = new GpuTuning(t.autoRestructure, lc, cg, t.anyOrderChainMax, t.touchedBucketsRatio,
                        t.localitySortRatio, t.localityBitsBelowBuckets, t.growInPlace, t.inPlaceMinNodes,
                        t.growWhileSorting, t.trace, t.registerHeap, t.pipelinedGets);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("system properties " + PROPERTY_PREFIX + "longChain="
                        + longChainValue + " and " + PROPERTY_PREFIX + "chainGroup=" + chainGroupValue + ": "
                        + e.getMessage(), e);
            }
        }
        return t;
    }

    /** The system property of {@link #keptMemoryOn}. */
    public static final String KEPT_MEMORY_PROPERTY = PROPERTY_PREFIX + "keptMemory";

    /**
     * The most device memory, in bytes, that this process keeps on a device of {@code deviceBytes} after its indexes
     * close, for the next indexes opened there to take instead of asking the device (a restore after a failure, a
     * rescale): the system property {@value #KEPT_MEMORY_PROPERTY}, written as a GPU memory budget is (a share of
     * the device's memory, {@code 25%} by default, or bytes, {@code 8gb}), or {@code off} for none. Kept memory
     * counts towards every GPU memory budget and is freed first where a budget or the device needs room. One
     * setting per process, not per index.
     *
     * @throws IllegalArgumentException naming the property and its value where it does not parse
     */
    public static long keptMemoryOn(long deviceBytes) {
        final String text = System.getProperty(KEPT_MEMORY_PROPERTY, "25%").trim();
        if (text.equalsIgnoreCase("off")) {
            return 0;
        }
        try {
            return GpuMemoryBudget.parse(text).limitOn(deviceBytes);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("system property " + KEPT_MEMORY_PROPERTY + "=" + text + ": "
                    + e.getMessage() + ", or 'off' to keep none", e);
        }
    }

    /** A field setter of this record, for {@link #override}. */
    private interface Setter<V> {
        GpuTuning set(GpuTuning tuning, V value);
    }

    private static <V> GpuTuning override(GpuTuning tuning, String field, Function<String, V> parse,
                                          Setter<V> set) {
        final String text = System.getProperty(PROPERTY_PREFIX + field);
        if (text == null) {
            return tuning;
        }
        final V value = parsed(field, text, parse);
        try {
            return set.set(tuning, value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("system property " + PROPERTY_PREFIX + field + "=" + text + ": "
                    + e.getMessage(), e);
        }
    }

    private static <V> V parsed(String field, String text, Function<String, V> parse) {
        try {
            return parse.apply(text.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("system property " + PROPERTY_PREFIX + field + " must be "
                    + e.getMessage() + ", was '" + text + "'", e);
        }
    }

    private static Integer parseInt(String text) {
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("a decimal int");
        }
    }

    private static Boolean parseBoolean(String text) {
        return switch (text.toLowerCase(Locale.ROOT)) {
            case "true" -> Boolean.TRUE;
            case "false" -> Boolean.FALSE;
            default -> throw new IllegalArgumentException("true or false");
        };
    }
}
