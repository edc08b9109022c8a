// The contract between the kernels and their Java host (package io.flix.index.gpu): the constants that both sides
// use, held here once. Java holds each #define below in io.flix.index.gpu.KernelContract under the same name, and
// KernelContractTest, a unit test of the build, fails where the two differ (it also checks every kernel's
// parameters against its typed launch in FlixKernels or SortedArrayKernels). Every .cu file of kernels includes it.
#pragma once

#include <cstdint>

// Keys and values are signed 64-bit.
typedef long long i64;

// Keys per node: a warp's lanes hold one node.
#define NODE_SIZE 32
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
