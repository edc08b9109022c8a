package io.flix.flink.table;

import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.FunctionContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

/** Floor and ceiling lookup functions ({@code 'lookup.match'}) on a file changelog, without a cluster. */
class OrderedLookupFunctionTest {

    /** name STRING, id BIGINT (the key): the key not first, so the row's own key is read from its column. */
    private static final ResolvedSchema SCHEMA = new ResolvedSchema(
            List.of(Column.physical("name", DataTypes.STRING()), Column.physical("id", DataTypes.BIGINT().notNull())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    @TempDir
    Path dir;

    private Map<String, String> options(Path file, String match) {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("changelog", "file");
        options.put("file.path", file.toString());
        options.put("index.backend", "cpu");
        options.put("lookup.batch-size", "8");
        options.put("lookup.linger", "1 ms");
        options.put("lookup.match", match);
        return options;
    }

    /**
     * Keys -30, -20, ..., 30, key 0 written twice (the later row wins). The functions of two subtasks of the floor
     * table hold one dimension and answer over all of it; a ceiling function answers likewise. Each answer is the
     * stored row of the floor's or ceiling's key, its key column included.
     */
    @Test
    void floorAndCeilingOverTheWholeSharedDimension() throws Exception {
        final Path file = dir.resolve("keys.jsonl");
        final List<String> lines = new ArrayList<>();
        final TreeMap<Long, String> oracle = new TreeMap<>();
        for (long k = -30; k <= 30; k += 10) {
            lines.add("{\"id\":" + k + ",\"name\":\"k" + k + "\"}");
            oracle.put(k, "k" + k);
        }
        lines.add("{\"id\":0,\"name\":\"zero-v2\"}");
        oracle.put(0L, "zero-v2");
        Files.write(file, lines);

        final FlixAsyncLookupFunction first = TestTables.function(SCHEMA, options(file, "floor"), new int[] {1});
        final FlixAsyncLookupFunction second = TestTables.function(SCHEMA, options(file, "floor"), new int[] {1});
        final FlixAsyncLookupFunction ceiling = TestTables.function(SCHEMA, options(file, "ceiling"), new int[] {1});
        first.open(new FunctionContext(null));
        second.open(new FunctionContext(null));
        ceiling.open(new FunctionContext(null));
        try {
            assertSame(first.dimension(), second.dimension(), "one dimension per task manager");
            final long[] probes = {Long.MIN_VALUE, -31, -30, -29, -1, 0, 1, 15, 29, 30, 31, Long.MAX_VALUE};
            for (int i = 0; i < probes.length; i++) {
                final long probe = probes[i];
                final FlixAsyncLookupFunction floor = i % 2 == 0 ? first : second;
                assertEquals(describe(oracle.floorEntry(probe)),
                        describe(TestTables.answer(floor.asyncLookup(GenericRowData.of(probe)))), "floor " + probe);
                assertEquals(describe(oracle.ceilingEntry(probe)),
                        describe(TestTables.answer(ceiling.asyncLookup(GenericRowData.of(probe)))),
                        "ceiling " + probe);
            }
            assertEquals("none", describe(TestTables.answer(first.asyncLookup(GenericRowData.of((Object) null)))));
        } finally {
            first.close();
            second.close();
            ceiling.close();
        }
    }

    private static String describe(Map.Entry<Long, String> entry) {
        return entry == null ? "none" : entry.getKey() + ":" + entry.getValue();
    }

    private static String describe(Collection<RowData> rows) {
        if (rows.isEmpty()) {
            return "none";
        }
        final RowData row = rows.iterator().next();
        return row.getLong(1) + ":" + row.getString(0);
    }
}
