package io.flix.index.gpu;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Loads JCuda's driver library into this class loader from a directory of its own.
 *
 * <p>JCuda extracts its native library to a fixed file in {@code java.io.tmpdir}, and the JVM binds a library file to
 * the first class loader that loads it: a second Flink user-code class loader (a resubmitted job, a second job on the
 * task manager) could not load it and the GPU backend would not open there. JCuda offers no other place to extract
 * to, so while its driver class initialises here, {@code java.io.tmpdir} names a directory of this loader's own; the
 * copy is deleted once loaded (the mapping stays). Where JCuda lives in a parent class loader (Flink's {@code lib/}
 * with {@code jcuda.} loaded parent-first) its class is initialised once for the process and this does nothing more.
 * When the job's class loader is released, {@link #dropClassReferences()} lets go of what would keep it alive.
 */
final class JCudaNatives {

    static final String DRIVER_CLASS = "jcuda.driver.JCudaDriver";
    private static boolean loaded;
    /** The directory this loader's copy of the driver library was extracted to; null where JCuda was loaded before. */
    private static String extractedTo;

    private JCudaNatives() {
    }

    /** Initialises JCuda's driver class; throws what its native library's load threw. */
    static synchronized void load() throws IOException, ClassNotFoundException {
        if (loaded) {
            return;
        }
        final Path directory = Files.createTempDirectory("flix-jcuda-").toRealPath();
        try {
            // one lock for every class loader of the process: two loaders must not swap the property at once
            synchronized (System.getProperties()) {
                final String tmpdir = System.getProperty("java.io.tmpdir");
                System.setProperty("java.io.tmpdir", directory.toString());
                try {
                    Class.forName(DRIVER_CLASS, true, JCudaNatives.class.getClassLoader());
                } finally {
                    System.setProperty("java.io.tmpdir", tmpdir);
                }
            }
            loaded = true;
            if (driverClassIsThisLoaders()) {
                extractedTo = directory + "/";
            }
        } finally {
            deleteTree(directory);
        }
    }

    /**
     * Lets go of the references to JCuda's classes that its driver library keeps (see {@code flix_jcuda_jni.cu}), so
     * that this class loader can be collected; only where this loader extracted its own copy of the library, and it is
     * not the application class loader (which lives as long as the process). No JCuda call of this loader may follow:
     * the library would find its classes gone. Needs {@link NativeLibrary} loaded.
     *
     * @return whether the references were dropped
     */
    static synchronized boolean dropClassReferences() {
        final ClassLoader loader = JCudaNatives.class.getClassLoader();
        if (extractedTo == null || loader == ClassLoader.getSystemClassLoader()) {
            return false;
        }
        final int dropped = dropClassReferences(extractedTo);
        extractedTo = null;
        return dropped > 0;
    }

    private static native int dropClassReferences(String directory);

    private static boolean driverClassIsThisLoaders() throws ClassNotFoundException {
        return Class.forName(DRIVER_CLASS, false, JCudaNatives.class.getClassLoader()).getClassLoader()
                == JCudaNatives.class.getClassLoader();
    }

    /** Deletes what JCuda extracted (a loaded library keeps its mapping); where that fails, the files stay. */
    private static void deleteTree(Path directory) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory)) {
            for (Path file : files) {
                if (Files.isDirectory(file)) {
                    deleteTree(file);
                } else {
                    Files.deleteIfExists(file);
                }
            }
            Files.deleteIfExists(directory);
        } catch (IOException e) {
            directory.toFile().deleteOnExit();
        }
    }
}
