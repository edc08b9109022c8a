package io.flix.flink.architecture.planted.tables.table.lookup;

/** Planted: the lookups. */
public class Lookups {
}
