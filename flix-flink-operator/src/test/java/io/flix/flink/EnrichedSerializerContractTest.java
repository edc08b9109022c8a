package io.flix.flink;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

import java.util.ArrayList;
import java.util.List;

/**
 * Flink's own contract tests of a type serializer ({@link SerializerTestBase}: copies, serialization alone and in
 * sequences, with and without reuse, the snapshot and its restore, duplicates, Java serialization) run on
 * {@link EnrichedSerializer}, for each lookup kind's records and their null fields.
 */
class EnrichedSerializerContractTest extends SerializerTestBase<Enriched<Lookup, Product>> {

    @Override
    protected TypeSerializer<Enriched<Lookup, Product>> createSerializer() {
        return FlixEnrichment.enrichedType(TypeInformation.of(Lookup.class), TypeInformation.of(Product.class))
                .createSerializer(new SerializerConfigImpl());
    }

    @Override
    protected int getLength() {
        return -1;
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    protected Class<Enriched<Lookup, Product>> getTypeClass() {
        return (Class<Enriched<Lookup, Product>>) (Class) Enriched.class;
    }

    @Override
    @SuppressWarnings("unchecked")
    protected Enriched<Lookup, Product>[] getTestData() {
        final List<Match<Product>> matches = new ArrayList<>();
        matches.add(new Match<>(Long.MIN_VALUE, new Product(1, "first", 3)));
        matches.add(new Match<>(0, null));
        matches.add(null);
        matches.add(new Match<>(Long.MAX_VALUE, new Product(2, null, -1)));
        return new Enriched[] {
            new Enriched<>(new Lookup(1, 7, 7), LookupKind.EXACT, new Product(7, "seven", 70), null, null),
            new Enriched<>(new Lookup(2, 8, 8), LookupKind.EXACT, null, null, null),
            new Enriched<>(new Lookup(3, 9, 9), LookupKind.FLOOR, new Product(5, "five", 0), 5L, null),
            new Enriched<>(new Lookup(4, -9, -9), LookupKind.CEILING, null, null, null),
            new Enriched<>(new Lookup(5, 0, 100), LookupKind.RANGE, null, null, matches),
            new Enriched<>(new Lookup(6, 50, 60), LookupKind.RANGE, null, null, new ArrayList<>()),
            new Enriched<>(null, null, null, null, null),
            new Enriched<>(),
        };
    }
}
