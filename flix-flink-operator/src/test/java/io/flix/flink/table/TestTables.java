package io.flix.flink.table;

import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.connector.source.lookup.AsyncLookupFunctionProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.utils.FactoryMocks;

import java.util.Collection;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** Lookup functions of 'flix' tables made through the factory, without a planner; and waiting on their answers. */
final class TestTables {

    /** The longest a test waits for an answer that must come: a net against hangs, never what is asserted. */
    static final long NET_SECONDS = 120;

    private TestTables() {
    }

    static FlixAsyncLookupFunction function(ResolvedSchema schema, java.util.Map<String, String> options,
                                            int[]... keys) {
        final FlixLookupTableSource source = (FlixLookupTableSource) FactoryMocks.createTableSource(schema, options);
        return (FlixAsyncLookupFunction) ((AsyncLookupFunctionProvider)
                source.getLookupRuntimeProvider(new TestLookupContext(keys))).createAsyncLookupFunction();
    }

    /** The answer of a lookup that must come. */
    static Collection<RowData> answer(CompletableFuture<Collection<RowData>> lookup) throws Exception {
        return lookup.get(NET_SECONDS, TimeUnit.SECONDS);
    }

    /** The cause a lookup that must fail failed with. */
    static Throwable failure(CompletableFuture<?> lookup) throws Exception {
        try {
            lookup.get(NET_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("the lookup did not fail");
    }
}
