package io.flix.flink.architecture.planted.tables.table.changelog;

import io.flix.flink.architecture.planted.tables.table.lookup.Lookups;

/** Planted: a changelog reader that reaches into the lookups. */
public class Reader {
    Lookups lookups;
}
