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
    /** Buckets a bucket sample stands for (sample_bucket_max; GpuFlixIndex keeps the samples). */
    static final int BUCKET_SAMPLE_STRIDE = 16;
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

    /**
     * range_count's count of a range whose lo is greater than its hi: more pairs than any result holds, so that the
     * scanned total sends the host to its check of the ranges, which words the error.
     */
    static final long RANGE_OUT_OF_ORDER = 1L << 31;

    // Counter slots (DeviceCounters): one meaning a slot; "(int)" marks a slot an int counter takes.

    // The FliX index's counters (GpuFlixIndex).
    /** delete_apply: the free stack's top; the nodes it empties are pushed there. */
    static final int SLOT_FREE_TOP = 0;
    /** delete_apply: keys deleted. */
    static final int SLOT_KEYS_DELETED = 1;
    /** upsert_apply, upsert_apply_single: keys inserted (not replaced). */
    static final int SLOT_KEYS_INSERTED = 2;
    /** upsert_count: work items that take batch keys. */
    static final int SLOT_BUCKETS_TOUCHED = 3;
    /** upsert_count: most batch keys one work item takes. */
    static final int SLOT_MOST_KEYS_IN_A_BUCKET = 4;
    /** upsert_count: most nodes one bucket gains (how much a chain may grow). */
    static final int SLOT_MOST_NODES_GAINED = 5;
    /** chain_stats: nodes linked. */
    static final int SLOT_NODES_IN_USE = 6;
    /** chain_stats, split_chains: nodes of the longest chain. */
    static final int SLOT_LONGEST_CHAIN = 7;
    /** compact_touched (int): work items of a batch sliced by touched bucket. */
    static final int SLOT_TOUCHED_ITEMS = 8;
    /** upsert_apply (int): wide merges recorded. */
    static final int SLOT_WIDE_MERGES = 9;
    /** lookup_get, lookup_ceiling, lookup_floor (int): first broken sort promise. */
    static final int SLOT_FIRST_UNSORTED = 10;
    /** upsert (int): nodes the batch needs, the count scan's total copied beside the count pass's counters. */
    static final int SLOT_NODES_NEEDED = 11;
    static final int INDEX_COUNTER_SLOTS = 12;

    // The batch steps' counters (DeviceSteps).
    /** key_spread: the OR of keys[i] ^ keys[0]. */
    static final int STEP_KEY_SPREAD = 0;
    /** key_spread, check_batch, gather_values (int): first position of a reserved value. */
    static final int STEP_FIRST_RESERVED = 1;
    /** check_batch (int): first position of a broken sort promise. */
    static final int STEP_FIRST_UNSORTED = 2;
    /** flag_last_of_run, sort_within_digits (int): runs of equal keys. */
    static final int STEP_RUNS = 3;
    /** sort_within_digits (int): runs too long to sort within their digit. */
    static final int STEP_LONG_DIGIT_RUNS = 4;
    /** compact_flagged: pairs kept. */
    static final int STEP_DEDUPED_PAIRS = 5;
    static final int STEP_COUNTER_SLOTS = 6;

    // A pipelined lookup's launch arguments (HostArrayDma.lookupWindow): slots of the long[] handed to the native side.
    /** Copies to the device. */
    static final int GET_STREAM_IN = 0;
    /** The index's device work. */
    static final int GET_STREAM_COMPUTE = 1;
    /** Copies to the host. */
    static final int GET_STREAM_OUT = 2;
    /** Recorded after each chunk's upload. */
    static final int GET_EVENT_UPLOADED = 3;
    /** Recorded after each chunk's lookup. */
    static final int GET_EVENT_COMPUTED = 4;
    /** lookup_get_any_order, lookup_ceiling_any_order or lookup_floor_any_order. */
    static final int GET_FUNCTION = 5;
    static final int GET_BUCKET_MAX = 6;
    static final int GET_NUM_BUCKETS = 7;
    static final int GET_BUCKET_HEAD = 8;
    static final int GET_NODE_KEYS = 9;
    static final int GET_NODE_VALUES = 10;
    static final int GET_NODE_COUNT = 11;
    static final int GET_NODE_NEXT = 12;
    static final int GET_NODE_MAX = 13;
    /** The whole batch's queries on the device, query i at byte 8 i. */
    static final int GET_QUERIES = 14;
    /** The whole batch's answers on the device, likewise. */
    static final int GET_VALUES = 15;
    /** An int the kernel lowers where the sort promise breaks; 0: not checked. */
    static final int GET_FIRST_UNSORTED = 16;
    static final int GET_BUCKET_SAMPLES = 17;
    static final int GET_NUM_SAMPLES = 18;
    /** Every other chunk's lookup, so that one chunk's starts while another's ends. */
    static final int GET_STREAM_LOOKUP_ALTERNATE = 19;
    /** Ceiling and floor: the answers' keys on the device, likewise; 0 for a get. */
    static final int GET_KEYS = 20;
    static final int GET_SLOTS = 21;

    private KernelContract() {
    }
}
