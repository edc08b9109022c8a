package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.flix.index.GpuTuning;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;

/**
 * The process-wide GPU state: the driver initialised, the CUB bridge loaded, and per device the primary context
 * (retained once, kept for the life of the process) with the kernel module loaded into it, and the ledger of the
 * device memory this process's indexes hold on it.
 */
final class GpuRuntime {

    static final String FATBIN_RESOURCE = "flix_kernels.fatbin";

    private static final Map<Integer, DeviceContext> DEVICES = new HashMap<>();
    private static boolean initialised;
    /** Set where {@link #release()} let go of JCuda in a job's class loader: the GPU backend stays closed there. */
    private static boolean closedForGood;

    private GpuRuntime() {
    }

    /** Initialises the driver and the CUB bridge; throws with the reason where that fails. */
    static synchronized void initialise() throws IOException {
        if (initialised) {
            return;
        }
        if (closedForGood) {
            throw new IOException("the GPU backend of this class loader was released (its job ended): open indexes "
                    + "in the class loader of a job that runs");
        }
        if (GpuRuntime.class.getResource(FATBIN_RESOURCE) == null) {
            throw new IOException("the GPU kernels (" + FATBIN_RESOURCE + ") are not in this build of flix-index-gpu: "
                    + "build it with nvcc 12+ on PATH to enable the GPU backend");
        }
        try {
            JCudaNatives.load();
        } catch (ClassNotFoundException e) {
            throw new IOException("JCuda (" + JCudaNatives.DRIVER_CLASS + ") is not on the class path", e);
        }
        JCudaDriver.setExceptionsEnabled(true);
        cuInit(0);
        final int[] count = new int[1];
        cuDeviceGetCount(count);
        if (count[0] == 0) {
            throw new IOException("no CUDA device found");
        }
        NativeLibrary.load();
        initialised = true;
    }

    static synchronized int deviceCount() {
        if (closedForGood) {
            throw new IllegalStateException("the GPU backend of this class loader was released (its job ended)");
        }
        final int[] count = new int[1];
        cuDeviceGetCount(count);
        return count[0];
    }

    /**
     * The CUDA ordinals of the devices this process sees, in PCI bus order (domain, bus, device): the order in which
     * nvidia-smi numbers them, and so Flink's GPU discovery script. CUDA's own order puts the fastest device first.
     */
    static synchronized List<Integer> devicesInPciBusOrder() throws IOException {
        initialise();
        final int count = deviceCount();
        final long[] address = new long[count];
        final List<Integer> ordinals = new ArrayList<>(count);
        for (int ordinal = 0; ordinal < count; ordinal++) {
            final CUdevice device = new CUdevice();
            cuDeviceGet(device, ordinal);
            address[ordinal] = (attribute(device, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID) << 40)
                    | (attribute(device, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) << 20)
                    | attribute(device, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
            ordinals.add(ordinal);
        }
        ordinals.sort(Comparator.comparingLong((Integer o) -> address[o]).thenComparingInt(o -> o));
        return ordinals;
    }

    private static long attribute(CUdevice device, int attribute) {
        final int[] value = new int[1];
        cuDeviceGetAttribute(value, attribute, device);
        return value[0];
    }

    /**
     * Releases what this class loader holds on the devices between indexes: the copy threads, the pinned staging,
     * each device's kernel modules and its hold on the primary context. Only where no index of this class loader is
     * open or will be: Flink's operators call it as the job's class loader is released. In a class loader other than
     * the application's, JCuda's references to its own classes go too (they would keep the loader from being
     * collected), and the GPU backend of this loader cannot open again.
     */
    static synchronized void release() {
        CopyThreads.shutdown();
        PinnedPieces.freeAll();
        for (DeviceContext d : DEVICES.values()) {
            d.release();
        }
        DEVICES.clear();
        if (initialised && JCudaNatives.dropClassReferences()) {
            initialised = false;
            closedForGood = true;
        }
    }

    /** The device's context with the kernels loaded, current on the calling thread. */
    static synchronized DeviceContext device(int ordinal) throws IOException {
        initialise();
        DeviceContext d = DEVICES.get(ordinal);
        if (d == null) {
            if (ordinal >= deviceCount()) {
                throw new IllegalArgumentException("device " + ordinal + " does not exist: " + deviceCount()
                        + " CUDA device(s) present");
            }
            d = new DeviceContext(ordinal);
            DEVICES.put(ordinal, d);
        }
        d.makeCurrent();
        return d;
    }

    /** One device's primary context and the kernel module. */
    static final class DeviceContext {
        final int ordinal;
        final String name;
        final long totalMemory;
        /**
         * Whether the device has virtual memory management: buffers that grow (the FliX node pool) can reserve an
         * address range and map memory into it (DeviceBuffer.reserve) rather than allocate anew and copy.
         */
        final boolean virtualMemoryManagement;
        /** The device memory this process's indexes hold on the device, and their budgets. */
        final DeviceMemoryLedger memory;
        private final CUcontext context = new CUcontext();
        private final CUmodule module = new CUmodule();
        private final Map<String, CUfunction> functions = new HashMap<>();
        private final Map<String, CUmodule> extraModules = new HashMap<>();
        private final Map<String, CUfunction> extraFunctions = new HashMap<>();

        private DeviceContext(int ordinal) throws IOException {
            this.ordinal = ordinal;
            final CUdevice device = new CUdevice();
            cuDeviceGet(device, ordinal);
            final byte[] nameBytes = new byte[256];
            cuDeviceGetName(nameBytes, nameBytes.length, device);
            int len = 0;
            while (len < nameBytes.length && nameBytes[len] != 0) {
                len++;
            }
            this.name = new String(nameBytes, 0, len, StandardCharsets.US_ASCII);
            final long[] total = new long[1];
            cuDeviceTotalMem(total, device);
            this.totalMemory = total[0];
            final int[] vmm = new int[1];
            cuDeviceGetAttribute(vmm, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                    device);
            this.virtualMemoryManagement = vmm[0] != 0;
            this.memory = new DeviceMemoryLedger("device " + ordinal + " (" + name + ", "
                    + DeviceMemoryLedger.size(totalMemory) + ")", totalMemory, GpuTuning.keptMemoryOn(totalMemory));
            cuDevicePrimaryCtxRetain(context, device);
            cuCtxSetCurrent(context);
            cuModuleLoadData(module, readFatbin(FATBIN_RESOURCE));
        }

        /** Unloads the modules and lets go of the primary context (the driver frees it with its last holder). */
        synchronized void release() {
            makeCurrent();
            for (CUmodule m : extraModules.values()) {
                cuModuleUnload(m);
            }
            extraModules.clear();
            extraFunctions.clear();
            functions.clear();
            cuModuleUnload(module);
            final CUdevice device = new CUdevice();
            cuDeviceGet(device, ordinal);
            cuDevicePrimaryCtxRelease(device);
        }

        /** Makes the primary context current on the calling thread (a context is current per thread). */
        void makeCurrent() {
            cuCtxSetCurrent(context);
        }

        synchronized CUfunction function(String kernel) {
            return functions.computeIfAbsent(kernel, k -> {
                final CUfunction f = new RawFunction();
                cuModuleGetFunction(f, module, k);
                return f;
            });
        }

        /** The raw handle of a kernel of flix_kernels.fatbin, for native code that launches it. */
        long functionAddress(String kernel) {
            return ((RawFunction) function(kernel)).address();
        }

        /** The raw handle of a kernel of another fatbin resource, for native code that launches it. */
        long functionAddress(String fatbinResource, String kernel) {
            return ((RawFunction) function(fatbinResource, kernel)).address();
        }

        /** A kernel of another fatbin resource, loaded into this context on first use. */
        synchronized CUfunction function(String fatbinResource, String kernel) {
            return extraFunctions.computeIfAbsent(fatbinResource + "/" + kernel, k -> {
                final CUmodule m = extraModules.computeIfAbsent(fatbinResource, r -> {
                    final CUmodule loaded = new CUmodule();
                    try {
                        cuModuleLoadData(loaded, readFatbin(r));
                    } catch (IOException e) {
                        throw new IllegalStateException(e.getMessage(), e);
                    }
                    return loaded;
                });
                final CUfunction f = new RawFunction();
                cuModuleGetFunction(f, m, kernel);
                return f;
            });
        }

        private static byte[] readFatbin(String resource) throws IOException {
            try (InputStream in = GpuRuntime.class.getResourceAsStream(resource)) {
                if (in == null) {
                    throw new IOException(resource + " is not on the class path");
                }
                return in.readAllBytes();
            }
        }
    }

    /** A kernel handle whose raw value can be read, to hand to native code. */
    private static final class RawFunction extends CUfunction {
        long address() {
            return getNativePointer();
        }
    }
}
