package io.flix.flink.architecture.planted.cycle.b;

import io.flix.flink.architecture.planted.cycle.a.First;

/** Planted: b → a, closing the cycle. */
public class Second {
    First first;
}
