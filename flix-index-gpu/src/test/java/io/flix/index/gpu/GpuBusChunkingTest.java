package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.junit.jupiter.api.Test;

/**
 * The FliX index's host arrays in pieces and chunks over the bus (the contract), as the JVM's heap allows: straight
 * from the heap where it cannot shrink (the module's tests run so), else staged. Skipped where no GPU is usable.
 */
class GpuBusChunkingTest extends BusChunkingContract {

    @Override
    protected FlixIndex open(FlixConfig config) {
        return GpuFlixIndex.open(config);
    }

    @Test
    void hostArraysGoStraightFromTheHeapExactlyWhereTheHeapCannotShrink() {
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            final boolean safe = HeapRegistration.unsafeReasonHere() == null;
            assertEquals(safe, index.copies instanceof DirectCopies, HeapRegistration.outcome());
            assertEquals(safe, HeapRegistration.registeredBytes() > 0, HeapRegistration.outcome());
            if (safe) {
                assertTrue(HeapRegistration.outcome().startsWith("registered"), HeapRegistration.outcome());
            }
        }
    }
}
