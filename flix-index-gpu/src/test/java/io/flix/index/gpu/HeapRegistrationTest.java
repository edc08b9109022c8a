package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

/** When registering the Java heap with the driver is safe: a heap that never shrinks, under a collector that pins. */
class HeapRegistrationTest {

    private static final long GIB = 1L << 30;

    @Test
    void aFixedHeapUnderG1ParallelOrSerialMayBeRegistered() {
        assertNull(HeapRegistration.unsafeReason(List.of("G1 Young Generation", "G1 Old Generation"), 8 * GIB,
                8 * GIB));
        assertNull(HeapRegistration.unsafeReason(List.of("G1 Young Generation", "G1 Concurrent GC",
                "G1 Old Generation"), GIB, GIB));
        assertNull(HeapRegistration.unsafeReason(List.of("PS Scavenge", "PS MarkSweep"), GIB, GIB));
        assertNull(HeapRegistration.unsafeReason(List.of("Copy", "MarkSweepCompact"), GIB, GIB));
    }

    @Test
    void aHeapThatMayShrinkIsRefusedSayingHowToFixIt() {
        final String why = HeapRegistration.unsafeReason(List.of("G1 Young Generation", "G1 Old Generation"),
                512L << 20, 8 * GIB);
        assertTrue(why != null && why.contains("may shrink") && why.contains(String.valueOf(512L << 20))
                && why.contains(String.valueOf(8 * GIB)) && why.contains("-Xms equal to -Xmx"), why);
    }

    @Test
    void aHeapInSmallPagesSaysHowToAskForHugeOnes() {
        assertTrue(HeapRegistration.pages(false).contains("-XX:+UseTransparentHugePages"),
                HeapRegistration.pages(false));
        assertTrue(HeapRegistration.pages(true).contains("huge pages")
                && !HeapRegistration.pages(true).contains("-XX:"), HeapRegistration.pages(true));
    }

    @Test
    void otherCollectorsAreRefusedNamingThem() {
        for (List<String> collectors : List.of(List.of("ZGC Cycles", "ZGC Pauses"),
                List.of("Shenandoah Cycles", "Shenandoah Pauses"), List.of("G1 Young Generation", "Unknown"),
                List.<String>of())) {
            final String why = HeapRegistration.unsafeReason(collectors, GIB, GIB);
            assertTrue(why != null && why.contains(collectors.toString())
                    && why.contains("not G1, Parallel or Serial"), collectors + ": " + why);
        }
    }
}
