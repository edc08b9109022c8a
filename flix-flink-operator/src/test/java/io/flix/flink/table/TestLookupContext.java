package io.flix.flink.table;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalType;

/** The planner's lookup context, for creating lookup functions without a planner. */
final class TestLookupContext implements LookupTableSource.LookupContext {

    private final int[][] keys;

    TestLookupContext(int[]... keys) {
        this.keys = keys;
    }

    @Override
    public int[][] getKeys() {
        return keys;
    }

    @Override
    public boolean preferCustomShuffle() {
        return false;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> TypeInformation<T> createTypeInformation(DataType producedDataType) {
        return (TypeInformation<T>) InternalTypeInfo.of(producedDataType.getLogicalType());
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> TypeInformation<T> createTypeInformation(LogicalType producedLogicalType) {
        return (TypeInformation<T>) InternalTypeInfo.of(producedLogicalType);
    }

    @Override
    public DynamicTableSource.DataStructureConverter createDataStructureConverter(DataType producedDataType) {
        throw new UnsupportedOperationException();
    }
}
