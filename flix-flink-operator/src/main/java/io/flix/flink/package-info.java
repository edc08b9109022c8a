/**
 * Enrichment of a Flink stream against a large, changing dimension held in a task-manager-local FliX index.
 *
 * <p>Start at {@link io.flix.flink.FlixEnrichment} (the DataStream builder). The operator it adds,
 * {@link io.flix.flink.FlixEnrichmentOperator}, buffers updates and lookups into micro-batches with the results of
 * one-at-a-time processing, keeps payloads serialized in a row store, and checkpoints the dimension as raw keyed
 * state per key group, so it restores at any parallelism. Lookups come out as {@link io.flix.flink.Enriched};
 * unusable records as {@link io.flix.flink.Rejected} on the side output {@link io.flix.flink.FlixEnrichment#REJECTED}.
 */
package io.flix.flink;
