package io.flix.index.gpu;

import jcuda.driver.CUdeviceptr;

/**
 * Counters the kernels write and the host reads, in named slots of one device array: an {@code i64} a slot, one
 * meaning a slot (the slot names are {@link KernelContract}'s, from {@code kernel_contract.h}). A kernel that takes
 * an {@code int*} counter is given its slot's first 4 bytes ({@link #at}); one that takes the array indexes it by
 * slot ({@link #pointer}).
 */
final class DeviceCounters implements AutoCloseable {

    private final DeviceBuffer slots;
    /** The stream the counters are written, filled and read on (the kernels' stream). */
    private final DeviceStream stream;
    /** The host copy of the slots last read, indexed by slot. */
    private final long[] host;

    DeviceCounters(DeviceMemoryLedger.Account memory, int slotCount, String what, DeviceStream stream) {
        this.stream = stream;
        this.slots = DeviceBuffer.allocate(memory, slotCount * (long) Long.BYTES, what);
        this.host = new long[slotCount];
    }

    /** The array, for a kernel that indexes it by slot. */
    CUdeviceptr pointer() {
        return slots.pointer();
    }

    /** One slot, for a kernel that takes that counter's pointer. */
    CUdeviceptr at(int slot) {
        return slots.at(slot * (long) Long.BYTES);
    }

    /** Sets every slot to 0. */
    void zeroAll() {
        stream.fillInts(slots.pointer(), 0, host.length * 2L);
    }

    /** Sets slots {@code [from, to)} to 0. */
    void zero(int from, int to) {
        stream.fillInts(at(from), 0, (to - from) * 2L);
    }

    /** Sets each int of slots {@code [from, to)} to {@code value} (an int counter's slot reads as value). */
    void fillInts(int from, int to, int value) {
        stream.fillInts(at(from), value, (to - from) * 2L);
    }

    /** Writes {@code values} into the slots from {@code from} on, in one copy. */
    void write(int from, long... values) {
        stream.write(at(from), values);
    }

    /**
     * Reads slots {@code [from, to)} in one copy; returns the host copy of every slot, indexed by slot (an int
     * counter's value is its slot's low half: {@code (int)}).
     */
    long[] read(int from, int to) {
        final long[] read = new long[to - from];
        stream.read(at(from), read, read.length);
        System.arraycopy(read, 0, host, from, read.length);
        return host;
    }

    /** Reads one i64 slot. */
    long readLong(int slot) {
        return read(slot, slot + 1)[slot];
    }

    /** Reads one int counter's slot. */
    int readInt(int slot) {
        return stream.readInt(at(slot));
    }

    long bytes() {
        return slots.bytes();
    }

    @Override
    public void close() {
        slots.close();
    }
}
