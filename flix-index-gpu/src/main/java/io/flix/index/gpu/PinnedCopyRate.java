package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.flix.index.GpuMemoryBudget;

import java.io.IOException;
import java.util.Arrays;
import java.util.stream.IntStream;

import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * The host-device bus as the indexes see it: copies between pinned host memory and device memory, timed in each
 * direction alone and in both directions at once (two streams), so that the end-to-end calls can be read against
 * the bound the bus sets (the bytes a call moves each way over these rates).
 */
public final class PinnedCopyRate {

    /**
     * Measured rates in GB/s (10^9 bytes a second); {@code duplex*}: each direction while the other runs too;
     * {@code javaToPinned}, {@code pinnedToJava}: the host's copies between a Java {@code long[]} and pinned memory
     * on every core (the staging of an end-to-end call).
     */
    public record Rates(double hostToDevice, double deviceToHost, double duplexHostToDevice,
                        double duplexDeviceToHost, double javaToPinned, double pinnedToJava, long bytes) {

        /**
         * The least time in ms that moving {@code bytesIn} to the device and {@code bytesOut} back can take: the
         * two directions overlapped, each at the rate measured while the other runs where both are used.
         */
        public double boundMillis(long bytesIn, long bytesOut) {
            final boolean both = bytesIn > 0 && bytesOut > 0;
            final double in = bytesIn / ((both ? duplexHostToDevice : hostToDevice) * 1e9);
            final double out = bytesOut / ((both ? duplexDeviceToHost : deviceToHost) * 1e9);
            return Math.max(in, out) * 1e3;
        }

        /**
         * The time in ms of the host's staging copies of those bytes on every core, one direction after the other
         * (a pipelined call overlaps them, so it can take less).
         */
        public double hostCopyMillis(long bytesIn, long bytesOut) {
            return (bytesIn / (javaToPinned * 1e9) + bytesOut / (pinnedToJava * 1e9)) * 1e3;
        }
    }

    private PinnedCopyRate() {
    }

    /**
     * Copies {@code bytes} each way {@code repeats} times (after one unreported pass) and returns the median
     * rates.
     *
     * @throws IllegalStateException where no GPU is usable
     */
    public static Rates measure(int deviceOrdinal, long bytes, int repeats) {
        if (bytes < 8 || repeats < 1) {
            throw new IllegalArgumentException("bytes must be >= 8 and repeats >= 1, were " + bytes + " and "
                    + repeats);
        }
        final String reason = GpuSupport.unavailableReason();
        if (reason != null) {
            throw new IllegalStateException(reason);
        }
        final GpuRuntime.DeviceContext device;
        try {
            device = GpuRuntime.device(deviceOrdinal);
        } catch (IOException e) {
            throw new IllegalStateException("GPU backend unavailable: " + e.getMessage(), e);
        }
        final long longs = bytes / 8;
        // counted in the device's ledger, held to no budget (a measurement, not an index)
        final DeviceMemoryLedger.Account probe = device.memory.account(GpuMemoryBudget.NONE);
        final CUstream up = new CUstream();
        final CUstream down = new CUstream();
        cuStreamCreate(up, CUstream_flags.CU_STREAM_NON_BLOCKING);
        cuStreamCreate(down, CUstream_flags.CU_STREAM_NON_BLOCKING);
        try (PinnedBuffer hostIn = new PinnedBuffer(); PinnedBuffer hostOut = new PinnedBuffer();
             DeviceBuffer devIn = DeviceBuffer.allocate(probe, longs * 8, "bus probe (to the device)");
             DeviceBuffer devOut = DeviceBuffer.allocate(probe, longs * 8, "bus probe (to the host)")) {
            hostIn.ensureLongs(longs);
            hostOut.ensureLongs(longs);
            final double[][] seconds = new double[4][repeats];
            for (int r = -1; r < repeats; r++) {
                final double[] t = new double[4];
                long start = System.nanoTime();
                cuMemcpyHtoDAsync(devIn.pointer(), hostIn.pointer(0), longs * 8, up);
                cuStreamSynchronize(up);
                t[0] = (System.nanoTime() - start) / 1e9;
                start = System.nanoTime();
                cuMemcpyDtoHAsync(hostOut.pointer(0), devOut.pointer(), longs * 8, down);
                cuStreamSynchronize(down);
                t[1] = (System.nanoTime() - start) / 1e9;
                start = System.nanoTime();
                cuMemcpyHtoDAsync(devIn.pointer(), hostIn.pointer(0), longs * 8, up);
                cuMemcpyDtoHAsync(hostOut.pointer(0), devOut.pointer(), longs * 8, down);
                cuStreamSynchronize(up);
                t[2] = (System.nanoTime() - start) / 1e9;
                cuStreamSynchronize(down);
                t[3] = (System.nanoTime() - start) / 1e9;
                if (r >= 0) {
                    for (int k = 0; k < 4; k++) {
                        seconds[k][r] = t[k];
                    }
                }
            }
            final double[][] host = new double[2][repeats];
            final long[] java = new long[(int) longs];
            Arrays.fill(java, 1);
            final int slice = 1 << 16;
            final int slices = (int) ((longs + slice - 1) / slice);
            for (int r = -1; r < repeats; r++) {
                long start = System.nanoTime();
                IntStream.range(0, slices).parallel().forEach(s -> hostIn.longs().duplicate().put(s * slice, java,
                        s * slice, (int) Math.min(slice, longs - (long) s * slice)));
                final double in = (System.nanoTime() - start) / 1e9;
                start = System.nanoTime();
                IntStream.range(0, slices).parallel().forEach(s -> hostOut.longs().duplicate().get(s * slice, java,
                        s * slice, (int) Math.min(slice, longs - (long) s * slice)));
                final double out = (System.nanoTime() - start) / 1e9;
                if (r >= 0) {
                    host[0][r] = in;
                    host[1][r] = out;
                }
            }
            final double gb = longs * 8 / 1e9;
            return new Rates(gb / median(seconds[0]), gb / median(seconds[1]), gb / median(seconds[2]),
                    gb / median(seconds[3]), gb / median(host[0]), gb / median(host[1]), longs * 8);
        } finally {
            cuStreamDestroy(up);
            cuStreamDestroy(down);
        }
    }

    private static double median(double[] values) {
        final double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
