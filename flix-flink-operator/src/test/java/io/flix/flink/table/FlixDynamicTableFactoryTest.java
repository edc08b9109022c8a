package io.flix.flink.table;

import io.flix.flink.LookupKind;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.index.Backend;
import io.flix.index.GpuMemoryBudget;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.abilities.SupportsFilterPushDown;
import org.apache.flink.table.connector.source.lookup.AsyncLookupFunctionProvider;
import org.apache.flink.table.expressions.CallExpression;
import org.apache.flink.table.expressions.FieldReferenceExpression;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.expressions.ValueLiteralExpression;
import org.apache.flink.table.factories.utils.FactoryMocks;
import org.apache.flink.table.functions.BuiltInFunctionDefinitions;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FlixDynamicTableFactoryTest {

    /** name STRING, id BIGINT (the key), price DOUBLE: the key in the middle. */
    private static final ResolvedSchema SCHEMA = new ResolvedSchema(
            List.of(Column.physical("name", DataTypes.STRING()),
                    Column.physical("id", DataTypes.BIGINT().notNull()),
                    Column.physical("price", DataTypes.DOUBLE())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    private static Map<String, String> kafkaOptions() {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("topic", "products");
        options.put("properties.bootstrap.servers", "broker:9092");
        options.put("properties.security.protocol", "PLAINTEXT");
        return options;
    }

    private static Map<String, String> fileOptions() {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("changelog", "file");
        options.put("file.path", "/tmp/products.jsonl");
        return options;
    }

    private static FlixLookupTableSource create(ResolvedSchema schema, Map<String, String> options) {
        final DynamicTableSource source = FactoryMocks.createTableSource(schema, options);
        return assertInstanceOf(FlixLookupTableSource.class, source);
    }

    private static Map<String, String> with(Map<String, String> options, Consumer<Map<String, String>> change) {
        change.accept(options);
        return options;
    }

    /** The whole cause chain's messages: the planner wraps the factory's exception. */
    private static String failure(ResolvedSchema schema, Map<String, String> options) {
        final Throwable thrown = assertThrows(Throwable.class, () -> FactoryMocks.createTableSource(schema, options));
        final StringBuilder messages = new StringBuilder();
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append('\n');
        }
        return messages.toString();
    }

    @Test
    void kafkaTableWithDefaults() {
        final FlixLookupTableSource source = create(SCHEMA, kafkaOptions());
        assertEquals("kafka", source.changelog().changelog());
        assertEquals(1, source.keyIndex());
        assertArrayEquals(new int[] {0, 1, 2}, source.formats().valueFields(), "ALL: the value holds every column");
        assertEquals(Map.of("bootstrap.servers", "broker:9092", "security.protocol", "PLAINTEXT"),
                source.changelog().consumerProperties());
        assertEquals(0, source.changelog().decodeThreads(), "not set: one a core of the task manager");
        assertEquals(3, create(SCHEMA, with(kafkaOptions(), o -> o.put("changelog.decode-threads", "3")))
                .changelog().decodeThreads());
        assertEquals(1024, source.lookup().batchSize());
        assertEquals(Duration.ofMillis(2), source.lookup().linger());
        assertEquals(Backend.AUTO, source.indexSettings().backend());
        assertEquals(32, source.indexSettings().nodeSize());
        assertEquals(GpuMemoryBudget.NONE, source.indexSettings().gpuMemoryBudget());
        assertTrue(source.indexSettings().exactKeyTable());
        assertEquals(LookupKind.EXACT, source.lookup().match());
    }

    @Test
    void kafkaTableWithOptionsSet() {
        final FlixLookupTableSource source = create(SCHEMA, with(kafkaOptions(), o -> {
            o.put("value.fields-include", "EXCEPT_KEY");
            o.put("key.format", "json");
            o.put("key.json.ignore-parse-errors", "true");
            o.put("value.format", "json");
            o.put("value.json.fail-on-missing-field", "false");
            o.put("lookup.batch-size", "64");
            o.put("lookup.linger", "5 ms");
            o.put("index.backend", "cpu");
            o.put("index.node-size", "64");
            o.put("index.threads", "2");
            o.put("index.devices", "1");
            o.put("index.gpu-memory-budget", "80%");
            o.put("index.exact-key-table", "false");
        }));
        assertArrayEquals(new int[] {0, 2}, source.formats().valueFields(),
                "EXCEPT_KEY: the value holds the other columns");
        assertEquals(64, source.lookup().batchSize());
        assertEquals(Duration.ofMillis(5), source.lookup().linger());
        assertEquals(Backend.CPU, source.indexSettings().backend());
        assertEquals(64, source.indexSettings().nodeSize());
        assertEquals(2, source.indexSettings().threads());
        assertEquals(1, source.indexSettings().devices());
        assertEquals(0, create(SCHEMA, kafkaOptions()).indexSettings().devices(), "every device seen by default");
        assertEquals(GpuMemoryBudget.ofFraction(0.8), source.indexSettings().gpuMemoryBudget());
        assertFalse(source.indexSettings().exactKeyTable());
        assertFalse(source.indexSettings().configFor(0, 1).exactKeyTable(), "it reaches the index's config");
        assertEquals(GpuMemoryBudget.ofBytes(40L << 30), create(SCHEMA, with(kafkaOptions(),
                o -> o.put("index.gpu-memory-budget", "40gb"))).indexSettings().gpuMemoryBudget());
        assertEquals(LookupKind.FLOOR, create(SCHEMA, with(kafkaOptions(), o -> o.put("lookup.match", "floor")))
                .lookup().match());
        assertEquals(LookupKind.CEILING, create(SCHEMA, with(kafkaOptions(), o -> o.put("lookup.match", " Ceiling")))
                .lookup().match());
    }

    /**
     * With a floor or ceiling match, a join equating another column besides the key is refused, naming both: the
     * other equality would be held against the row of another key.
     */
    @Test
    void anOrderedMatchRefusesACompositeLookupKey() {
        for (String match : List.of("floor", "ceiling")) {
            final FlixLookupTableSource source =
                    create(SCHEMA, with(kafkaOptions(), o -> o.put("lookup.match", match)));
            source.getLookupRuntimeProvider(new TestLookupContext(new int[] {1}));
            final TableException e = assertThrows(TableException.class,
                    () -> source.getLookupRuntimeProvider(new TestLookupContext(new int[] {0}, new int[] {1})));
            assertTrue(e.getMessage().contains("'lookup.match' = '" + match + "' must equate its primary key column "
                    + "'id' only") && e.getMessage().contains("['name']"), e.getMessage());
        }
    }

    /**
     * Filters Flink pushes to the table: none is accepted (Flink evaluates each on the returned rows); with a floor
     * or ceiling match one naming the key column is refused, naming it, and others are left to Flink.
     */
    @Test
    void anOrderedMatchRefusesConditionsOnTheKeyColumn() {
        final ResolvedExpression onKey = CallExpression.permanent(BuiltInFunctionDefinitions.GREATER_THAN,
                List.of(new FieldReferenceExpression("id", DataTypes.BIGINT(), 0, 1),
                        new ValueLiteralExpression(120L)), DataTypes.BOOLEAN());
        final ResolvedExpression onOther = CallExpression.permanent(BuiltInFunctionDefinitions.IS_NOT_NULL,
                List.of(new FieldReferenceExpression("name", DataTypes.STRING(), 0, 0)), DataTypes.BOOLEAN());

        final SupportsFilterPushDown.Result exact =
                create(SCHEMA, kafkaOptions()).applyFilters(List.of(onKey, onOther));
        assertEquals(List.of(), exact.getAcceptedFilters());
        assertEquals(List.of(onKey, onOther), exact.getRemainingFilters());

        final FlixLookupTableSource floor = create(SCHEMA, with(kafkaOptions(), o -> o.put("lookup.match", "floor")));
        assertEquals(List.of(onOther), floor.applyFilters(List.of(onOther)).getRemainingFilters());
        final TableException e = assertThrows(TableException.class, () -> floor.applyFilters(List.of(onOther, onKey)));
        assertTrue(e.getMessage().contains("'lookup.match' = 'floor' cannot honour the condition "
                + onKey.asSummaryString() + " on its primary key column 'id'"), e.getMessage());
    }

    @Test
    void fileTable() {
        final FlixLookupTableSource source = create(SCHEMA, fileOptions());
        assertEquals("file", source.changelog().changelog());
        assertArrayEquals(new int[] {0, 1, 2}, source.formats().valueFields());
    }

    @Test
    void equalTablesShareAnIdentityAndOthersDoNot() {
        final String a = create(SCHEMA, kafkaOptions()).identity();
        assertEquals(a, create(SCHEMA, kafkaOptions()).identity());
        assertNotEquals(a, create(SCHEMA, with(kafkaOptions(), o -> o.put("topic", "other"))).identity());
        final ResolvedSchema fewer = new ResolvedSchema(
                List.of(Column.physical("name", DataTypes.STRING()), Column.physical("id", DataTypes.BIGINT().notNull())),
                List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());
        assertNotEquals(a, create(fewer, kafkaOptions()).identity());
    }

    @Test
    void lookupFunctionOnThePrimaryKey() {
        final FlixLookupTableSource source = create(SCHEMA, kafkaOptions());
        final Object provider = source.getLookupRuntimeProvider(new TestLookupContext(new int[] {1}));
        final AsyncLookupFunctionProvider async = assertInstanceOf(AsyncLookupFunctionProvider.class, provider);
        assertInstanceOf(FlixAsyncLookupFunction.class, async.createAsyncLookupFunction());
        // the key with another column, in either order
        source.getLookupRuntimeProvider(new TestLookupContext(new int[] {0}, new int[] {1}));
    }

    @Test
    void lookupWithoutThePrimaryKeyIsRejected() {
        final FlixLookupTableSource source = create(SCHEMA, kafkaOptions());
        final TableException e = assertThrows(TableException.class,
                () -> source.getLookupRuntimeProvider(new TestLookupContext(new int[] {0})));
        assertTrue(e.getMessage().contains("'id'"), e.getMessage());
    }

    /** A join equating a column the connector has no SQL equality for (ARRAY here) is refused by name. */
    @Test
    void furtherLookupKeysWithoutAnEqualityAreRejectedByName() {
        final ResolvedSchema withArray = new ResolvedSchema(
                List.of(Column.physical("id", DataTypes.BIGINT().notNull()),
                        Column.physical("tags", DataTypes.ARRAY(DataTypes.STRING())),
                        Column.physical("code", DataTypes.BYTES())),
                List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());
        final FlixLookupTableSource source = create(withArray, kafkaOptions());
        final TableException e = assertThrows(TableException.class,
                () -> source.getLookupRuntimeProvider(new TestLookupContext(new int[] {0}, new int[] {1})));
        assertTrue(e.getMessage().contains("'tags'") && e.getMessage().contains("ARRAY<STRING>"), e.getMessage());
        // BYTES has one
        source.getLookupRuntimeProvider(new TestLookupContext(new int[] {2}, new int[] {0}));
    }

    @Test
    void requiredOptionsPerChangelogAreNamed() {
        assertTrue(failure(SCHEMA, with(kafkaOptions(), o -> o.remove("topic")))
                .contains("Option 'topic' is required when 'changelog' = 'kafka'"));
        assertTrue(failure(SCHEMA, with(kafkaOptions(), o -> o.remove("properties.bootstrap.servers")))
                .contains("Option 'properties.bootstrap.servers' is required"));
        assertTrue(failure(SCHEMA, with(fileOptions(), o -> o.remove("file.path")))
                .contains("Option 'file.path' is required when 'changelog' = 'file'"));
    }

    @Test
    void badValuesNameTheirOption() {
        final Map<String, String> cases = new HashMap<>();
        cases.put("changelog", "jdbc");
        cases.put("lookup.batch-size", "0");
        cases.put("changelog.batch-size", "-1");
        cases.put("changelog.decode-threads", "-1");
        cases.put("lookup.linger", "-1 ms");
        cases.put("lookup.bootstrap-timeout", "0 s");
        cases.put("index.backend", "tpu");
        cases.put("index.node-size", "100");
        cases.put("index.initial-fill", "1.5");
        cases.put("index.threads", "-2");
        cases.put("index.devices", "-1");
        cases.put("index.gpu-memory-budget", "lots");
        cases.put("value.fields-include", "SOME");
        cases.put("lookup.match", "nearest");
        cases.forEach((option, value) -> {
            final String message = failure(SCHEMA, with(kafkaOptions(), o -> o.put(option, value)));
            assertTrue(message.contains("'" + option + "'"), option + " -> " + message);
        });
    }

    @Test
    void aBadGpuMemoryBudgetNamesTheOptionTheValueAndTheForms() {
        for (String bad : List.of("lots", "0%", "120%", "-4gb", "4 zb")) {
            final String message = failure(SCHEMA, with(kafkaOptions(), o -> o.put("index.gpu-memory-budget", bad)));
            assertTrue(message.contains("'index.gpu-memory-budget'") && message.contains("'" + bad + "'"),
                    bad + " -> " + message);
        }
        assertTrue(failure(SCHEMA, with(kafkaOptions(), o -> o.put("index.gpu-memory-budget", "lots")))
                .contains("'80%'"), "the forms allowed are named");
    }

    @Test
    void unknownOptionsAndFormatsAreNamed() {
        assertTrue(failure(SCHEMA, with(kafkaOptions(), o -> o.put("lookup.cache", "FULL"))).contains("lookup.cache"));
        assertTrue(failure(SCHEMA, with(kafkaOptions(), o -> o.put("key.format", "no-such-format")))
                .contains("key.format"));
        // properties.* pass through unchecked
        create(SCHEMA, with(kafkaOptions(), o -> o.put("properties.max.poll.records", "50")));
    }

    @Test
    void primaryKeyMustBeOneBigintColumn() {
        final ResolvedSchema none = new ResolvedSchema(
                List.of(Column.physical("id", DataTypes.BIGINT())), List.of(), null, List.of());
        assertTrue(failure(none, kafkaOptions()).contains("needs a PRIMARY KEY"));
        final ResolvedSchema intKey = new ResolvedSchema(
                List.of(Column.physical("id", DataTypes.INT().notNull())),
                List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());
        assertTrue(failure(intKey, kafkaOptions()).contains("must be BIGINT"));
        final ResolvedSchema twoColumns = new ResolvedSchema(
                List.of(Column.physical("a", DataTypes.BIGINT().notNull()),
                        Column.physical("b", DataTypes.BIGINT().notNull())),
                List.of(), UniqueConstraint.primaryKey("pk", Arrays.asList("a", "b")), List.of());
        assertTrue(failure(twoColumns, kafkaOptions()).contains("has 2 columns"));
    }
}
