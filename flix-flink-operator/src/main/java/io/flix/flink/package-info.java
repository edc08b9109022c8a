/**
 * Enrichment of a Flink stream against a large, changing dimension held in a task-manager-local FliX index: the
 * DataStream API, and only what a user calls or receives.
 *
 * <p>Start at {@link io.flix.flink.FlixEnrichment} (the builder), configured with {@link io.flix.flink.LookupKind},
 * {@link io.flix.flink.FlushPolicy}, {@link io.flix.flink.IndexSettings} and a {@link io.flix.flink.PayloadFunction}.
 * Lookups come out as {@link io.flix.flink.Enriched} (ordered kinds with their {@link io.flix.flink.Match}es);
 * unusable records as {@link io.flix.flink.Rejected} on the side output {@link io.flix.flink.FlixEnrichment#REJECTED}.
 *
 * <p>The operators the builder adds live apart: the keyed mode's in {@code io.flix.flink.keyed}, the shared mode's in
 * {@code io.flix.flink.shared}. Only the builder reaches them; the other types here depend on no internal package,
 * and the internals never on the builder (checked by {@code OperatorLayersTest}).
 */
package io.flix.flink;
