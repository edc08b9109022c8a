// JNI bridge for io.flix.index.gpu.HostArrayDma: Java long[] arrays copied straight between the Java heap and the
// device, with no pinned staging and no host copy. The heap is registered with the driver once (page-locked, so the
// copy engines read and write it at the bus's rate); a copy then holds the array with GetPrimitiveArrayCritical,
// which keeps the garbage collector from moving it, until the copy has finished. Where the array lies outside the
// registered range the driver copies it through its own staging: slower, never wrong. A lookup (get, ceiling, floor)
// runs here whole, its copies and launches issued in one call (lookupWindow), so no step waits for the host; a small
// one has its kernel read and write the heap itself (lookupMapped), with no copy at all. Returns are CUresult codes.
#include <jni.h>
#include <cuda.h>
#include <cstdio>
#include <cstdint>

#include "cuda_driver.h"
#include "kernel_contract.h"

namespace {

typedef CUresult (*RegisterFn)(void*, size_t, unsigned int);
typedef CUresult (*DevicePointerFn)(CUdeviceptr*, void*, unsigned int);
typedef CUresult (*ToDeviceFn)(CUdeviceptr, const void*, size_t, CUstream);
typedef CUresult (*ToHostFn)(void*, CUdeviceptr, size_t, CUstream);
typedef CUresult (*SynchronizeFn)(CUstream);
typedef CUresult (*RecordFn)(CUevent, CUstream);
typedef CUresult (*WaitFn)(CUstream, CUevent, unsigned int);

struct Driver {
    RegisterFn registerHost;
    DevicePointerFn devicePointer;
    ToDeviceFn toDevice;
    ToHostFn toHost;
    SynchronizeFn synchronize;
    RecordFn record;
    WaitFn wait;
    LaunchFn launch;
    bool loaded;
};

const Driver& driver() {
    static Driver d = [] {
        Driver r{};
        r.registerHost = (RegisterFn)flixDriverSymbol("cuMemHostRegister_v2");
        r.devicePointer = (DevicePointerFn)flixDriverSymbol("cuMemHostGetDevicePointer_v2");
        r.toDevice = (ToDeviceFn)flixDriverSymbol("cuMemcpyHtoDAsync_v2");
        r.toHost = (ToHostFn)flixDriverSymbol("cuMemcpyDtoHAsync_v2");
        r.synchronize = (SynchronizeFn)flixDriverSymbol("cuStreamSynchronize");
        r.record = (RecordFn)flixDriverSymbol("cuEventRecord");
        r.wait = (WaitFn)flixDriverSymbol("cuStreamWaitEvent");
        r.launch = (LaunchFn)flixDriverSymbol("cuLaunchKernel");
        r.loaded = r.registerHost && r.devicePointer && r.toDevice && r.toHost && r.synchronize && r.record && r.wait
                   && r.launch;
        return r;
    }();
    return d;
}

// The registered heap as the device sees it (set once, by registerMappingOf): host [start, end) at device address
// deviceStart; deviceStart 0 where the registration is not mapped for the device.
struct Mapping {
    uintptr_t start;
    uintptr_t end;
    CUdeviceptr deviceStart;
};
Mapping mapping{};

// The device's address of host [at, at + bytes), or 0 where that lies outside the mapped heap.
CUdeviceptr mapped(const void* at, size_t bytes) {
    const uintptr_t a = (uintptr_t)at;
    if (mapping.deviceStart == 0 || a < mapping.start || a + bytes > mapping.end) return 0;
    return mapping.deviceStart + (a - mapping.start);
}

// A lookup's launch of lookup_get_any_order, lookup_ceiling_any_order or lookup_floor_any_order (one parameter list):
// the parameters every launch of one call shares, from the GET_ slots of kernel_contract.h, and the launch of one run
// of queries.
struct Lookup {
    CUfunction function;
    CUdeviceptr bucketMax;
    int numBuckets;
    CUdeviceptr bucketSamples;
    int numSamples;
    CUdeviceptr bucketHead;
    CUdeviceptr nodeKeys;
    CUdeviceptr nodeValues;
    CUdeviceptr nodeCount;
    CUdeviceptr nodeNext;
    CUdeviceptr nodeMax;
    CUdeviceptr firstUnsorted;

    explicit Lookup(const jlong* a)
        : function((CUfunction)a[GET_FUNCTION]), bucketMax((CUdeviceptr)a[GET_BUCKET_MAX]),
          numBuckets((int)a[GET_NUM_BUCKETS]), bucketSamples((CUdeviceptr)a[GET_BUCKET_SAMPLES]),
          numSamples((int)a[GET_NUM_SAMPLES]), bucketHead((CUdeviceptr)a[GET_BUCKET_HEAD]),
          nodeKeys((CUdeviceptr)a[GET_NODE_KEYS]), nodeValues((CUdeviceptr)a[GET_NODE_VALUES]),
          nodeCount((CUdeviceptr)a[GET_NODE_COUNT]), nodeNext((CUdeviceptr)a[GET_NODE_NEXT]),
          nodeMax((CUdeviceptr)a[GET_NODE_MAX]), firstUnsorted((CUdeviceptr)a[GET_FIRST_UNSORTED]) {}

    // n queries at device address `queries`, their answers' values to `values` and keys to `keys` (0 for a get),
    // the sort promise checked from query checkFrom on (where it is checked at all)
    CUresult launch(const Driver& d, CUdeviceptr queries, CUdeviceptr values, CUdeviceptr keys, int n, int checkFrom,
                    CUstream stream) {
        CUdeviceptr perm = 0;
        void* params[] = {&bucketMax, &numBuckets, &bucketSamples, &numSamples, &bucketHead, &nodeKeys, &nodeValues,
                          &nodeCount, &nodeNext, &nodeMax, &queries, &perm, &n, &values, &keys, &firstUnsorted,
                          &checkFrom};
        return d.launch(function, (unsigned)((n + BLOCK_THREADS - 1) / BLOCK_THREADS), 1, 1, BLOCK_THREADS, 1, 1, 0,
                        stream, params, nullptr);
    }
};

// A lookup's arrays held still (JNI's critical access) for as long as it lives: the queries, the answers' values and
// keys (none for a get: keysArray null) and, where the sort promise is checked, the int it comes back in. held():
// CUDA_SUCCESS, or why not all could be held.
struct HeldLookup {
    JNIEnv* env;
    jlongArray queriesArray, valuesArray, keysArray, checkArray;
    jlong* queries;
    jlong* values;
    jlong* keys;
    jlong* check;

    HeldLookup(JNIEnv* env, jlongArray queriesArray, jlongArray valuesArray, jlongArray keysArray,
               jlongArray sortCheck, bool checked)
        : env(env), queriesArray(queriesArray), valuesArray(valuesArray), keysArray(keysArray),
          checkArray(sortCheck) {
        queries = (jlong*)env->GetPrimitiveArrayCritical(queriesArray, nullptr);
        values = queries ? (jlong*)env->GetPrimitiveArrayCritical(valuesArray, nullptr) : nullptr;
        keys = values && keysArray ? (jlong*)env->GetPrimitiveArrayCritical(keysArray, nullptr) : nullptr;
        const bool keysHeld = !keysArray || keys;
        check = values && keysHeld && checked ? (jlong*)env->GetPrimitiveArrayCritical(sortCheck, nullptr) : nullptr;
        ok = queries && values && keysHeld && (!checked || check);
    }

    CUresult held() const { return ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY; }

    ~HeldLookup() {
        if (check) env->ReleasePrimitiveArrayCritical(checkArray, check, 0);
        if (keys) env->ReleasePrimitiveArrayCritical(keysArray, keys, 0);
        if (values) env->ReleasePrimitiveArrayCritical(valuesArray, values, 0);
        if (queries) env->ReleasePrimitiveArrayCritical(queriesArray, queries, JNI_ABORT);
    }

 private:
    bool ok;
};

}  // namespace

extern "C" {

// Registers (page-locks, for every context, and maps for the device where the driver can) the whole mapping of this
// process that holds `probe`'s elements, as /proc/self/maps lists it; its start and length into out[0], out[1], and
// into out[2] 1 where the device reads and writes it in place (lookupMapped), else 0. The caller makes sure the mapping
// is the Java heap and that the heap never gives pages back to the system (else a page mapped anew would not be the
// one registered).
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_HostArrayDma_registerMappingOf(JNIEnv* env, jclass, jlongArray probe,
                                                                           jlongArray out) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    void* elements = env->GetPrimitiveArrayCritical(probe, nullptr);
    const uintptr_t at = (uintptr_t)elements;
    env->ReleasePrimitiveArrayCritical(probe, elements, JNI_ABORT);
    FILE* maps = std::fopen("/proc/self/maps", "r");
    if (!maps) return CUDA_ERROR_NOT_FOUND;
    unsigned long start = 0, end = 0, s = 0, e = 0;
    char line[512];
    while (std::fgets(line, sizeof line, maps)) {
        if (std::sscanf(line, "%lx-%lx", &s, &e) == 2 && at >= s && at < e) {
            start = s;
            end = e;
            break;
        }
    }
    std::fclose(maps);
    if (start == 0) return CUDA_ERROR_NOT_FOUND;
    CUresult r = driver().registerHost((void*)start, end - start,
                                       CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    // where the driver cannot map it, copies still read it at the bus's rate
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
        r = driver().registerHost((void*)start, end - start, CU_MEMHOSTREGISTER_PORTABLE);
    }
    // another class loader of this process (an earlier Flink job's) registered the heap: it stays registered
    if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) r = CUDA_SUCCESS;
    // in place only where the device sees the heap at the host's addresses, which then hold in every context
    CUdeviceptr deviceStart = 0;
    if (r == CUDA_SUCCESS && driver().devicePointer(&deviceStart, (void*)start, 0) == CUDA_SUCCESS
        && deviceStart == (CUdeviceptr)start) {
        mapping = Mapping{start, end, deviceStart};
    }
    const jlong range[3] = {(jlong)start, (jlong)(end - start), mapping.deviceStart != 0 ? 1 : 0};
    env->SetLongArrayRegion(out, 0, 3, range);
    return r;
}

// Copies between array[from, from + count) and device address `device` on `stream` (`toDevice`: up, else down)
// and waits for the copy, holding the array still until then.
static jint copyHeld(JNIEnv* env, jlongArray array, jint from, jint count, jlong device, jlong stream, bool toDevice) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    jlong* elements = (jlong*)env->GetPrimitiveArrayCritical(array, nullptr);
    if (!elements) return CUDA_ERROR_OUT_OF_MEMORY;
    const size_t bytes = (size_t)count * sizeof(jlong);
    CUresult r = toDevice ? driver().toDevice((CUdeviceptr)device, elements + from, bytes, (CUstream)stream)
                          : driver().toHost(elements + from, (CUdeviceptr)device, bytes, (CUstream)stream);
    if (r == CUDA_SUCCESS) r = driver().synchronize((CUstream)stream);
    env->ReleasePrimitiveArrayCritical(array, elements, toDevice ? JNI_ABORT : 0);
    return r;
}

// Copies src[from, from + count) to device address `dst` on `stream` and waits for it.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_HostArrayDma_toDevice(JNIEnv* env, jclass, jlongArray src, jint from,
                                                                   jint count, jlong dst, jlong stream) {
    return copyHeld(env, src, from, count, dst, stream, true);
}

// Copies `count` longs from device address `src` into dst[from, from + count) on `stream` and waits for them.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_HostArrayDma_toHost(JNIEnv* env, jclass, jlong src, jlongArray dst,
                                                                 jint from, jint count, jlong stream) {
    return copyHeld(env, dst, from, count, src, stream, false);
}

// A lookup of queries[from, from + count) into values[from, from + count) (and, for ceiling and floor, keys at the
// same place; keys null for a get) as one pipeline issued from here, with no host wait between its steps: chunk by
// chunk of `chunkLongs`, the queries go up on the in stream, the GET_FUNCTION kernel answers them once they are there
// (on the compute stream and the alternate lookup stream in turn), and the answers come back on the out stream once
// they are written, so chunk k + 1 goes up while chunk k is looked up and chunk k - 1 comes back; a window of one
// chunk runs on the compute stream alone. Where the sort promise is checked (GET_FIRST_UNSORTED), the check's int
// comes back into sortCheck[0]'s low half behind the last answers. The arrays are held still from the first copy
// until every copy issued has ended, whatever failed. `args`: the GET_ slots of kernel_contract.h. Returns the first
// failure's CUresult.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_HostArrayDma_lookupWindow(JNIEnv* env, jclass, jlongArray queries,
                                                                       jlongArray values, jlongArray keys, jint from,
                                                                       jint count, jint chunkLongs, jlongArray args,
                                                                       jlongArray sortCheck) {
    const Driver& d = driver();
    if (!d.loaded) return CUDA_ERROR_NOT_FOUND;
    if (count <= 0) return CUDA_SUCCESS;
    if (chunkLongs <= 0) return CUDA_ERROR_INVALID_VALUE;
    jlong a[GET_SLOTS];
    env->GetLongArrayRegion(args, 0, GET_SLOTS, a);
    const CUstream in = (CUstream)a[GET_STREAM_IN];
    const CUstream compute = (CUstream)a[GET_STREAM_COMPUTE];
    const CUstream out = (CUstream)a[GET_STREAM_OUT];
    const CUstream alternate = (CUstream)a[GET_STREAM_LOOKUP_ALTERNATE];
    const CUevent uploaded = (CUevent)a[GET_EVENT_UPLOADED];
    const CUevent computed = (CUevent)a[GET_EVENT_COMPUTED];
    Lookup lookup(a);
    const HeldLookup held(env, queries, values, keys, sortCheck, lookup.firstUnsorted != 0);
    jlong* const q = held.queries;
    jlong* const v = held.values;
    jlong* const k = held.keys;
    jlong* const check = held.check;
    CUresult r = held.held();
    const long long end = (long long)from + count;
    // one chunk: everything on the compute stream, with no hop between streams
    const bool oneStream = count <= chunkLongs;
    const CUstream up = oneStream ? compute : in;
    const CUstream down = oneStream ? compute : out;
    if (r == CUDA_SUCCESS && !oneStream) {
        // the queries' device array is overwritten, and the index read on the alternate stream, only after the
        // compute stream's earlier work
        r = d.record(computed, compute);
        if (r == CUDA_SUCCESS) r = d.wait(in, computed, 0);
        if (r == CUDA_SUCCESS) r = d.wait(alternate, computed, 0);
    }
    long long length = 0;
    long long chunk = 0;
    for (long long at = from; r == CUDA_SUCCESS && at < end; at += length, chunk++) {
        // a lookup launch of one chunk fills the device about once: the next chunk's, on the other stream, starts
        // as this one's last threads finish
        const CUstream lookupOn = oneStream || chunk % 2 == 0 ? compute : alternate;
        length = end - at < chunkLongs ? end - at : chunkLongs;
        const int n = (int)length;
        const size_t bytes = (size_t)n * sizeof(jlong);
        const CUdeviceptr chunkQueries = (CUdeviceptr)a[GET_QUERIES] + (CUdeviceptr)at * sizeof(jlong);
        const CUdeviceptr chunkValues = (CUdeviceptr)a[GET_VALUES] + (CUdeviceptr)at * sizeof(jlong);
        const CUdeviceptr chunkKeys = k ? (CUdeviceptr)a[GET_KEYS] + (CUdeviceptr)at * sizeof(jlong) : 0;
        r = d.toDevice(chunkQueries, q + at, bytes, up);
        if (r == CUDA_SUCCESS && !oneStream) r = d.record(uploaded, in);
        if (r == CUDA_SUCCESS && !oneStream) r = d.wait(lookupOn, uploaded, 0);
        // the first query of the batch has none before it to be checked against
        if (r == CUDA_SUCCESS) r = lookup.launch(d, chunkQueries, chunkValues, chunkKeys, n, at == 0 ? 1 : 0, lookupOn);
        if (r == CUDA_SUCCESS && !oneStream) r = d.record(computed, lookupOn);
        if (r == CUDA_SUCCESS && !oneStream) r = d.wait(out, computed, 0);
        if (r == CUDA_SUCCESS) r = d.toHost(v + at, chunkValues, bytes, down);
        if (r == CUDA_SUCCESS && k) r = d.toHost(k + at, chunkKeys, bytes, down);
    }
    if (r == CUDA_SUCCESS && check && !oneStream) {
        // the check's int is final once both lookup streams are done
        r = d.record(computed, compute);
        if (r == CUDA_SUCCESS) r = d.wait(out, computed, 0);
        if (r == CUDA_SUCCESS) r = d.record(computed, alternate);
        if (r == CUDA_SUCCESS) r = d.wait(out, computed, 0);
    }
    if (r == CUDA_SUCCESS && check) r = d.toHost(check, lookup.firstUnsorted, sizeof(int), down);
    // no copy may outlive the arrays' hold
    const CUresult streams[] = {d.synchronize(in), d.synchronize(compute),
                                oneStream ? CUDA_SUCCESS : d.synchronize(alternate), d.synchronize(out)};
    for (CUresult s : streams) {
        if (r == CUDA_SUCCESS) r = s;
    }
    return r;
}

// A lookup of queries[from, from + count) into values[from, from + count) (and keys, as lookupWindow's) by one launch
// of the GET_FUNCTION kernel on the compute stream that reads the queries from the heap and writes the answers into
// it, through the registered heap's device mapping: no copy, so a small lookup costs one launch and its bytes' trip.
// (Both directions at once move slower this way than the copy engines move them, so large lookups take
// lookupWindow.) Where the sort promise is checked (GET_FIRST_UNSORTED), the check's int comes back into
// sortCheck[0]'s low half. Returns CUDA_ERROR_NOT_MAPPED, having done nothing, where the heap is not mapped or an
// array lies outside it.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_HostArrayDma_lookupMapped(JNIEnv* env, jclass, jlongArray queries,
                                                                       jlongArray values, jlongArray keys, jint from,
                                                                       jint count, jlongArray args,
                                                                       jlongArray sortCheck) {
    const Driver& d = driver();
    if (!d.loaded) return CUDA_ERROR_NOT_FOUND;
    if (count <= 0) return CUDA_SUCCESS;
    jlong a[GET_SLOTS];
    env->GetLongArrayRegion(args, 0, GET_SLOTS, a);
    const CUstream compute = (CUstream)a[GET_STREAM_COMPUTE];
    Lookup lookup(a);
    const HeldLookup held(env, queries, values, keys, sortCheck, lookup.firstUnsorted != 0);
    CUresult r = held.held();
    if (r != CUDA_SUCCESS) return r;
    const size_t bytes = (size_t)count * sizeof(jlong);
    const CUdeviceptr mappedQueries = mapped(held.queries + from, bytes);
    const CUdeviceptr mappedValues = mapped(held.values + from, bytes);
    const CUdeviceptr mappedKeys = held.keys ? mapped(held.keys + from, bytes) : 0;
    if (mappedQueries == 0 || mappedValues == 0 || (held.keys && mappedKeys == 0)) return CUDA_ERROR_NOT_MAPPED;
    r = lookup.launch(d, mappedQueries, mappedValues, mappedKeys, count, 1, compute);
    if (r == CUDA_SUCCESS && held.check) r = d.toHost(held.check, lookup.firstUnsorted, sizeof(int), compute);
    // the kernel may have started whatever failed after it: the arrays stay held until it is done
    const CUresult done = d.synchronize(compute);
    return r == CUDA_SUCCESS ? done : r;
}

}  // extern "C"
