package io.flix.flink.architecture.planted.cycle.a;

import io.flix.flink.architecture.planted.cycle.b.Second;

/** Planted: a → b. */
public class First {
    Second second;
}
