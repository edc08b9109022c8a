package io.flix.flink.table;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.CatalogBaseTable;
import org.apache.flink.table.catalog.CatalogFunction;
import org.apache.flink.table.catalog.CatalogFunctionImpl;
import org.apache.flink.table.catalog.FunctionLanguage;
import org.apache.flink.table.catalog.GenericInMemoryCatalog;
import org.apache.flink.table.catalog.ObjectIdentifier;
import org.apache.flink.table.catalog.ObjectPath;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.exceptions.CatalogException;
import org.apache.flink.table.catalog.exceptions.DatabaseNotExistException;
import org.apache.flink.table.catalog.exceptions.FunctionAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.FunctionNotExistException;
import org.apache.flink.table.catalog.exceptions.TableNotExistException;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.factories.FunctionDefinitionFactory;
import org.apache.flink.table.functions.FunctionDefinition;
import org.apache.flink.table.functions.UserDefinedFunctionHelper;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code 'flix'} catalog: an in-memory catalog, as Flink's default one (its databases, tables, views and
 * functions last as long as the session), that also holds the range functions {@code FLIX_RANGE} and
 * {@code FLIX_RANGE_OR_NULL} in each of its databases ({@link FlixRangeFunction}). They read the {@code 'flix'}
 * tables declared in this catalog, by name, when a query is planned: a catalog is where Flink lets connector code
 * see a table's definition at that time (see {@link FlixRangeFunction} for why a function needs it).
 * <pre>{@code
 * CREATE CATALOG flix WITH ('type' = 'flix');                 -- 'default-database' = 'default' unless given
 * }</pre>
 * The functions' names are taken in every database: {@code CREATE FUNCTION} with one of them fails as for any
 * function that exists, and they can be neither altered nor dropped.
 */
public final class FlixCatalog extends GenericInMemoryCatalog {

    private static final List<String> RANGE_FUNCTIONS = List.of(FlixRangeFunction.NAME,
            FlixRangeFunction.OR_NULL_NAME);
    /** The catalog function's option that carries the database it was resolved in. */
    private static final String DATABASE = "database";

    public FlixCatalog(String name, String defaultDatabase) {
        super(name, defaultDatabase);
    }

    private boolean isRangeFunction(ObjectPath path) {
        return RANGE_FUNCTIONS.contains(path.getObjectName().toLowerCase(Locale.ROOT))
                && databaseExists(path.getDatabaseName());
    }

    @Override
    public boolean functionExists(ObjectPath path) {
        return isRangeFunction(path) || super.functionExists(path);
    }

    @Override
    public CatalogFunction getFunction(ObjectPath path) throws FunctionNotExistException {
        if (isRangeFunction(path)) {
            return new CatalogFunctionImpl(FlixRangeFunction.class.getName(), FunctionLanguage.JAVA, List.of(),
                    Map.of(DATABASE, path.getDatabaseName()));
        }
        return super.getFunction(path);
    }

    @Override
    public List<String> listFunctions(String databaseName) throws DatabaseNotExistException {
        final List<String> functions = new ArrayList<>(super.listFunctions(databaseName));
        functions.addAll(RANGE_FUNCTIONS);
        return functions;
    }

    @Override
    public void createFunction(ObjectPath path, CatalogFunction function, boolean ignoreIfExists)
            throws FunctionAlreadyExistException, DatabaseNotExistException {
        if (isRangeFunction(path)) {
            if (ignoreIfExists) {
                return;
            }
            throw new FunctionAlreadyExistException(getName(), path);
        }
        super.createFunction(path, function, ignoreIfExists);
    }

    @Override
    public void alterFunction(ObjectPath path, CatalogFunction function, boolean ignoreIfNotExists)
            throws FunctionNotExistException {
        refuseChange(path);
        super.alterFunction(path, function, ignoreIfNotExists);
    }

    @Override
    public void dropFunction(ObjectPath path, boolean ignoreIfNotExists) throws FunctionNotExistException {
        refuseChange(path);
        super.dropFunction(path, ignoreIfNotExists);
    }

    private void refuseChange(ObjectPath path) {
        if (isRangeFunction(path)) {
            throw new CatalogException("the function " + path.getFullName() + " comes with the 'flix' catalog '"
                    + getName() + "' and cannot be altered or dropped");
        }
    }

    /** Creates the range functions bound to this catalog; any other function of it as Flink would. */
    @Override
    public Optional<FunctionDefinitionFactory> getFunctionDefinitionFactory() {
        return Optional.of(this::functionDefinition);
    }

    private FunctionDefinition functionDefinition(String name, CatalogFunction function,
                                                  FunctionDefinitionFactory.Context context) {
        final String normalized = name.toLowerCase(Locale.ROOT);
        if (RANGE_FUNCTIONS.contains(normalized) && function.getOptions().containsKey(DATABASE)) {
            return new FlixRangeFunction(normalized.equals(FlixRangeFunction.OR_NULL_NAME), this,
                    function.getOptions().get(DATABASE), context.getClassLoader());
        }
        return UserDefinedFunctionHelper.instantiateFunction(context.getClassLoader(), new Configuration(), name,
                function);
    }

    // ---- for the range functions, when a query is planned ----

    /**
     * The {@code 'flix'} table a range function names: {@code 'table'} in the function's database, or
     * {@code 'database.table'}.
     *
     * @throws ValidationException where there is no such table in this catalog, or it is not a {@code 'flix'} table
     */
    ResolvedCatalogTable rangeTable(String function, String functionDatabase, String name) {
        final ObjectPath path = pathOf(functionDatabase, name);
        final CatalogBaseTable table;
        try {
            table = getTable(path);
        } catch (TableNotExistException e) {
            throw new ValidationException(function + " reads the tables of its catalog '" + getName() + "', which "
                    + "has no table '" + path.getFullName() + "' (named '" + name + "')");
        }
        if (!(table instanceof ResolvedCatalogTable resolved)) {
            throw new ValidationException(function + " reads 'flix' tables; '" + path.getFullName() + "' of catalog '"
                    + getName() + "' is a " + table.getTableKind().name().toLowerCase(Locale.ROOT));
        }
        final String connector = resolved.getOptions().get(FactoryUtil.CONNECTOR.key());
        if (!FlixDynamicTableFactory.IDENTIFIER.equals(connector)) {
            throw new ValidationException(function + " reads 'flix' tables; '" + path.getFullName() + "' of catalog '"
                    + getName() + "' has 'connector' = '" + connector + "'");
        }
        return resolved;
    }

    /** The named table's source, made by the {@code 'flix'} factory as for a lookup join. */
    FlixLookupTableSource rangeSource(String function, String functionDatabase, String name, ReadableConfig config,
                                      ClassLoader classLoader) {
        final ResolvedCatalogTable table = rangeTable(function, functionDatabase, name);
        final ObjectPath path = pathOf(functionDatabase, name);
        return (FlixLookupTableSource) FactoryUtil.createDynamicTableSource(new FlixDynamicTableFactory(),
                ObjectIdentifier.of(getName(), path.getDatabaseName(), path.getObjectName()), table, Map.of(), config,
                classLoader, false);
    }

    private static ObjectPath pathOf(String functionDatabase, String name) {
        final int dot = name.indexOf('.');
        return dot < 0 ? new ObjectPath(functionDatabase, name)
                : new ObjectPath(name.substring(0, dot), name.substring(dot + 1));
    }
}
