package io.flix.flink.table.lookup;

import io.flix.flink.LookupKind;

import java.io.Serializable;
import java.time.Duration;

/**
 * How a {@code 'flix'} table answers lookups: the lookup options of one table, checked by the connector's table
 * factory (its options document each one).
 *
 * @param batchSize        lookups a subtask gathers before it sends them ({@code 'lookup.batch-size'})
 * @param linger           the longest a gathered lookup waits for its batch to fill ({@code 'lookup.linger'})
 * @param bootstrapTimeout how long after the table opens on a task manager its changelog must be applied up to its
 *                         end at that time ({@code 'lookup.bootstrap-timeout'})
 * @param match            which row a lookup answers with: of its key ({@link LookupKind#EXACT}), of the largest key
 *                         {@code <=} it ({@link LookupKind#FLOOR}) or of the smallest key {@code >=} it
 *                         ({@link LookupKind#CEILING}) ({@code 'lookup.match'})
 * @param followLoad       whether a subtask sends a batch at once when none of its batches is in flight
 *                         ({@code 'lookup.batch-policy' = 'load'}, see {@link ProbeBatcher}); false: on size or
 *                         linger only ({@code 'linger'})
 */
public record LookupOptions(int batchSize, Duration linger, Duration bootstrapTimeout, LookupKind match, boolean followLoad)
        implements Serializable {

    public LookupOptions(int batchSize, Duration linger, Duration bootstrapTimeout, LookupKind match) {
        this(batchSize, linger, bootstrapTimeout, match, true);
    }

    public LookupOptions {
        if (match == LookupKind.RANGE) {
            throw new IllegalArgumentException("a lookup join answers one row per lookup: exact, floor or ceiling, "
                    + "not " + match);
        }
    }
}
