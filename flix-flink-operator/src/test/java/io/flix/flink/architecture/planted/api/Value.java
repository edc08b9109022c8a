package io.flix.flink.architecture.planted.api;

import io.flix.flink.architecture.planted.api.internal.Hidden;

/** Planted: an API value that reaches an internal type (privately: its signatures stay clean). */
public final class Value {
    private final Object held = new Hidden();

    @Override
    public String toString() {
        return String.valueOf(held);
    }
}
