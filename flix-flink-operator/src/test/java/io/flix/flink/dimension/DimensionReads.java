package io.flix.flink.dimension;

import io.flix.flink.payload.PayloadStore;
import io.flix.index.FlixIndex;

import java.util.ArrayList;
import java.util.List;

/** Reads of a dimension in tests. */
final class DimensionReads {

    private DimensionReads() {
    }

    /** The payloads of the keys, null where absent, read under the shared lock. */
    static <P> List<P> payloads(LocalDimension<P> dimension, long... keys) throws Exception {
        return dimension.read((lookups, store) -> {
            final long[] values = new long[keys.length];
            lookups.get(keys, keys.length, values);
            final PayloadStore.Reader<P> reader = store.reader();
            final List<P> payloads = new ArrayList<>(keys.length);
            for (int i = 0; i < keys.length; i++) {
                payloads.add(values[i] == FlixIndex.NOT_FOUND ? null : reader.payload(values[i], keys[i]));
            }
            return payloads;
        });
    }
}
