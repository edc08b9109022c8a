package io.flix.examples.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/** The device memory in use on each GPU of this machine, as nvidia-smi reports it (every process's, in MiB). */
final class DeviceMemory {

    private DeviceMemory() {
    }

    /** nvidia-smi index -> MiB in use. */
    static Map<Integer, Long> usedMiB() {
        try {
            final Process p = new ProcessBuilder("nvidia-smi", "--query-gpu=index,memory.used",
                    "--format=csv,noheader,nounits").redirectErrorStream(true).start();
            final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("nvidia-smi failed: " + out);
            }
            final Map<Integer, Long> used = new TreeMap<>();
            for (String line : out.strip().split("\n")) {
                final String[] fields = line.split(",");
                used.put(Integer.parseInt(fields[0].trim()), Long.parseLong(fields[1].trim()));
            }
            return used;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The total over the GPUs. */
    static long totalUsedMiB() {
        return usedMiB().values().stream().mapToLong(Long::longValue).sum();
    }
}
