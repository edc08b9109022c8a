package io.flix.index.gpu;

import static io.flix.index.gpu.KernelContract.GET_BUCKET_HEAD;
import static io.flix.index.gpu.KernelContract.GET_BUCKET_MAX;
import static io.flix.index.gpu.KernelContract.GET_BUCKET_SAMPLES;
import static io.flix.index.gpu.KernelContract.GET_FIRST_UNSORTED;
import static io.flix.index.gpu.KernelContract.GET_FUNCTION;
import static io.flix.index.gpu.KernelContract.GET_KEYS;
import static io.flix.index.gpu.KernelContract.GET_NODE_COUNT;
import static io.flix.index.gpu.KernelContract.GET_NODE_KEYS;
import static io.flix.index.gpu.KernelContract.GET_NODE_MAX;
import static io.flix.index.gpu.KernelContract.GET_NODE_NEXT;
import static io.flix.index.gpu.KernelContract.GET_NODE_VALUES;
import static io.flix.index.gpu.KernelContract.GET_NUM_BUCKETS;
import static io.flix.index.gpu.KernelContract.GET_NUM_SAMPLES;
import static io.flix.index.gpu.KernelContract.GET_QUERIES;
import static io.flix.index.gpu.KernelContract.GET_VALUES;

/**
 * A lookup (get, ceiling or floor) whose device work is one launch of {@code lookup_get_any_order},
 * {@code lookup_ceiling_any_order} or {@code lookup_floor_any_order} a chunk (one thread a query, in any order), so
 * that its copies and launches can be issued as one pipeline with no host step between them
 * ({@link HostArrayCopies#pipelinedLookup}). A structure offers it where its chains are short enough for those
 * kernels; the raw device addresses are valid until the structure next changes.
 *
 * @param function    the kernel's handle
 * @param queries     the device array the batch's queries go to, query i at byte 8 i
 * @param values      the device array the answers' values are written to, likewise
 * @param keys        the device array the answers' keys are written to, likewise (ceiling and floor); 0 for a get
 * @param sortCheck   the int the kernel lowers where a sort promise breaks (read by the structure afterwards)
 */
record PipelinedLookup(long function, long bucketMax, int numBuckets, long bucketSamples, int numSamples,
                       long bucketHead, long nodeKeys, long nodeValues, long nodeCount, long nodeNext, long nodeMax,
                       long queries, long values, long keys, long sortCheck) {

    /** Whether the answers carry keys (ceiling and floor). */
    boolean answersKeys() {
        return keys != 0;
    }

    /** Writes its slots of the native pipeline's arguments; the sort check only where {@code checkSort}. */
    void writeTo(long[] args, boolean checkSort) {
        args[GET_FUNCTION] = function;
        args[GET_BUCKET_MAX] = bucketMax;
        args[GET_NUM_BUCKETS] = numBuckets;
        args[GET_BUCKET_SAMPLES] = bucketSamples;
        args[GET_NUM_SAMPLES] = numSamples;
        args[GET_BUCKET_HEAD] = bucketHead;
        args[GET_NODE_KEYS] = nodeKeys;
        args[GET_NODE_VALUES] = nodeValues;
        args[GET_NODE_COUNT] = nodeCount;
        args[GET_NODE_NEXT] = nodeNext;
        args[GET_NODE_MAX] = nodeMax;
        args[GET_QUERIES] = queries;
        args[GET_VALUES] = values;
        args[GET_KEYS] = keys;
        args[GET_FIRST_UNSORTED] = checkSort ? sortCheck : 0;
    }
}
