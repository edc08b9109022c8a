package io.flix.index.gpu;

import io.flix.index.FlixIndex;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.ref.WeakReference;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The GPU backend opens in every class loader of a process, as Flink gives each job (and each resubmission) a
 * user-code class loader of its own: here each loader holds its own copy of the index library, the GPU backend and
 * JCuda, as a job jar does, and opens a GPU index, one loader after another and several at once. JCuda's natives and
 * the project's JNI library are bound to the first loader that loads a file, so each loader must load its own copy.
 */
class GpuBackendClassLoadersTest {

    private static URL[] jobJar;

    @BeforeAll
    static void gpuPresentAndTheJarsFound() throws Exception {
        Assumptions.assumeTrue(GpuSupport.isAvailable(), GpuSupport.unavailableReason());
        final Set<URL> urls = new LinkedHashSet<>();
        urls.add(location(FlixIndex.class));
        urls.add(location(GpuFlixIndexProvider.class));
        urls.add(location(jcuda.driver.CUdevice.class));
        final URL natives = ClassLoader.getSystemResource("lib/libJCudaDriver-12.6.0-linux-x86_64.so");
        assertTrue(natives != null && natives.getProtocol().equals("jar"), "JCuda's natives jar: " + natives);
        final String jar = natives.getPath();
        urls.add(new URL(jar.substring(0, jar.indexOf("!/"))));
        jobJar = urls.toArray(URL[]::new);
    }

    @Test
    void eachLoaderOneAfterAnotherOpensTheGpu() throws Exception {
        final List<String> hostArrayPaths = new ArrayList<>();
        for (int job = 0; job < 3; job++) {
            try (URLClassLoader loader = new URLClassLoader("job-" + job, jobJar, ClassLoader.getPlatformClassLoader())) {
                assertEquals("GPU", openAndCount(loader), "job " + job);
                hostArrayPaths.add(String.valueOf(
                        loader.loadClass(GpuSupport.class.getName()).getMethod("hostArrayPath").invoke(null)));
                release(loader);
            }
        }
        // the heap is registered with the driver once a process: a later loader uses the registration of an earlier
        final boolean direct = hostArrayPaths.get(0).startsWith("straight from the Java heap");
        for (String path : hostArrayPaths) {
            assertEquals(direct, path.startsWith("straight from the Java heap"), hostArrayPaths::toString);
        }
        System.out.println("host arrays of the three loaders' indexes: " + hostArrayPaths);
    }

    /**
     * A job's class loader, released, is collected: JCuda's native library holds global references to its classes,
     * which would keep every job's class loader (and its class metadata) in the task manager for good.
     */
    @Test
    void aReleasedLoaderIsCollected() throws Exception {
        final WeakReference<ClassLoader> released = openAndRelease(false);
        int collections = 0;
        while (released.get() != null && collections < 20) {
            System.gc();
            collections++;
        }
        assertNull(released.get(), "the released class loader is still reachable after " + collections
                + " collections");
    }

    /** After its release a loader's GPU backend fails to open, naming why, rather than touching JCuda again. */
    @Test
    void aReleasedLoadersGpuBackendStaysClosed() throws Exception {
        openAndRelease(true);
    }

    private static WeakReference<ClassLoader> openAndRelease(boolean reopen) throws Exception {
        try (URLClassLoader loader = new URLClassLoader("released-job", jobJar, ClassLoader.getPlatformClassLoader())) {
            assertEquals("GPU", openAndCount(loader));
            release(loader);
            if (reopen) {
                final Throwable reopened = assertThrows(Throwable.class, () -> openAndCount(loader));
                final StringBuilder causes = new StringBuilder();
                for (Throwable t = reopened; t != null; t = t.getCause()) {
                    causes.append(t).append(" / ");
                }
                assertTrue(causes.toString().contains("was released"), causes::toString);
            }
            return new WeakReference<>(loader);
        }
    }

    @Test
    void severalLoadersAtOnceOpenTheGpu() throws Exception {
        final ExecutorService threads = Executors.newFixedThreadPool(3);
        final List<URLClassLoader> loaders = new ArrayList<>();
        try {
            final List<Future<String>> opened = new ArrayList<>();
            for (int job = 0; job < 3; job++) {
                final URLClassLoader loader = new URLClassLoader("concurrent-" + job, jobJar,
                        ClassLoader.getPlatformClassLoader());
                loaders.add(loader);
                opened.add(threads.submit((Callable<String>) () -> openAndCount(loader)));
            }
            for (Future<String> backend : opened) {
                assertEquals("GPU", backend.get());
            }
        } finally {
            threads.shutdown();
            for (URLClassLoader loader : loaders) {
                release(loader);
                loader.close();
            }
        }
    }

    /** Opens a GPU index through the loader's own index library, upserts and gets; the backend's name. */
    private static String openAndCount(ClassLoader loader) throws Exception {
        final Class<?> backend = loader.loadClass("io.flix.index.Backend");
        assertTrue(backend.getClassLoader() == loader, "the loader's own copy of the index library");
        final Object gpu = backend.getField("GPU").get(null);
        final Object reason = backend.getMethod("unavailableReason").invoke(gpu);
        assertNull(reason, "the GPU backend in class loader " + loader.getName());
        final Class<?> config = loader.loadClass("io.flix.index.FlixConfig");
        final Object builder = config.getMethod("builder").invoke(null);
        final Object built = builder.getClass().getMethod("build").invoke(
                builder.getClass().getMethod("backend", backend).invoke(builder, gpu));
        final Class<?> indexType = loader.loadClass("io.flix.index.FlixIndex");
        try (AutoCloseable index = (AutoCloseable) indexType.getMethod("open", config).invoke(null, built)) {
            final long[] keys = {3, 1, 2};
            indexType.getMethod("upsert", long[].class, long[].class, int.class)
                    .invoke(index, keys, new long[] {30, 10, 20}, 3);
            final long[] found = new long[3];
            indexType.getMethod("get", long[].class, int.class, long[].class)
                    .invoke(index, new long[] {1, 2, 3}, 3, found);
            assertEquals(List.of(10L, 20L, 30L), List.of(found[0], found[1], found[2]));
            return String.valueOf(indexType.getMethod("backend").invoke(index));
        }
    }

    private static void release(ClassLoader loader) throws Exception {
        final Method release = loader.loadClass("io.flix.index.FlixIndex").getMethod("releaseBackendResources");
        release.invoke(null);
    }

    private static URL location(Class<?> type) throws URISyntaxException, java.net.MalformedURLException {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toUri().toURL();
    }
}
