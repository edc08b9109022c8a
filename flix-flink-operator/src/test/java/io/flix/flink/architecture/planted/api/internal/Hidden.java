package io.flix.flink.architecture.planted.api.internal;

/** Planted: an internal type. */
public class Hidden {
}
