package io.flix.flink.table;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.data.RowData;

/**
 * How a {@code 'flix'} table's changelog records decode: the formats Flink's factories discovered for
 * {@code 'key.format'} and {@code 'value.format'}, and which columns the value holds.
 *
 * @param keyFormat   kafka: decodes a record key into a row of the key column; null for a file
 * @param valueFormat decodes a record value (kafka) or a file line (file)
 * @param valueFields positions in the table's physical row of the value row's fields, in order
 *                    ({@code 'value.fields-include'})
 */
record ChangelogFormats(DecodingFormat<DeserializationSchema<RowData>> keyFormat,
                        DecodingFormat<DeserializationSchema<RowData>> valueFormat, int[] valueFields) {
}
