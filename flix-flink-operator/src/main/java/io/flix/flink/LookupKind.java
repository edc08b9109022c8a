package io.flix.flink;

/**
 * What a lookup asks of the dimension. The ordered kinds ({@link #FLOOR}, {@link #CEILING}, {@link #RANGE}) answer
 * within the keys of the operator's own subtask: the stream is keyed by the index key, so each subtask holds only
 * the keys of its key groups, and a floor, ceiling or range sees those keys, not the whole dimension. At
 * parallelism 1 (or with one key group per answer you need) they are global.
 *
 * <p>An enriched record is written with its kind's ordinal ({@link EnrichedSerializer}, as Flink's enum serializer
 * writes it): a new kind goes after the last.
 */
public enum LookupKind {
    /** The payload stored under the lookup's key, or none. */
    EXACT,
    /** The stored key {@code <=} the lookup's key that is largest, with its payload, or none. */
    FLOOR,
    /** The stored key {@code >=} the lookup's key that is smallest, with its payload, or none. */
    CEILING,
    /** The stored keys in {@code [lookup key, range end]}, in key order, up to a limit. */
    RANGE
}
