package io.flix.flink.table;

import io.flix.flink.table.lookup.SqlEquality;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.conversion.DataStructureConverter;
import org.apache.flink.table.data.conversion.DataStructureConverters;
import org.apache.flink.table.types.DataType;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The connector's equality of further lookup keys ({@link SqlEquality}) against Flink's own {@code =} as its
 * generated code evaluates it at runtime, and a lookup join that equates columns of every such type.
 *
 * <p>The compared values come from a stream and are cast in SQL, so that the planner cannot fold the comparisons
 * into constants (it simplifies {@code x = x} to {@code x IS NOT NULL}, for example, which makes NaN = NaN true).
 */
class FlinkSqlEqualityITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(1)
                    .build());

    @TempDir
    Path dir;

    /** Column name to its SQL type; each column is compared with the one of the same name and suffix _r. */
    private static final Map<String, DataType> COMPARED = new java.util.LinkedHashMap<>();

    static {
        COMPARED.put("d", DataTypes.DOUBLE());
        COMPARED.put("f", DataTypes.FLOAT());
        COMPARED.put("b", DataTypes.BYTES());
        COMPARED.put("dec", DataTypes.DECIMAL(10, 2));
        COMPARED.put("ts", DataTypes.TIMESTAMP(3));
        COMPARED.put("s", DataTypes.STRING());
    }

    /** Right-hand types where they differ from the left: scales and precisions Flink compares by value. */
    private static final Map<String, DataType> RIGHT_TYPES = Map.of(
            "dec", DataTypes.DECIMAL(12, 4), "ts", DataTypes.TIMESTAMP(9));

    /** Per row, per compared column (in {@link #COMPARED}'s order): left and right as strings. */
    private static final String[][] PAIRS = {
        {"-0.0", "0.0", "-0.0", "0.0", "abc", "abc", "1.5", "1.50", "2024-05-06 07:08:09.12",
            "2024-05-06 07:08:09.120000000", "ä b", "ä b"},
        {"NaN", "NaN", "NaN", "NaN", "abc", "abd", "1.5", "1.5001", "2024-05-06 07:08:09.12",
            "2024-05-06 07:08:09.120000001", "a", "A"},
        {"NaN", "1.0", "1.0", "1.5", "", "", "-0.0", "0.0000", "2024-05-06 07:08:09",
            "2024-05-06 07:08:09.000", "", ""},
        {"Infinity", "Infinity", "-Infinity", "-Infinity", "x", "x ", "99999999.99", "99999999.9900",
            "2024-05-06 07:08:09.999", "2024-05-06 07:08:09.998999999", "x", "x "},
    };

    @Test
    void flinkSqlEqualsAndTheConnectorsEqualityAgree() throws Exception {
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        final List<String> names = new ArrayList<>();
        final List<String> casts = new ArrayList<>();
        final List<String> comparisons = new ArrayList<>();
        for (Map.Entry<String, DataType> column : COMPARED.entrySet()) {
            final String c = column.getKey();
            names.add(c + "_l");
            names.add(c + "_r");
            casts.add("CAST(" + c + "_l AS " + column.getValue() + ") AS " + c + "_l");
            casts.add("CAST(" + c + "_r AS " + RIGHT_TYPES.getOrDefault(c, column.getValue()) + ") AS " + c + "_r");
            comparisons.add(c + "_l = " + c + "_r");
        }
        final TypeInformation<?>[] strings = new TypeInformation<?>[names.size()];
        java.util.Arrays.fill(strings, Types.STRING);
        final List<Row> rows = new ArrayList<>();
        for (String[] pair : PAIRS) {
            rows.add(Row.of((Object[]) pair));
        }
        tEnv.createTemporaryView("pairs_text", tEnv.fromDataStream(
                env.fromData(rows, Types.ROW_NAMED(names.toArray(new String[0]), strings))));
        tEnv.executeSql("CREATE TEMPORARY VIEW pairs AS SELECT " + String.join(", ", casts) + " FROM pairs_text");
        final List<Row> results = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql("SELECT *, " + String.join(", ", comparisons)
                + " FROM pairs").collect()) {
            it.forEachRemaining(results::add);
        }
        assertEquals(PAIRS.length, results.size());

        int checked = 0;
        for (Row result : results) {
            int at = 0;
            for (Map.Entry<String, DataType> column : COMPARED.entrySet()) {
                final String c = column.getKey();
                final Object left = internal(column.getValue(), result.getField(c + "_l"));
                final Object right = internal(RIGHT_TYPES.getOrDefault(c, column.getValue()),
                        result.getField(c + "_r"));
                final Boolean flink = (Boolean) result.getField(names.size() + at);
                final boolean connector = SqlEquality.of(column.getValue().getLogicalType()).equal(left, right);
                assertEquals(flink, connector, c + ": " + result.getField(c + "_l") + " = " + result.getField(c + "_r"));
                at++;
                checked++;
            }
        }
        assertEquals(PAIRS.length * COMPARED.size(), checked);
        // what Flink answered, written down: -0.0 = 0.0 is true, NaN = NaN false
        final Row first = rowWith(results, "d_l", -0.0d);
        assertEquals(true, first.getField(names.size()));
        final Row nan = rowWith(results, "f_l", Float.NaN);
        assertEquals(false, nan.getField(names.size() + 1));
    }

    private static Row rowWith(List<Row> rows, String field, Object value) {
        return rows.stream().filter(r -> value.equals(r.getField(field))).findFirst().orElseThrow();
    }

    private static Object internal(DataType type, Object external) {
        final DataStructureConverter<Object, Object> converter = DataStructureConverters.getConverter(type);
        converter.open(FlinkSqlEqualityITCase.class.getClassLoader());
        return converter.toInternalOrNull(external);
    }

    /**
     * A lookup join equating, besides the key, a column of each type the connector compares (those reach it as
     * lookup keys), and columns of another scale or precision than the table's (the planner compares those
     * itself). Each probe differs from the stored row in one respect.
     */
    @Test
    void aLookupJoinOnFurtherKeysOfEveryTypeMatchesAsSqlDoes() throws Exception {
        final Path file = dir.resolve("dims.jsonl");
        final String stored = "\"code\":\"YWJj\",\"ratio\":-0.0,\"amount\":1.50,\"stamp\":\"2024-05-06 07:08:09.12\","
                + "\"name\":\"ä b\"";
        Files.write(file, List.of("{\"id\":1,\"score\":0.0," + stored + "}",
                "{\"id\":2,\"score\":\"NaN\"," + stored + "}"));
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.executeSql("CREATE TABLE dims (id BIGINT, code BYTES, score DOUBLE, ratio FLOAT, amount DECIMAL(10, 2), "
                + "stamp TIMESTAMP(3), name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'flix', "
                + "'changelog' = 'file', 'file.path' = '" + file + "', 'index.backend' = 'auto', "
                + "'lookup.batch-size' = '1')");
        final String[] fields = {"pid", "id", "code", "score", "ratio", "amount", "stamp", "name"};
        final List<Row> probes = List.of(
                probe(1, 1, "abc", "0.0", "-0.0", "1.50", "2024-05-06 07:08:09.120", "ä b"),
                probe(2, 1, "abc", "-0.0", "0.0", "1.50", "2024-05-06 07:08:09.120", "ä b"), // signed zeros
                probe(3, 1, "abd", "0.0", "-0.0", "1.50", "2024-05-06 07:08:09.120", "ä b"), // bytes differ
                probe(4, 2, "abc", "NaN", "-0.0", "1.50", "2024-05-06 07:08:09.120", "ä b"), // NaN = NaN: false
                probe(5, 1, "abc", "0.0", "-0.0", "1.5", "2024-05-06 07:08:09.12", "ä b"), // fewer digits
                probe(6, 1, "abc", "0.0", "-0.0", "1.50", "2024-05-06 07:08:09.121", "ä b"), // a millisecond off
                probe(7, 1, "abc", "0.0", "-0.0", "1.51", "2024-05-06 07:08:09.120", "ä b"), // a cent off
                probe(8, 1, "abc", "0.0", "-0.0", "1.50", "2024-05-06 07:08:09.120", "Ä b")); // another letter
        tEnv.createTemporaryView("probes_text", tEnv.fromDataStream(
                env.fromData(probes, Types.ROW_NAMED(fields, Types.LONG, Types.LONG, Types.STRING, Types.STRING,
                        Types.STRING, Types.STRING, Types.STRING, Types.STRING)),
                Schema.newBuilder().columnByExpression("proc_time", "PROCTIME()").build()));
        tEnv.executeSql("CREATE TEMPORARY VIEW probes AS SELECT pid, id, CAST(code AS BYTES) AS code, "
                + "CAST(score AS DOUBLE) AS score, CAST(ratio AS FLOAT) AS ratio, "
                + "CAST(amount AS DECIMAL(10, 2)) AS amount, CAST(amount AS DECIMAL(12, 4)) AS amount4, "
                + "CAST(stamp AS TIMESTAMP(3)) AS stamp, CAST(stamp AS TIMESTAMP(9)) AS stamp9, name, proc_time "
                + "FROM probes_text");
        final TreeSet<Long> matched = new TreeSet<>();
        try (CloseableIterator<Row> it = tEnv.executeSql("SELECT p.pid FROM probes AS p JOIN dims "
                + "FOR SYSTEM_TIME AS OF p.proc_time AS d ON p.id = d.id AND p.code = d.code "
                + "AND p.score = d.score AND p.ratio = d.ratio AND p.amount = d.amount AND p.stamp = d.stamp "
                + "AND p.name = d.name AND p.amount4 = d.amount AND p.stamp9 = d.stamp").collect()) {
            it.forEachRemaining(row -> matched.add((Long) row.getField(0)));
        }
        assertEquals(List.of(1L, 2L, 5L), new ArrayList<>(matched));
    }

    private static Row probe(long pid, long id, String code, String score, String ratio, String amount,
                             String stamp, String name) {
        return Row.of(pid, id, code, score, ratio, amount, stamp, name);
    }
}
