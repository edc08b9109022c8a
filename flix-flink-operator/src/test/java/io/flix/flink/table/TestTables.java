package io.flix.flink.table;

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

    /**
     * Waits for something that must happen (a record applied, a subtask opened); the limit is a net against a hang,
     * never what a test asserts.
     */
    static void await(String what, java.util.function.BooleanSupplier happened) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(NET_SECONDS);
        while (!happened.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("waited " + NET_SECONDS + " s in vain for: " + what);
            }
            Thread.sleep(10);
        }
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
