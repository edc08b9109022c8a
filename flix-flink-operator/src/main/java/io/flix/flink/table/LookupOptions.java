package io.flix.flink.table;

import java.time.Duration;

/**
 * How a {@code 'flix'} table answers lookups: the lookup options of one table, checked by
 * {@link FlixDynamicTableFactory} (see {@link FlixConnectorOptions} for each option).
 *
 * @param batchSize        lookups a subtask gathers before it sends them ({@code 'lookup.batch-size'})
 * @param linger           the longest a gathered lookup waits for its batch to fill ({@code 'lookup.linger'})
 * @param bootstrapTimeout how long after the table opens on a task manager its changelog must be applied up to its
 *                         end at that time ({@code 'lookup.bootstrap-timeout'})
 */
record LookupOptions(int batchSize, Duration linger, Duration bootstrapTimeout) {
}
