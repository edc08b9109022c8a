package io.flix.flink.architecture.planted.builder;

/** Planted: a builder with a side output its internals should be handed rather than read. */
public final class Builder {
    // not a compile-time constant, which javac would copy into the reader and leave no dependency to report
    public static final Object REJECTED = new Object();
}
