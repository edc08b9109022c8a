package io.flix.flink.architecture.planted.builder.internal;

import io.flix.flink.architecture.planted.builder.Builder;

/** Planted: an internal class that reads the builder (as the shared mode's operators once read its side output). */
public class ReadsTheBuilder {
    Object rejected() {
        return Builder.REJECTED;
    }
}
