/**
 * A {@code 'flix'} table's definition as values that travel with its lookup functions:
 * {@link io.flix.flink.table.spec.DimensionSpec} (what a task manager needs to hold the table) and its
 * {@link io.flix.flink.table.spec.SnapshotSettings}.
 *
 * <p>The bottom of the connector: uses the API's {@code IndexSettings} and Flink's types, nothing else of the
 * connector.
 */
package io.flix.flink.table.spec;
