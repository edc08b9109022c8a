package io.flix.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The GPU tuning record: its defaults, its checks, and the system properties that override it. */
class GpuTuningTest {

    private static final List<String> FIELDS = List.of("autoRestructure", "longChain", "chainGroup",
            "anyOrderChainMax", "touchedBucketsRatio", "localitySortRatio", "localityBitsBelowBuckets", "growInPlace",
            "inPlaceMinNodes", "growWhileSorting", "trace", "registerHeap", "pipelinedGets");

    @AfterEach
    void clearProperties() {
        for (String field : FIELDS) {
            System.clearProperty(GpuTuning.PROPERTY_PREFIX + field);
        }
    }

    @Test
    void defaultsAreTheValuesTheBackendIsMeasuredWith() {
        final GpuTuning d = GpuTuning.DEFAULTS;
        assertTrue(d.autoRestructure());
        assertEquals(16, d.longChain());
        assertEquals(8, d.chainGroup());
        assertEquals(256, d.anyOrderChainMax());
        assertEquals(8, d.touchedBucketsRatio());
        assertEquals(1, d.localitySortRatio());
        assertEquals(5, d.localityBitsBelowBuckets());
        assertTrue(d.growInPlace());
        assertEquals(1 << 20, d.inPlaceMinNodes());
        assertTrue(d.growWhileSorting());
        assertFalse(d.trace());
        assertEquals(FIELDS.size(), GpuTuning.class.getRecordComponents().length, "every field is listed here");
    }

    @Test
    void aConfigCarriesTheDefaultsUnlessGivenAnother() {
        assertSame(GpuTuning.DEFAULTS, FlixConfig.builder().build().gpuTuning());
        final GpuTuning other = GpuTuning.DEFAULTS.withLongChain(40);
        assertEquals(other, FlixConfig.builder().gpuTuning(other).build().gpuTuning());
        assertEquals(other, FlixConfig.builder().build().withGpuTuning(other).gpuTuning());
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FlixConfig.builder().gpuTuning(null).build());
        assertTrue(e.getMessage().contains("gpuTuning"), e.getMessage());
    }

    @Test
    void eachWithMethodChangesItsFieldOnly() {
        final GpuTuning d = GpuTuning.DEFAULTS;
        assertEquals(new GpuTuning(false, 16, 8, 256, 8, 1, 5, true, 1 << 20, true, false, true, true),
                d.withAutoRestructure(false));
        assertEquals(new GpuTuning(true, 30, 8, 256, 8, 1, 5, true, 1 << 20, true, false, true, true),
                d.withLongChain(30));
        assertEquals(new GpuTuning(true, 16, 3, 256, 8, 1, 5, true, 1 << 20, true, false, true, true),
                d.withChainGroup(3));
        assertEquals(new GpuTuning(true, 16, 8, 7, 8, 1, 5, true, 1 << 20, true, false, true, true),
                d.withAnyOrderChainMax(7));
        assertEquals(new GpuTuning(true, 16, 8, 256, 9, 1, 5, true, 1 << 20, true, false, true, true),
                d.withTouchedBucketsRatio(9));
        assertEquals(new GpuTuning(true, 16, 8, 256, 8, 0, 5, true, 1 << 20, true, false, true, true),
                d.withLocalitySortRatio(0));
        assertEquals(new GpuTuning(true, 16, 8, 256, 8, 1, 6, true, 1 << 20, true, false, true, true),
                d.withLocalityBitsBelowBuckets(6));
        assertEquals(new GpuTuning(true, 16, 8, 256, 8, 1, 5, false, 1 << 20, true, false, true, true),
                d.withGrowInPlace(false));
        assertEquals(new GpuTuning(true, 16, 8, 256, 8, 1, 5, true, 0, true, false, true, true),
                d.withInPlaceMinNodes(0));
        assertEquals(new GpuTuning(true, 16, 8, 256, 8, 1, 5, true, 1 << 20, false, false, true, true),
                d.withGrowWhileSorting(false));
        assertEquals(new GpuTuning(true, 16, 8, 256, 8, 1, 5, true, 1 << 20, true, true, true, true),
                d.withTrace(true));
        assertEquals(new GpuTuning(true, 16, 8, 256, 8, 1, 5, true, 1 << 20, true, false, false, true),
                d.withRegisterHeap(false));
        assertEquals(new GpuTuning(true, 16, 8, 256, 8, 1, 5, true, 1 << 20, true, false, true, false),
                d.withPipelinedGets(false));
    }

    @Test
    void valuesOutOfRangeAreRefusedNamingTheFieldAndValue() {
        final GpuTuning d = GpuTuning.DEFAULTS;
        refused(() -> d.withLongChain(0), "longChain must be >= 1, was 0");
        refused(() -> d.withChainGroup(0), "chainGroup must be >= 1, was 0");
        refused(() -> d.withChainGroup(17), "chainGroup must be <= longChain (16), was 17");
        refused(() -> d.withLongChain(7), "chainGroup must be <= longChain (7), was 8");
        refused(() -> d.withAnyOrderChainMax(-1), "anyOrderChainMax must be >= 0, was -1");
        refused(() -> d.withTouchedBucketsRatio(0), "touchedBucketsRatio must be >= 1, was 0");
        refused(() -> d.withLocalitySortRatio(-2), "localitySortRatio must be >= 0, was -2");
        refused(() -> d.withLocalityBitsBelowBuckets(-1), "localityBitsBelowBuckets must be >= 0, was -1");
        refused(() -> d.withLocalityBitsBelowBuckets(32), "localityBitsBelowBuckets must be in [0, 31], was 32");
        refused(() -> d.withInPlaceMinNodes(-5), "inPlaceMinNodes must be >= 0, was -5");
    }

    @Test
    void withoutPropertiesTheTuningStaysAsGiven() {
        final GpuTuning given = GpuTuning.DEFAULTS.withTrace(true).withLongChain(99);
        assertEquals(given, given.withSystemPropertyOverrides());
    }

    @Test
    void eachPropertyOverridesItsField() {
        final String[][] set = {
            {"autoRestructure", "false"}, {"longChain", "40"}, {"chainGroup", "2"}, {"anyOrderChainMax", "12"},
            {"touchedBucketsRatio", "1000000"}, {"localitySortRatio", "0"}, {"localityBitsBelowBuckets", "8"},
            {"growInPlace", "FALSE"}, {"inPlaceMinNodes", "0"}, {"growWhileSorting", "false"}, {"trace", "True"},
            {"registerHeap", "false"}, {"pipelinedGets", "false"},
        };
        for (String[] property : set) {
            System.setProperty(GpuTuning.PROPERTY_PREFIX + property[0], property[1]);
        }
        assertEquals(new GpuTuning(false, 40, 2, 12, 1_000_000, 0, 8, false, 0, false, true, false, false),
                GpuTuning.DEFAULTS.withSystemPropertyOverrides());
    }

    @Test
    void aPropertyOverridesAValueTheConfigSet() {
        System.setProperty("flix.gpu.trace", "false");
        final GpuTuning configured = GpuTuning.DEFAULTS.withTrace(true).withAnyOrderChainMax(3);
        assertEquals(GpuTuning.DEFAULTS.withAnyOrderChainMax(3), configured.withSystemPropertyOverrides());
    }

    @Test
    void longChainAndChainGroupAreOverriddenTogether() {
        // each alone would break chainGroup <= longChain against the other's default
        System.setProperty("flix.gpu.longChain", "1");
        System.setProperty("flix.gpu.chainGroup", "1");
        assertEquals(GpuTuning.DEFAULTS.withChainGroup(1).withLongChain(1),
                GpuTuning.DEFAULTS.withSystemPropertyOverrides());
        System.setProperty("flix.gpu.longChain", "64");
        System.setProperty("flix.gpu.chainGroup", "32");
        assertEquals(GpuTuning.DEFAULTS.withLongChain(64).withChainGroup(32),
                GpuTuning.DEFAULTS.withSystemPropertyOverrides());
        System.setProperty("flix.gpu.chainGroup", "65");
        refused(GpuTuning.DEFAULTS::withSystemPropertyOverrides,
                "flix.gpu.longChain=64 and flix.gpu.chainGroup=65: chainGroup must be <= longChain (64), was 65");
    }

    @Test
    void aPropertyThatDoesNotParseIsRefusedNamingItAndItsValue() {
        System.setProperty("flix.gpu.touchedBucketsRatio", "eight");
        refused(GpuTuning.DEFAULTS::withSystemPropertyOverrides,
                "system property flix.gpu.touchedBucketsRatio must be a decimal int, was 'eight'");
        System.clearProperty("flix.gpu.touchedBucketsRatio");
        System.setProperty("flix.gpu.autoRestructure", "no");
        refused(GpuTuning.DEFAULTS::withSystemPropertyOverrides,
                "system property flix.gpu.autoRestructure must be true or false, was 'no'");
        System.clearProperty("flix.gpu.autoRestructure");
        System.setProperty("flix.gpu.inPlaceMinNodes", "-1");
        refused(GpuTuning.DEFAULTS::withSystemPropertyOverrides,
                "system property flix.gpu.inPlaceMinNodes=-1: inPlaceMinNodes must be >= 0, was -1");
    }

    @Test
    void theMemoryKeptAfterIndexesCloseIsAQuarterOfTheDeviceUnlessThePropertySaysOtherwise() {
        final long device = 80L << 30;
        try {
            System.clearProperty(GpuTuning.KEPT_MEMORY_PROPERTY);
            assertEquals(20L << 30, GpuTuning.keptMemoryOn(device));
            System.setProperty(GpuTuning.KEPT_MEMORY_PROPERTY, "8gb");
            assertEquals(8L << 30, GpuTuning.keptMemoryOn(device));
            System.setProperty(GpuTuning.KEPT_MEMORY_PROPERTY, " 50% ");
            assertEquals(40L << 30, GpuTuning.keptMemoryOn(device));
            System.setProperty(GpuTuning.KEPT_MEMORY_PROPERTY, "OFF");
            assertEquals(0, GpuTuning.keptMemoryOn(device));
            System.setProperty(GpuTuning.KEPT_MEMORY_PROPERTY, "a lot");
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> GpuTuning.keptMemoryOn(device));
            assertTrue(e.getMessage().startsWith("system property flix.gpu.keptMemory=a lot: a GPU memory budget "
                    + "must be a percentage") && e.getMessage().endsWith("or 'off' to keep none"), e.getMessage());
        } finally {
            System.clearProperty(GpuTuning.KEPT_MEMORY_PROPERTY);
        }
    }

    private static void refused(Supplier<GpuTuning> make, String message) {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, make::get);
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }
}
