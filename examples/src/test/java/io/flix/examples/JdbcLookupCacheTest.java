package io.flix.examples;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.catalog.CatalogTable;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ObjectIdentifier;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.lookup.FullCachingLookupProvider;
import org.apache.flink.table.connector.source.lookup.LookupFunctionProvider;
import org.apache.flink.table.connector.source.lookup.PartialCachingLookupProvider;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalType;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

/**
 * What Flink's JDBC connector (4.0.0-2.0) makes of each {@code 'lookup.cache'} value, as the SQL benchmark's JDBC
 * contestants declare it: PARTIAL caches; FULL is accepted (it is a value of Flink's common lookup option) but the
 * connector builds no full cache, nor any: its lookups all go to the database.
 */
class JdbcLookupCacheTest {

    @Test
    void partialBuildsAPartialCache() {
        assertInstanceOf(PartialCachingLookupProvider.class,
                lookupProvider(Map.of("lookup.cache", "PARTIAL", "lookup.partial-cache.max-rows", "100")));
    }

    @Test
    void fullIsAcceptedButBuildsNoCache() {
        final LookupTableSource.LookupRuntimeProvider provider = lookupProvider(Map.of("lookup.cache", "FULL"));
        assertFalse(provider instanceof FullCachingLookupProvider, provider.getClass().getName());
        assertFalse(provider instanceof PartialCachingLookupProvider, provider.getClass().getName());
        assertInstanceOf(LookupFunctionProvider.class, provider);
    }

    private static LookupTableSource.LookupRuntimeProvider lookupProvider(Map<String, String> cacheOptions) {
        final ResolvedSchema schema = new ResolvedSchema(
                List.of(Column.physical("id", DataTypes.BIGINT().notNull()),
                        Column.physical("name", DataTypes.STRING()), Column.physical("price", DataTypes.DOUBLE())),
                List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());
        final Map<String, String> options = new HashMap<>(Map.of("connector", "jdbc",
                "url", "jdbc:postgresql://localhost:5432/postgres", "table-name", "products"));
        options.putAll(cacheOptions);
        final CatalogTable table = CatalogTable.newBuilder()
                .schema(Schema.newBuilder().fromResolvedSchema(schema).build()).options(options).build();
        final DynamicTableSource source = FactoryUtil.createDynamicTableSource(null,
                ObjectIdentifier.of("default_catalog", "default_database", "products"),
                new ResolvedCatalogTable(table, schema), Map.of(), new Configuration(),
                JdbcLookupCacheTest.class.getClassLoader(), false);
        return ((LookupTableSource) source).getLookupRuntimeProvider(new KeyOnlyLookupContext());
    }

    /** A lookup by the first column, the only thing the JDBC source asks of the context. */
    private static final class KeyOnlyLookupContext implements LookupTableSource.LookupContext {
        @Override
        public int[][] getKeys() {
            return new int[][] {{0}};
        }

        @Override
        public boolean preferCustomShuffle() {
            return false;
        }

        @Override
        public <T> TypeInformation<T> createTypeInformation(DataType type) {
            throw new UnsupportedOperationException();
        }

        @Override
        public <T> TypeInformation<T> createTypeInformation(LogicalType type) {
            throw new UnsupportedOperationException();
        }

        @Override
        public DynamicTableSource.DataStructureConverter createDataStructureConverter(DataType type) {
            throw new UnsupportedOperationException();
        }
    }
}
