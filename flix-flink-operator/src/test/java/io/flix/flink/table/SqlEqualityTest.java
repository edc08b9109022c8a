package io.flix.flink.table;

import io.flix.flink.table.lookup.SqlEquality;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.LogicalType;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.time.LocalDateTime;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** SQL equality of internal values; {@link FlinkSqlEqualityITCase} checks the same cases against Flink's own. */
class SqlEqualityTest {

    private static boolean equal(LogicalType type, Object a, Object b) {
        return SqlEquality.of(type).equal(a, b);
    }

    @Test
    void bytesCompareTheirContentNotTheArray() {
        final LogicalType bytes = DataTypes.BYTES().getLogicalType();
        assertTrue(equal(bytes, new byte[] {1, 2, 3}, new byte[] {1, 2, 3}));
        assertTrue(equal(bytes, new byte[0], new byte[0]));
        assertFalse(equal(bytes, new byte[] {1, 2, 3}, new byte[] {1, 2}));
        assertTrue(equal(DataTypes.BINARY(2).getLogicalType(), new byte[] {7, 8}, new byte[] {7, 8}));
    }

    @Test
    void signedZerosAreEqualAndNaNEqualsNothing() {
        final LogicalType doubles = DataTypes.DOUBLE().getLogicalType();
        assertTrue(equal(doubles, -0.0d, 0.0d));
        assertTrue(equal(doubles, 1.5d, 1.5d));
        assertFalse(equal(doubles, Double.NaN, Double.NaN));
        assertFalse(equal(doubles, Double.NaN, 1.0d));
        assertTrue(equal(doubles, Double.POSITIVE_INFINITY, Double.POSITIVE_INFINITY));
        final LogicalType floats = DataTypes.FLOAT().getLogicalType();
        assertTrue(equal(floats, -0.0f, 0.0f));
        assertFalse(equal(floats, Float.NaN, Float.NaN));
        assertFalse(equal(floats, 1.0f, 1.5f));
    }

    @Test
    void decimalsCompareByValueWhateverTheirScale() {
        final LogicalType decimal = DataTypes.DECIMAL(10, 2).getLogicalType();
        assertTrue(equal(decimal, DecimalData.fromBigDecimal(new BigDecimal("1.50"), 10, 2),
                DecimalData.fromBigDecimal(new BigDecimal("1.5"), 10, 1)));
        assertTrue(equal(decimal, DecimalData.fromBigDecimal(new BigDecimal("1.50"), 10, 2),
                DecimalData.fromBigDecimal(new BigDecimal("1.5000"), 20, 4)));
        assertFalse(equal(decimal, DecimalData.fromBigDecimal(new BigDecimal("1.50"), 10, 2),
                DecimalData.fromBigDecimal(new BigDecimal("1.51"), 10, 2)));
        // large precision: not compact
        assertTrue(equal(DataTypes.DECIMAL(38, 10).getLogicalType(),
                DecimalData.fromBigDecimal(new BigDecimal("12345678901234567890.5"), 38, 10),
                DecimalData.fromBigDecimal(new BigDecimal("12345678901234567890.50"), 38, 10)));
    }

    @Test
    void timestampsCompareTheInstantWhateverThePrecision() {
        final LogicalType timestamp = DataTypes.TIMESTAMP(3).getLogicalType();
        final LocalDateTime at = LocalDateTime.of(2024, 5, 6, 7, 8, 9, 120_000_000);
        assertTrue(equal(timestamp, TimestampData.fromLocalDateTime(at), TimestampData.fromLocalDateTime(at)));
        assertTrue(equal(DataTypes.TIMESTAMP(6).getLogicalType(), TimestampData.fromLocalDateTime(at),
                TimestampData.fromEpochMillis(TimestampData.fromLocalDateTime(at).getMillisecond(), 0)));
        assertFalse(equal(DataTypes.TIMESTAMP(9).getLogicalType(), TimestampData.fromLocalDateTime(at),
                TimestampData.fromLocalDateTime(at.plusNanos(1))));
        assertTrue(equal(DataTypes.TIMESTAMP_LTZ(3).getLogicalType(), TimestampData.fromEpochMillis(1000),
                TimestampData.fromEpochMillis(1000, 0)));
    }

    @Test
    void stringsAndTheRest() {
        assertTrue(equal(DataTypes.STRING().getLogicalType(), StringData.fromString("ä b"),
                StringData.fromBytes("ä b".getBytes(java.nio.charset.StandardCharsets.UTF_8))));
        assertFalse(equal(DataTypes.STRING().getLogicalType(), StringData.fromString("a"),
                StringData.fromString("A")));
        assertTrue(equal(DataTypes.INT().getLogicalType(), 5, 5));
        assertTrue(equal(DataTypes.BOOLEAN().getLogicalType(), true, true));
        assertFalse(equal(DataTypes.BIGINT().getLogicalType(), 5L, 6L));
    }

    @Test
    void typesWithoutAnEqualityAreRefusedByName() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SqlEquality.of(DataTypes.ARRAY(DataTypes.INT()).getLogicalType()));
        assertTrue(e.getMessage().contains("ARRAY<INT>"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> SqlEquality.of(DataTypes.MAP(DataTypes.INT(), DataTypes.INT()).getLogicalType()));
        assertThrows(IllegalArgumentException.class,
                () -> SqlEquality.of(DataTypes.ROW(DataTypes.FIELD("a", DataTypes.INT())).getLogicalType()));
    }
}
