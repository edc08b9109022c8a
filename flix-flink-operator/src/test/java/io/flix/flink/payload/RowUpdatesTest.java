package io.flix.flink.payload;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.batch.MicroBatchEngine;
import io.flix.index.batch.OperationBatch;

import java.nio.charset.StandardCharsets;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.junit.jupiter.api.Test;

class RowUpdatesTest {

    private static int add(RowStore rows, String text) {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        return rows.add(bytes, 0, bytes.length);
    }

    private static String read(RowStore rows, long row) throws java.io.IOException {
        final DataInputDeserializer in = new DataInputDeserializer();
        rows.readInto((int) row, in);
        final byte[] bytes = new byte[in.available()];
        in.read(bytes, 0, bytes.length);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Test
    void replacedAndDeletedRowsGoBackToTheStoreOnceTheBatchRan() throws Exception {
        final RowStore rows = new RowStore(0);
        final RowUpdates updates = new RowUpdates(rows, 1);
        try (FlixIndex index = FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).build())) {
            final MicroBatchEngine engine = new MicroBatchEngine(index);
            final OperationBatch batch = new OperationBatch();
            updates.upsert(batch, 1, add(rows, "a"));
            updates.upsert(batch, 2, add(rows, "b"));
            updates.upsert(batch, 1, add(rows, "a2")); // replaces a row added in the same batch
            assertEquals(3, updates.size());
            updates.releaseSuperseded(engine.execute(batch));
            assertEquals(0, updates.size());
            assertEquals(2, rows.liveRows(), "row 'a' was superseded within the batch");

            batch.clear();
            updates.delete(batch, 2);
            updates.delete(batch, 3); // absent: nothing to free
            updates.upsert(batch, 1, add(rows, "a3"));
            final int get = batch.get(1);
            final var results = engine.execute(batch);
            updates.releaseSuperseded(results);
            assertEquals(1, rows.liveRows());
            assertEquals("a3", read(rows, results.value(get)), "a get after the upsert in the batch sees it");
            final long[] value = new long[1];
            index.get(new long[] {1}, 1, value);
            assertEquals("a3", read(rows, value[0]));

            batch.clear();
            updates.upsert(batch, 4, add(rows, "d"));
            updates.discard(); // the batch is dropped without running
            assertEquals(0, updates.size());
            assertEquals(2, rows.liveRows(), "discard frees nothing");
        }
    }
}
