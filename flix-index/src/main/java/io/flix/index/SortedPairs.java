package io.flix.index;

/** Key-value pairs in strictly ascending key order: what an index exports and can be built from. */
public record SortedPairs(long[] keys, long[] values, int size) {
}
