package io.flix.flink;

/**
 * When an operator's micro-batch of lookups goes to the index.
 *
 * <ul>
 *   <li>{@link #LOAD} (the default): batches follow the load. A lookup that arrives while no index call of the
 *   subtask is in flight is sent at once, in a batch of its own; the lookups that arrive while a call runs gather
 *   and are sent together when it completes. At low load a lookup never waits for a timer; under load the batches
 *   grow to what arrives during one call, at most {@code batchSize} (a full batch waits for the call in flight:
 *   backpressure). The index call runs on a worker thread of the subtask, one call in flight at a time; the results
 *   come out on the task's thread in arrival order.</li>
 *   <li>{@link #TIMER}: the earlier policy. A batch is answered on the task's thread when it holds
 *   {@code batchSize} lookups or when its first lookup has waited the flush interval.</li>
 * </ul>
 *
 * Under both, a watermark, a checkpoint barrier and the end of input first answer and emit every buffered lookup.
 *
 * <p>Who follows it: both modes of {@code FlixEnrichment}: the keyed
 * {@link io.flix.flink.keyed.FlixEnrichmentOperator}, whose batches hold updates and lookups, and the shared mode's
 * lookups ({@code SharedLookupOperator}). The SQL
 * connector has the same choice as {@code 'lookup.batch-policy'} ({@code 'load'} by default, or {@code 'linger'}).
 * The shared mode's updates go to the task manager's applier: under LOAD it applies what is held as soon as it is
 * idle, and what gathered during an apply in one batch of at most {@code updateBatchMax}; under TIMER on size and on
 * the flush interval.
 */
public enum FlushPolicy {
    /** Batches form while the previous index call runs; see the class comment. */
    LOAD,
    /** Batches are answered on size or on the processing-time flush interval; see the class comment. */
    TIMER
}
