package io.flix.flink.table;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.table.catalog.Catalog;
import org.apache.flink.table.catalog.CommonCatalogOptions;
import org.apache.flink.table.catalog.GenericInMemoryCatalog;
import org.apache.flink.table.factories.CatalogFactory;
import org.apache.flink.table.factories.FactoryUtil;

import java.util.Set;

/** Creates {@code 'type' = 'flix'} catalogs ({@link FlixCatalog}); registered through {@code META-INF/services}. */
public final class FlixCatalogFactory implements CatalogFactory {

    public static final String IDENTIFIER = "flix";

    public static final ConfigOption<String> DEFAULT_DATABASE = ConfigOptions
            .key(CommonCatalogOptions.DEFAULT_DATABASE_KEY)
            .stringType()
            .defaultValue(GenericInMemoryCatalog.DEFAULT_DB)
            .withDescription("The catalog's database, created with it, and the current one after USE CATALOG.");

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(DEFAULT_DATABASE);
    }

    @Override
    public Catalog createCatalog(Context context) {
        final FactoryUtil.CatalogFactoryHelper helper = FactoryUtil.createCatalogFactoryHelper(this, context);
        helper.validate();
        return new FlixCatalog(context.getName(), helper.getOptions().get(DEFAULT_DATABASE));
    }
}
