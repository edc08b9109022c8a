// The contract between the kernels and their Java host (package io.flix.index.gpu): the constants that both sides
// use, held here once. Java holds each #define below in io.flix.index.gpu.KernelContract under the same name, and
// KernelContractTest, a unit test of the build, fails where the two differ (it also checks every kernel's
// parameters against its typed launch in FlixKernels; flix-bench checks the sorted-array baseline's kernels against
// SortedArrayKernels the same way). Every .cu file of kernels includes it.
#pragma once

#include <cstdint>

// Keys and values are signed 64-bit.
typedef long long i64;

// Keys per node: a warp's lanes hold one node.
#define NODE_SIZE 32
// Buckets a bucket sample stands for: sample g is the max key of bucket min(16 g + 15, buckets - 1), so the samples
// of a few million buckets fit the L2 cache and the search below them reads one line of bucketMax.
#define BUCKET_SAMPLE_STRIDE 16
// Threads per block of every launch: the host launches blocks of this many, the __launch_bounds__ say so.
#define BLOCK_THREADS 256
// The reserved value: never stored, and the value of a lookup that finds nothing.
#define NOT_FOUND INT64_MIN
// Lookup modes: sa_lookup's mode; the FliX index has a kernel a mode (lookup_get, lookup_ceiling, lookup_floor).
#define MODE_GET 0
#define MODE_CEILING 1
#define MODE_FLOOR 2
// A node taking at least this many batch keys of an upsert is merged by many blocks (wide_merge_write and
// wide_merge_meta, after upsert_apply has recorded the merge).
#define WIDE_MERGE_MIN 2048
// sizeof(WideMerge), the record of one such merge: the host sizes the records' scratch by it.
#define WIDE_MERGE_BYTES 680

// range_count's count of a range whose lo is greater than its hi: more pairs than any result holds, so that the
// scanned total sends the host to its check of the ranges, which words the error.
#define RANGE_OUT_OF_ORDER 2147483648

// Counter slots. A counter array is i64 slots, one meaning a slot (a new counter takes a new slot); a kernel that
// takes an int* counter is given its slot's first 4 bytes. Kernels that take the whole array index it by these.

// The FliX index's counters (GpuFlixIndex).
#define SLOT_FREE_TOP 0               // delete_apply: the free stack's top; the nodes it empties are pushed there
#define SLOT_KEYS_DELETED 1           // delete_apply: keys deleted
#define SLOT_KEYS_INSERTED 2          // upsert_apply, upsert_apply_single: keys inserted (not replaced)
#define SLOT_BUCKETS_TOUCHED 3        // upsert_count: work items that take batch keys
#define SLOT_MOST_KEYS_IN_A_BUCKET 4  // upsert_count: most batch keys one work item takes
#define SLOT_MOST_NODES_GAINED 5      // upsert_count: most nodes one bucket gains (how much a chain may grow)
#define SLOT_NODES_IN_USE 6           // chain_stats: nodes linked
#define SLOT_LONGEST_CHAIN 7          // chain_stats, split_chains: nodes of the longest chain
#define SLOT_TOUCHED_ITEMS 8          // compact_touched (int): work items of a batch sliced by touched bucket
#define SLOT_WIDE_MERGES 9            // upsert_apply (int): wide merges recorded
#define SLOT_FIRST_UNSORTED 10        // lookup_get, lookup_ceiling, lookup_floor (int): first broken sort promise
#define SLOT_NODES_NEEDED 11          // upsert (int): nodes the batch needs, the count scan's total copied here
#define INDEX_COUNTER_SLOTS 12

// The batch steps' counters (DeviceSteps, under both structures).
#define STEP_KEY_SPREAD 0             // key_spread: the OR of keys[i] ^ keys[0]
#define STEP_FIRST_RESERVED 1         // key_spread, check_batch, gather_values (int): first reserved value's position
#define STEP_FIRST_UNSORTED 2         // check_batch, flag_last_of_run (int): first position of a broken sort promise
#define STEP_RUNS 3                   // flag_last_of_run, sort_within_digits (int): runs of equal keys
#define STEP_LONG_DIGIT_RUNS 4        // sort_within_digits (int): runs too long to sort within their digit
#define STEP_DEDUPED_PAIRS 5          // compact_flagged: pairs kept
#define STEP_COUNTER_SLOTS 6

// A pipelined lookup's launch arguments (HostArrayDma.lookupWindow in flix_heap_jni.cu): the slots of the long[] that
// carries the handles, the kernel's fixed parameters and the batch's device arrays to the native pipeline.
#define GET_STREAM_IN 0               // copies to the device
#define GET_STREAM_COMPUTE 1          // the index's device work
#define GET_STREAM_OUT 2              // copies to the host
#define GET_EVENT_UPLOADED 3          // recorded after each chunk's upload
#define GET_EVENT_COMPUTED 4          // recorded after each chunk's lookup
#define GET_FUNCTION 5                // lookup_get_any_order, lookup_ceiling_any_order or lookup_floor_any_order
#define GET_BUCKET_MAX 6
#define GET_NUM_BUCKETS 7
#define GET_BUCKET_HEAD 8
#define GET_NODE_KEYS 9
#define GET_NODE_VALUES 10
#define GET_NODE_COUNT 11
#define GET_NODE_NEXT 12
#define GET_NODE_MAX 13
#define GET_QUERIES 14                // the whole batch's queries on the device, query i at byte 8 i
#define GET_VALUES 15                 // the whole batch's answers on the device, likewise
#define GET_FIRST_UNSORTED 16         // an int the kernel lowers where the sort promise breaks; 0: not checked
#define GET_BUCKET_SAMPLES 17
#define GET_NUM_SAMPLES 18
#define GET_STREAM_LOOKUP_ALTERNATE 19  // every other chunk's lookup, so that one chunk's starts while another's ends
#define GET_KEYS 20                   // ceiling and floor: the answers' keys on the device, likewise; 0 for a get
#define GET_SLOTS 21
