package io.flix.index.gpu;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The project's JNI library, {@code libflixnative.so}, built from {@code src/main/cuda/*_jni.cu}: the bridges
 * {@link CubNative} (CUB's sorts and scans), {@link DeviceMemoryNative} (the driver's virtual memory calls),
 * {@link HostArrayDma} (copies straight between Java arrays and the device) and {@link KernelLauncher}'s launches.
 */
final class NativeLibrary {

    static final String RESOURCE = "libflixnative.so";

    private NativeLibrary() {
    }

    /**
     * Copies the library out of the class path into a file of this load's own and loads it: a file name the JVM has
     * not bound to another class loader, so that every Flink user-code class loader of a task manager loads its own
     * copy. The file is deleted once loaded (the mapping stays).
     */
    static void load() throws IOException {
        try (InputStream in = NativeLibrary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IOException(RESOURCE + " is not on the class path");
            }
            final Path file = Files.createTempFile("libflixnative", ".so");
            try {
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                System.load(file.toAbsolutePath().toString());
            } finally {
                Files.deleteIfExists(file);
            }
        }
    }
}
