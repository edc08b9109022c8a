package io.flix.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;

import org.junit.jupiter.api.Test;

/** The GPU memory budget's forms, parsing, checks and the bytes it allows on a device. */
class GpuMemoryBudgetTest {

    private static final long GIB = 1L << 30;

    @Test
    void aConfigHasNoBudgetUnlessGivenOne() {
        assertSame(GpuMemoryBudget.NONE, FlixConfig.builder().build().gpuMemoryBudget());
        assertSame(GpuMemoryBudget.NONE, new FlixConfig(Backend.CPU, 32, 0.5, 1, 0).gpuMemoryBudget());
        assertFalse(GpuMemoryBudget.NONE.isLimited());
        assertEquals(Long.MAX_VALUE, GpuMemoryBudget.NONE.limitOn(80 * GIB));
        final GpuMemoryBudget half = GpuMemoryBudget.ofFraction(0.5);
        assertEquals(half, FlixConfig.builder().gpuMemoryBudget(half).build().gpuMemoryBudget());
        assertEquals(half, FlixConfig.builder().build().withGpuMemoryBudget(half).gpuMemoryBudget());
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FlixConfig.builder().gpuMemoryBudget(null).build());
        assertTrue(e.getMessage().contains("gpuMemoryBudget"), e.getMessage());
    }

    @Test
    void aFractionIsOfTheDevicesMemoryAndBytesAreBytes() {
        assertEquals(64 * GIB, GpuMemoryBudget.ofFraction(0.8).limitOn(80 * GIB));
        assertEquals(80 * GIB, GpuMemoryBudget.ofFraction(1).limitOn(80 * GIB));
        assertEquals(40 * GIB, GpuMemoryBudget.ofBytes(40 * GIB).limitOn(80 * GIB));
        assertEquals(200 * GIB, GpuMemoryBudget.ofBytes(200 * GIB).limitOn(80 * GIB), "the device limits beyond");
        assertEquals(1, GpuMemoryBudget.ofFraction(1e-12).limitOn(1000), "at least a byte");
        assertTrue(GpuMemoryBudget.ofBytes(1).isLimited());
        assertTrue(GpuMemoryBudget.ofFraction(0.1).isLimited());
    }

    @Test
    void parsesPercentagesByteCountsAndNone() {
        assertEquals(GpuMemoryBudget.ofFraction(0.8), GpuMemoryBudget.parse("80%"));
        assertEquals(GpuMemoryBudget.ofFraction(0.125), GpuMemoryBudget.parse(" 12.5 % "));
        assertEquals(GpuMemoryBudget.ofFraction(1), GpuMemoryBudget.parse("100%"));
        assertEquals(GpuMemoryBudget.ofBytes(40 * GIB), GpuMemoryBudget.parse("40gb"));
        assertEquals(GpuMemoryBudget.ofBytes(40 * GIB), GpuMemoryBudget.parse("40 GB"));
        assertEquals(GpuMemoryBudget.ofBytes(40 * GIB), GpuMemoryBudget.parse("40g"));
        assertEquals(GpuMemoryBudget.ofBytes(512L << 20), GpuMemoryBudget.parse("512mb"));
        assertEquals(GpuMemoryBudget.ofBytes(3L << 10), GpuMemoryBudget.parse("3k"));
        assertEquals(GpuMemoryBudget.ofBytes(2L << 40), GpuMemoryBudget.parse("2TB"));
        assertEquals(GpuMemoryBudget.ofBytes(1073741824), GpuMemoryBudget.parse("1073741824"));
        assertEquals(GpuMemoryBudget.ofBytes(77), GpuMemoryBudget.parse("77b"));
        assertSame(GpuMemoryBudget.NONE, GpuMemoryBudget.parse("None"));
    }

    @Test
    void badTextIsRefusedNamingItAndTheFormsAllowed() {
        for (String bad : new String[] {"", "%", "0%", "101%", "-5%", "lots", "40 zb", "-1gb", "0", "0gb", "1.5gb",
            "99999999999999999999", "9000000000tb"}) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> GpuMemoryBudget.parse(bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'"), bad + ": " + e.getMessage());
        }
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GpuMemoryBudget.parse("lots"));
        assertTrue(e.getMessage().contains("'80%'") && e.getMessage().contains("'40gb'")
                && e.getMessage().contains("'none'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> GpuMemoryBudget.parse(null));
    }

    @Test
    void valuesOutOfRangeAreRefusedNamingThem() {
        refused(() -> GpuMemoryBudget.ofBytes(0), "bytes must be >= 1, was 0");
        refused(() -> GpuMemoryBudget.ofFraction(0), "fraction must be in (0, 1], was 0.0");
        refused(() -> GpuMemoryBudget.ofFraction(1.5), "fraction must be in (0, 1], was 1.5");
        refused(() -> GpuMemoryBudget.ofFraction(Double.NaN), "fraction must be in (0, 1], was NaN");
        refused(() -> new GpuMemoryBudget(-1, 0), "bytes must be >= 1, was -1");
        refused(() -> new GpuMemoryBudget(10, 0.5), "bytes or a fraction, not both: 10 bytes and fraction 0.5");
    }

    @Test
    void readsAsAUserWritesIt() {
        assertEquals("80% of the device's memory", GpuMemoryBudget.parse("80%").toString());
        assertEquals("12.5% of the device's memory", GpuMemoryBudget.parse("12.5%").toString());
        assertEquals("40 GiB (42949672960 bytes)", GpuMemoryBudget.parse("40gb").toString());
        assertEquals("512 MiB (536870912 bytes)", GpuMemoryBudget.parse("512mb").toString());
        assertEquals("1000 bytes", GpuMemoryBudget.ofBytes(1000).toString());
        assertEquals("none", GpuMemoryBudget.NONE.toString());
    }

    /** It travels with a Flink job graph. */
    @Test
    void serializes() throws Exception {
        final GpuMemoryBudget budget = GpuMemoryBudget.parse("80%");
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(budget);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            assertEquals(budget, in.readObject());
        }
    }

    private static void refused(Runnable make, String message) {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, make::run);
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }
}
