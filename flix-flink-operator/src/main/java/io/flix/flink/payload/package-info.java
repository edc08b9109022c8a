/**
 * Where the dimension's payloads live, serialized, beside the index: {@link io.flix.flink.payload.PayloadStore} with
 * its two encodings, inline in the index's values ({@link io.flix.flink.payload.InlinePayloads}) or in a row store
 * ({@link io.flix.flink.payload.RowStorePayloads} over {@link io.flix.flink.payload.RowStore}).
 *
 * <p>A building block of every mode: it uses Flink's serializers and the index library, no operator.
 */
package io.flix.flink.payload;
