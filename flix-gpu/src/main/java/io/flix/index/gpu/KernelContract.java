package io.flix.index.gpu;

import io.flix.index.FlixIndex;

/**
 * The constants that the kernels and this package share, each under the name that
 * {@code src/main/cuda/kernel_contract.h} gives it, the one header every kernel file includes. KernelContractTest
 * parses the header and fails the build where a value here differs from it or a constant is on one side only, so
 * that the two cannot drift apart.
 */
final class KernelContract {

    /** Keys per node: a warp's lanes hold one node. */
    static final int NODE_SIZE = 32;
    /** Threads per block of every launch (the kernels' launch bounds). */
    static final int BLOCK_THREADS = 256;
    /** The reserved value: never stored, and the value of a lookup that finds nothing. */
    static final long NOT_FOUND = FlixIndex.NOT_FOUND;
    static final int MODE_GET = 0;
    static final int MODE_CEILING = 1;
    static final int MODE_FLOOR = 2;
    /** A node taking at least this many batch keys of an upsert is merged by many blocks. */
    static final int WIDE_MERGE_MIN = 2048;
    /** sizeof(WideMerge), the record of one such merge. */
    static final int WIDE_MERGE_BYTES = 680;

    private KernelContract() {
    }
}
