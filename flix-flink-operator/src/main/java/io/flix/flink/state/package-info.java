/**
 * The dimension's checkpoint format, one chunk per key group ({@link io.flix.flink.state.KeyGroupSnapshotCodec}),
 * written and read by the keyed operator, the shared mode's writer and the SQL connector's dimension.
 *
 * <p>Uses the payload stores only; no operator.
 */
package io.flix.flink.state;
