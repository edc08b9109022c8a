package io.flix.flink.architecture.planted.tables.table.snapshot;

import io.flix.flink.architecture.planted.tables.table.dimension.Dimension;

/** Planted: a snapshot writer that holds the dimension itself rather than an interface of its own. */
public class Writer {
    Dimension dimension;
}
