package io.flix.flink.keyed;

import org.apache.flink.runtime.checkpoint.channel.InputChannelInfo;
import org.apache.flink.runtime.event.TaskEvent;
import org.apache.flink.runtime.io.network.partition.consumer.BufferOrEvent;
import org.apache.flink.runtime.io.network.partition.consumer.InputChannel;
import org.apache.flink.runtime.io.network.partition.consumer.InputGate;
import org.junit.jupiter.api.Test;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The keyed hold-back's question "is more input queued?": a finished gate (a bounded update stream that ended) stays
 * available for ever with nothing queued, and must not hold a batch back.
 */
class InputQueuedTest {

    @Test
    void aFinishedGateIsNotInputQueuedThoughItStaysAvailable() {
        // as Flink's gates do once their channels ended: finished and available
        assertFalse(FlixEnrichmentOperator.anyAvailable(new InputGate[] {new Gate(true, true)}));
    }

    @Test
    void anUnfinishedGateCountsOnlyWhileAvailable() {
        assertTrue(FlixEnrichmentOperator.anyAvailable(new InputGate[] {new Gate(false, true)}));
        assertFalse(FlixEnrichmentOperator.anyAvailable(new InputGate[] {new Gate(false, false)}));
    }

    @Test
    void oneGateWithInputQueuedIsEnoughBesideAFinishedOne() {
        assertTrue(FlixEnrichmentOperator.anyAvailable(new InputGate[] {new Gate(true, true), new Gate(false, true)}));
        assertFalse(FlixEnrichmentOperator.anyAvailable(
                new InputGate[] {new Gate(true, true), new Gate(false, false)}));
        assertFalse(FlixEnrichmentOperator.anyAvailable(new InputGate[0]));
    }

    /** A gate that only says whether it finished and whether it is available. */
    private static final class Gate extends InputGate {
        private final boolean finished;

        Gate(boolean finished, boolean available) {
            this.finished = finished;
            if (available) {
                availabilityHelper.resetAvailable();
            } else {
                availabilityHelper.resetUnavailable();
            }
        }

        @Override
        public boolean isFinished() {
            return finished;
        }

        @Override
        public EndOfDataStatus hasReceivedEndOfData() {
            return finished ? EndOfDataStatus.DRAINED : EndOfDataStatus.NOT_END_OF_DATA;
        }

        @Override
        public int getNumberOfInputChannels() {
            return 1;
        }

        @Override
        public Optional<BufferOrEvent> getNext() {
            throw new UnsupportedOperationException();
        }

        @Override
        public Optional<BufferOrEvent> pollNext() {
            throw new UnsupportedOperationException();
        }

        @Override
        public void sendTaskEvent(TaskEvent event) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void resumeGateConsumption() {
            throw new UnsupportedOperationException();
        }

        @Override
        public void resumeConsumption(InputChannelInfo channelInfo) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void acknowledgeAllRecordsProcessed(InputChannelInfo channelInfo) {
            throw new UnsupportedOperationException();
        }

        @Override
        public InputChannel getChannel(int channelIndex) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void setup() {
        }

        @Override
        public void requestPartitions() {
        }

        @Override
        public CompletableFuture<Void> getStateConsumedFuture() {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void finishReadRecoveredState() {
        }

        @Override
        public void close() {
        }
    }
}
