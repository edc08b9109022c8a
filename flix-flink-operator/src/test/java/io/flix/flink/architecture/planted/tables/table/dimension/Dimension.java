package io.flix.flink.architecture.planted.tables.table.dimension;

/** Planted: the table's dimension. */
public class Dimension {
}
