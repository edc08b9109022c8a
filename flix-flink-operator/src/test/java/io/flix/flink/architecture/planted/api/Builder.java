package io.flix.flink.architecture.planted.api;

import io.flix.flink.architecture.planted.api.internal.Hidden;

import java.util.List;

/** Planted: a builder whose public method names an internal type, inside a type argument. */
public final class Builder {
    public List<Hidden> operators() {
        return List.of(new Hidden());
    }
}
