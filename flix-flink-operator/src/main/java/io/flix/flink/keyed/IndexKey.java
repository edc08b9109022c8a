package io.flix.flink.keyed;

import org.apache.flink.api.java.functions.KeySelector;

/**
 * The key-by of an enrichment input: the user's key function, except that a record whose key is null (or whose key
 * function throws) is routed by {@link #UNKEYED_ROUTE} instead of failing the job in the partitioner. The operator
 * applies the user's function again ({@link #indexKey}) and sends such a record to the rejected side output
 * ({@code FlixEnrichment.REJECTED}). Checking in the operator rather than in a function before the key-by saves a
 * chained step (and with object reuse off, a copy of every record) on the way in.
 */
public final class IndexKey<T> implements KeySelector<T, Long> {

    private static final long serialVersionUID = 1L;
    /** Where records without a usable key go: any fixed key does. */
    static final Long UNKEYED_ROUTE = 0L;

    private final KeySelector<T, Long> userKey;

    public IndexKey(KeySelector<T, Long> userKey) {
        this.userKey = userKey;
    }

    @Override
    public Long getKey(T value) {
        try {
            final Long key = userKey.getKey(value);
            return key == null ? UNKEYED_ROUTE : key;
        } catch (Exception e) {
            return UNKEYED_ROUTE;
        }
    }

    /** The user's key of a record: null where none, and the user function's exception where it throws. */
    Object indexKey(T value) throws Exception {
        return userKey.getKey(value);
    }
}
