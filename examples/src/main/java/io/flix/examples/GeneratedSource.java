package io.flix.examples;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.connector.datagen.source.GeneratingIteratorSourceReader;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.operators.OutputTypeConfigurable;
import org.apache.flink.util.function.SerializableSupplier;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A bounded source of {@code count} generated records (record i from {@code generator(i)}), optionally held back
 * until a gate opens: the examples' and the benchmark's event source.
 *
 * <p>Why not Flink's {@code DataGeneratorSource}: it wraps every reader in a rate limiter, even without a rate, and
 * that wrapper ends each record's poll with "nothing available", so that the task suspends and resumes its input
 * once per record. That costs far more than an enrichment's lookup, and would make a benchmark measure its source.
 * Here the gate is asked only until it opens; from then on the reader emits records as any source does, and its
 * task stays free to take checkpoints while it waits.
 */
public final class GeneratedSource<T>
        implements Source<T, NumberSequenceSplit, Collection<NumberSequenceSplit>>, ResultTypeQueryable<T>,
        OutputTypeConfigurable<T> {

    private static final SerializableSupplier<CompletableFuture<Void>> OPEN =
            () -> CompletableFuture.completedFuture(null);

    private final NumberSequenceSource numbers;
    private final GeneratorFunction<Long, T> generator;
    private TypeInformation<T> type;
    private final SerializableSupplier<CompletableFuture<Void>> gate;

    private GeneratedSource(GeneratorFunction<Long, T> generator, long count, TypeInformation<T> type,
                            SerializableSupplier<CompletableFuture<Void>> gate) {
        if (count < 1) {
            throw new IllegalArgumentException("a generated source needs 1 or more records, not " + count);
        }
        this.numbers = new NumberSequenceSource(0, count - 1);
        this.generator = generator;
        this.type = type;
        this.gate = gate;
    }

    /** {@code count} records, record i from {@code generator(i)}, from the start. */
    public static <T> GeneratedSource<T> of(GeneratorFunction<Long, T> generator, long count, TypeInformation<T> type) {
        return new GeneratedSource<>(generator, count, type, OPEN);
    }

    /**
     * The same records, none before the future that {@code gate} returns is done (asked again at each poll until
     * it is: a gate may be replaced between jobs).
     */
    public GeneratedSource<T> heldBackUntil(SerializableSupplier<CompletableFuture<Void>> gate) {
        return new GeneratedSource<>(generator, numbers.getTo() + 1, type, gate);
    }

    @Override
    public TypeInformation<T> getProducedType() {
        return type;
    }

    /** Passes the type Flink settles on to a generator that serializes its records (e.g. from elements). */
    @Override
    @SuppressWarnings("unchecked")
    public void setOutputType(TypeInformation<T> outputType, ExecutionConfig config) {
        this.type = outputType;
        if (generator instanceof OutputTypeConfigurable) {
            ((OutputTypeConfigurable<T>) generator).setOutputType(outputType, config);
        }
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.BOUNDED;
    }

    @Override
    public SourceReader<T, NumberSequenceSplit> createReader(SourceReaderContext context) {
        return new GatedReader<>(new GeneratingIteratorSourceReader<>(context, generator), gate);
    }

    @Override
    public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> createEnumerator(
            SplitEnumeratorContext<NumberSequenceSplit> context) {
        return numbers.createEnumerator(context);
    }

    @Override
    public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> restoreEnumerator(
            SplitEnumeratorContext<NumberSequenceSplit> context, Collection<NumberSequenceSplit> checkpoint) {
        return numbers.restoreEnumerator(context, checkpoint);
    }

    @Override
    public SimpleVersionedSerializer<NumberSequenceSplit> getSplitSerializer() {
        return numbers.getSplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<Collection<NumberSequenceSplit>> getEnumeratorCheckpointSerializer() {
        return numbers.getEnumeratorCheckpointSerializer();
    }

    /** Polls nothing until the gate opens, then hands every poll to the generating reader; a failed gate fails it. */
    static final class GatedReader<T> implements SourceReader<T, NumberSequenceSplit> {
        private final SourceReader<T, NumberSequenceSplit> records;
        private final SerializableSupplier<CompletableFuture<Void>> gate;
        private boolean open;

        GatedReader(SourceReader<T, NumberSequenceSplit> records,
                    SerializableSupplier<CompletableFuture<Void>> gate) {
            this.records = records;
            this.gate = gate;
        }

        @Override
        public void start() {
            records.start();
        }

        @Override
        public InputStatus pollNext(ReaderOutput<T> output) throws Exception {
            if (!open) {
                final CompletableFuture<Void> opened = gate.get();
                if (!opened.isDone()) {
                    return InputStatus.NOTHING_AVAILABLE;
                }
                opened.join(); // a gate that failed fails the source, with its cause
                open = true;
            }
            return records.pollNext(output);
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            if (!open) {
                final CompletableFuture<Void> opened = gate.get();
                if (!opened.isDone()) {
                    return opened.handle((ignored, failure) -> null);
                }
            }
            return records.isAvailable();
        }

        @Override
        public void addSplits(List<NumberSequenceSplit> splits) {
            records.addSplits(splits);
        }

        @Override
        public void notifyNoMoreSplits() {
            records.notifyNoMoreSplits();
        }

        @Override
        public List<NumberSequenceSplit> snapshotState(long checkpointId) {
            return records.snapshotState(checkpointId);
        }

        @Override
        public void close() throws Exception {
            records.close();
        }
    }
}
