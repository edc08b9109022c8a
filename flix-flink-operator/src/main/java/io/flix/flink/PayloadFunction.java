package io.flix.flink;

import java.io.Serializable;

/** Takes the payload to store out of an update; {@code null} means: delete the update's key. */
@FunctionalInterface
public interface PayloadFunction<U, P> extends Serializable {
    P payloadOf(U update) throws Exception;
}
