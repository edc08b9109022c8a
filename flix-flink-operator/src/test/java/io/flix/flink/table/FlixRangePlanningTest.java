package io.flix.flink.table;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.functions.FunctionDefinition;
import org.apache.flink.table.functions.SpecializedFunction;
import org.apache.flink.table.types.inference.CallContext;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The range functions when a query is planned: how the 'flix' catalog hands them out, how they find their table,
 * and the clear errors of a call they cannot answer. Nothing runs: {@code EXPLAIN} plans down to the generated code.
 */
class FlixRangePlanningTest {

    private TableEnvironment tEnv;

    @BeforeEach
    void catalog() {
        tEnv = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.async-table.retry-strategy", "NO_RETRY");
        tEnv.executeSql("CREATE CATALOG flix WITH ('type' = 'flix')");
        tEnv.useCatalog("flix");
        tEnv.executeSql("CREATE TABLE dim (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                + "'connector' = 'flix', 'changelog' = 'file', 'file.path' = '/nowhere/dim.jsonl', "
                + "'lookup.batch-size' = '64', 'index.backend' = 'cpu')");
        tEnv.executeSql("CREATE TABLE probes (probe_id INT, lo BIGINT, hi INT, label STRING) WITH ("
                + "'connector' = 'datagen')");
    }

    private String explain(String call) {
        return tEnv.explainSql("SELECT q.probe_id, r.id, r.name FROM probes AS q, LATERAL TABLE(" + call + ") AS r");
    }

    /** The messages of an exception and its causes, one string. */
    private static String messages(Throwable t) {
        final StringBuilder all = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.append(c.getMessage()).append(" | ");
        }
        return all.toString();
    }

    private String refusal(String call) {
        return messages(assertThrows(Exception.class, () -> explain(call)));
    }

    @Test
    void aCallPlansAsAnAsynchronousCorrelateWithTheTablesColumns() {
        final String plan = explain("FLIX_RANGE('dim', q.lo, q.hi, 10)");
        assertTrue(plan.contains("AsyncCorrelate(invocation=[FLIX_RANGE(_UTF-16LE'dim', $1, "), plan);
        assertTrue(plan.contains("BIGINT id, VARCHAR(2147483647) name"), plan);
        // the other database's table, by 'database.table'; the function called from another catalog by its path
        tEnv.executeSql("CREATE DATABASE other");
        tEnv.executeSql("CREATE TABLE other.dim2 (k BIGINT, v DOUBLE, PRIMARY KEY (k) NOT ENFORCED) WITH ("
                + "'connector' = 'flix', 'changelog' = 'file', 'file.path' = '/nowhere/dim2.jsonl')");
        tEnv.useCatalog("default_catalog");
        tEnv.executeSql("CREATE TABLE probes (probe_id INT, lo BIGINT, hi BIGINT) WITH ('connector' = 'datagen')");
        final String qualified = tEnv.explainSql("SELECT r.k, r.v FROM probes AS q, "
                + "LATERAL TABLE(flix.`default`.FLIX_RANGE_OR_NULL('other.dim2', q.lo, q.hi, 1)) AS r");
        assertTrue(qualified.contains("BIGINT k, DOUBLE v"), qualified);
    }

    @Test
    void theMostRowsPerProbeMustBeALiteralFromOneToTheMaximum() {
        for (int bad : new int[] {0, -1, FlixRangeFunction.MAX_ROWS_PER_PROBE + 1}) {
            final String message = refusal("FLIX_RANGE('dim', q.lo, q.hi, " + bad + ")");
            assertTrue(message.contains("the most rows per probe, must be from 1 to 65536, was " + bad), message);
        }
        assertTrue(explain("FLIX_RANGE('dim', q.lo, q.hi, 65536)").contains("AsyncCorrelate"));
        final String notLiteral = refusal("FLIX_RANGE('dim', q.lo, q.hi, q.probe_id)");
        assertTrue(notLiteral.contains("max_rows"), notLiteral);
        assertTrue(notLiteral.contains("LITERAL"), notLiteral);
        final String isNull = refusal("FLIX_RANGE('dim', q.lo, q.hi, CAST(NULL AS INT))");
        assertTrue(isNull.contains("LITERAL") || isNull.contains("was NULL"), isNull);
    }

    @Test
    void theTableMustBeALiteralNamingAFlixTableOfTheCatalog() {
        final String notLiteral = refusal("FLIX_RANGE(q.label, q.lo, q.hi, 3)");
        assertTrue(notLiteral.contains("LITERAL"), notLiteral);
        final String absent = refusal("FLIX_RANGE('nope', q.lo, q.hi, 3)");
        assertTrue(absent.contains("catalog 'flix', which has no table 'default.nope'"), absent);
        final String other = refusal("FLIX_RANGE('probes', q.lo, q.hi, 3)");
        assertTrue(other.contains("'default.probes' of catalog 'flix' has 'connector' = 'datagen'"), other);
        tEnv.executeSql("CREATE VIEW dim_view AS SELECT * FROM dim");
        final String view = refusal("FLIX_RANGE('dim_view', q.lo, q.hi, 3)");
        assertTrue(view.contains("is a view"), view);
        tEnv.executeSql("CREATE TABLE bad (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                + "'connector' = 'flix', 'changelog' = 'file', 'file.path' = '/x', 'lookup.batch-size' = '0')");
        final String options = refusal("FLIX_RANGE('bad', q.lo, q.hi, 3)");
        assertTrue(options.contains("'lookup.batch-size' must be at least 1"), options);
    }

    /** Flink retries an asynchronous table function's empty answers unless told not to. */
    @Test
    void flixRangeNeedsNoRetryAndOrNullRunsUnderAnyRetryStrategy() {
        tEnv.getConfig().set("table.exec.async-table.retry-strategy", "FIXED_DELAY");
        final String refused = refusal("FLIX_RANGE('dim', q.lo, q.hi, 3)");
        assertTrue(refused.contains("'table.exec.async-table.retry-strategy' = 'NO_RETRY', was 'FIXED_DELAY'"),
                refused);
        assertTrue(explain("FLIX_RANGE_OR_NULL('dim', q.lo, q.hi, 3)").contains("AsyncCorrelate"));
    }

    @Test
    void outsideAFlixCatalogTheFunctionSaysWhereItComesFrom() {
        tEnv.useCatalog("default_catalog");
        tEnv.executeSql("CREATE TABLE probes (probe_id INT, lo BIGINT, hi BIGINT) WITH ('connector' = 'datagen')");
        tEnv.executeSql("CREATE FUNCTION my_range AS '" + FlixRangeFunction.class.getName() + "'");
        final String message = messages(assertThrows(Exception.class, () -> tEnv.explainSql(
                "SELECT r.* FROM probes AS q, LATERAL TABLE(my_range('dim', q.lo, q.hi, 3)) AS r")));
        assertTrue(message.contains("comes with a 'flix' catalog"), message);
    }

    @Test
    void theCatalogHoldsTheFunctionsInEveryDatabaseAndKeepsThem() throws Exception {
        tEnv.executeSql("CREATE DATABASE other");
        for (String database : List.of("`default`", "other")) {
            final List<String> functions = new ArrayList<>();
            try (CloseableIterator<Row> rows = tEnv.executeSql("SHOW USER FUNCTIONS FROM " + database).collect()) {
                rows.forEachRemaining(row -> functions.add(String.valueOf(row.getField(0))));
            }
            assertTrue(functions.containsAll(List.of("flix_range", "flix_range_or_null")), functions.toString());
        }
        final String create = messages(assertThrows(Exception.class, () -> tEnv.executeSql(
                "CREATE FUNCTION flix_range AS '" + FlixRangeFunction.class.getName() + "'")));
        assertTrue(create.contains("already exists"), create);
        final String drop = messages(assertThrows(Exception.class, () -> tEnv.executeSql("DROP FUNCTION flix_range")));
        assertTrue(drop.contains("cannot be altered or dropped"), drop);
        // other functions of the catalog are made as Flink makes them
        tEnv.executeSql("CREATE FUNCTION twice AS '" + Twice.class.getName() + "'");
        final String plan = tEnv.explainSql("SELECT twice(probe_id) FROM probes");
        assertTrue(plan.contains("twice(probe_id)"), plan);
    }

    /** A scalar function of the catalog besides the range functions. */
    public static final class Twice extends org.apache.flink.table.functions.ScalarFunction {
        public Integer eval(Integer x) {
            return x == null ? null : 2 * x;
        }
    }

    /**
     * What specialize makes: the table's dimension (the one its lookup join shares), the call's limit, and batches
     * no larger than Flink lets a subtask keep in flight.
     */
    @Test
    void specializeReadsTheTableAndCapsTheBatchAtTheProbesInFlight() throws Exception {
        final FlixCatalog catalog = (FlixCatalog) tEnv.getCatalog("flix").orElseThrow();
        final FunctionDefinition definition = catalog.getFunctionDefinitionFactory().orElseThrow()
                .createFunctionDefinition("flix_range", catalog.getFunction(
                        new org.apache.flink.table.catalog.ObjectPath("default", "flix_range")),
                        () -> getClass().getClassLoader());
        final FlixRangeFunction planned = assertInstanceOf(FlixRangeFunction.class, definition);
        final FlixLookupTableSource lookupSource = catalog.rangeSource("test", "default", "dim", new Configuration(),
                getClass().getClassLoader());
        for (int inFlight : new int[] {10, 64, 100}) {
            final Configuration config = new Configuration();
            config.setString("table.exec.async-table.retry-strategy", "NO_RETRY");
            config.setString("table.exec.async-table.max-concurrent-operations", String.valueOf(inFlight));
            final FlixRangeFunction running = (FlixRangeFunction) planned.specialize(context(config, "dim", 5));
            assertEquals(Math.min(64, inFlight), running.batchSize());
            assertEquals(5, running.maxRows());
            assertEquals(lookupSource.identity(), running.spec().identity());
        }
    }

    /** A specializing context of a call with the given literals, in {@code config}. */
    private SpecializedFunction.SpecializedContext context(Configuration config, String table, int maxRows) {
        final Object[] literals = {table, null, null, maxRows};
        final CallContext call = (CallContext) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {CallContext.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "getArgumentValue" -> Optional.ofNullable(literals[(Integer) args[0]]);
                    case "isArgumentLiteral" -> literals[(Integer) args[0]] != null;
                    case "getName" -> "flix_range";
                    default -> throw new UnsupportedOperationException(method.getName());
                });
        return (SpecializedFunction.SpecializedContext) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {SpecializedFunction.SpecializedContext.class}, (proxy, method, args) ->
                        switch (method.getName()) {
                            case "getCallContext" -> call;
                            case "getConfiguration" -> config;
                            case "getBuiltInClassLoader" -> getClass().getClassLoader();
                            default -> throw new UnsupportedOperationException(method.getName());
                        });
    }
}
