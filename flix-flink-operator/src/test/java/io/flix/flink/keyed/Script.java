package io.flix.flink.keyed;

import io.flix.flink.Lookup;
import io.flix.flink.Update;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A random but seeded sequence of test inputs (updates with deletes and re-upserts, lookups, watermarks, and
 * processing-time advances that fire flush timers), replayed identically on any number of harnesses.
 */
final class Script {

    sealed interface Step permits UpdateStep, LookupStep, WatermarkStep, TimeStep {
    }

    record UpdateStep(Update update, Long timestamp) implements Step {
    }

    record LookupStep(Lookup lookup, Long timestamp) implements Step {
    }

    record WatermarkStep(long watermark) implements Step {
    }

    record TimeStep(long processingTime) implements Step {
    }

    final List<Step> steps = new ArrayList<>();
    /** The keys the script draws from. */
    final long[] keys;

    private Script(long[] keys) {
        this.keys = keys;
    }

    /**
     * @param keyCount distinct keys (few keys: many deletes and re-upserts of the same key)
     * @param records  updates and lookups
     */
    static Script random(long seed, int keyCount, int records) {
        final SplittableRandom random = new SplittableRandom(seed);
        final long[] keys = new long[keyCount];
        for (int i = 0; i < keyCount; i++) {
            keys[i] = switch (i) {
                case 0 -> Long.MIN_VALUE;
                case 1 -> Long.MAX_VALUE;
                case 2 -> 0L;
                default -> random.nextInt(4) == 0 ? random.nextLong() : random.nextLong(-10 * keyCount, 10 * keyCount);
            };
        }
        final Script script = new Script(keys);
        long lookupId = 0;
        long eventTime = 0;
        long watermark = Long.MIN_VALUE;
        long processingTime = 0;
        for (int r = 0; r < records; r++) {
            eventTime += random.nextInt(5);
            final Long timestamp = random.nextInt(10) == 0 ? null : eventTime;
            final int roll = random.nextInt(100);
            if (roll < 30) {
                script.steps.add(new UpdateStep(Update.upsert(pick(random, keys), "p" + r), timestamp));
            } else if (roll < 42) {
                script.steps.add(new UpdateStep(Update.delete(pick(random, keys)), timestamp));
            } else {
                // keys off the stored set too, so floor/ceiling/range land between and beyond stored keys
                final long key = random.nextInt(3) == 0 ? random.nextLong(-12 * keyCount, 12 * keyCount)
                        : pick(random, keys);
                final long span = random.nextInt(4) == 0 ? Long.MAX_VALUE : random.nextLong(0, 20L * keyCount);
                final long hi = key > Long.MAX_VALUE - span ? Long.MAX_VALUE : key + span;
                script.steps.add(new LookupStep(new Lookup(lookupId++, key, hi), timestamp));
            }
            final int extra = random.nextInt(100);
            if (extra < 2 && eventTime - 3 > watermark) {
                watermark = eventTime - 3;
                script.steps.add(new WatermarkStep(watermark));
            } else if (extra < 5) {
                processingTime += random.nextInt(1, 30);
                script.steps.add(new TimeStep(processingTime));
            }
        }
        return script;
    }

    private static long pick(SplittableRandom random, long[] keys) {
        return keys[random.nextInt(keys.length)];
    }

    /** Plays every step on the harness. */
    <OUT> void play(KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, OUT> harness) throws Exception {
        play(harness, 0, steps.size());
    }

    <OUT> void play(KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, OUT> harness, int from, int to)
            throws Exception {
        play(harness, from, to, step -> { });
    }

    /** Before each step, what a test does beside the inputs (an operator's worker, the task's mails). */
    interface BeforeStep {
        void before(Step next) throws Exception;
    }

    <OUT> void play(KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, OUT> harness, int from, int to,
                    BeforeStep beforeStep) throws Exception {
        for (Step step : steps.subList(from, to)) {
            beforeStep.before(step);
            if (step instanceof UpdateStep u) {
                harness.processElement1(u.timestamp() == null
                        ? new StreamRecord<>(u.update()) : new StreamRecord<>(u.update(), u.timestamp()));
            } else if (step instanceof LookupStep l) {
                harness.processElement2(l.timestamp() == null
                        ? new StreamRecord<>(l.lookup()) : new StreamRecord<>(l.lookup(), l.timestamp()));
            } else if (step instanceof WatermarkStep w) {
                harness.processBothWatermarks(new Watermark(w.watermark()));
            } else if (step instanceof TimeStep t) {
                harness.setProcessingTime(t.processingTime());
            }
        }
    }
}
