package io.flix.flink.table.lookup;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.LogicalType;

import java.util.Arrays;

/**
 * SQL equality ({@code =}) of two non-null internal values (as {@link org.apache.flink.table.data.RowData} holds
 * them) of one logical type, with the results Flink's generated code gives at runtime:
 * <ul>
 *   <li>FLOAT, DOUBLE: numeric {@code ==}: {@code -0.0 = 0.0} is true and {@code NaN = NaN} is false (so a NaN
 *       lookup key finds nothing, as a NaN join key matches nothing in Flink SQL).</li>
 *   <li>DECIMAL: by value ({@link DecimalData#compareTo}): {@code 1.5 = 1.50}.</li>
 *   <li>TIMESTAMP, TIMESTAMP_LTZ: the same instant ({@link TimestampData#compareTo}), whatever the precision the
 *       values were written with: {@code TIMESTAMP(3) '...00.120' = TIMESTAMP(6) '...00.120000'}.</li>
 *   <li>BINARY, VARBINARY: the same bytes; CHAR, VARCHAR: the same characters; BOOLEAN, the integer types, DATE,
 *       TIME and the intervals: the same value.</li>
 * </ul>
 * Other types (ARRAY, MAP, MULTISET, ROW, structured, RAW, ...) have no equality here: {@link #of} refuses them,
 * and the connector does not accept them as lookup keys.
 *
 * <p>Flink's planner makes an equality a lookup key only where both sides have the column's type; an equality of
 * another DECIMAL scale or TIMESTAMP precision ({@code DECIMAL(10, 1) = DECIMAL(10, 2)}) it evaluates itself on
 * the returned row, after a cast. So both values here have the column's type, which fixes the scale and the
 * precision; comparing by value is right for other ones too.
 */
@FunctionalInterface
public interface SqlEquality {

    /** {@code a = b} for two non-null values of this equality's type. */
    boolean equal(Object a, Object b);

    /** The equality of a type, or an {@link IllegalArgumentException} naming the type where there is none. */
    static SqlEquality of(LogicalType type) {
        switch (type.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
            case INTERVAL_YEAR_MONTH:
            case INTERVAL_DAY_TIME:
                // StringData (binary strings compare their bytes), Boolean, Byte, Short, Integer, Long
                return Object::equals;
            case BINARY:
            case VARBINARY:
                return (a, b) -> Arrays.equals((byte[]) a, (byte[]) b);
            case FLOAT:
                return (a, b) -> ((Float) a).floatValue() == ((Float) b).floatValue();
            case DOUBLE:
                return (a, b) -> ((Double) a).doubleValue() == ((Double) b).doubleValue();
            case DECIMAL:
                return (a, b) -> ((DecimalData) a).compareTo((DecimalData) b) == 0;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return (a, b) -> ((TimestampData) a).compareTo((TimestampData) b) == 0;
            default:
                throw new IllegalArgumentException("no SQL equality for values of type " + type.asSummaryString()
                        + " (supported: character and binary strings, BOOLEAN, numbers, DATE, TIME, TIMESTAMP, "
                        + "TIMESTAMP_LTZ, intervals)");
        }
    }
}
