package io.flix.examples.kafka;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.flink.Enriched;
import io.flix.flink.LookupKind;
import io.flix.flink.Rejected;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The topics' JSON: what parses, what becomes a dead letter and why, and what the enriched record holds. */
class JsonCodecTest {

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void ordersRoundTripAndBadOnesNameTheirReason() throws Exception {
        final Order parsed = JsonCodec.parseOrder(JsonCodec.orderJson(new Order(7, Long.MIN_VALUE, 3)));
        assertEquals(7, parsed.orderId);
        assertEquals(Long.MIN_VALUE, parsed.productId);
        assertEquals(3, parsed.quantity);
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"quantity\":1}")))
                .contains("no field 'productId'"));
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":\"x\",\"quantity\":1}")))
                .contains("'productId' is not an integer"));
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":2,\"quantity\":1.5}")))
                .contains("'quantity' is not an integer"));
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":2,\"quantity\":-1}")))
                .contains("quantity -1"));
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("nope"))).startsWith("not JSON"));
        assertTrue(reason(() -> JsonCodec.parseOrder(null)).startsWith("no value"));
    }

    @Test
    void productKeyIsTheIdAndTombstonesOrWithdrawalsDelete() throws Exception {
        final Product p = JsonCodec.parseProduct(utf8("42"),
                JsonCodec.productJson(new Product(42, "lamp", 1999, "home", false)));
        assertEquals(42, p.id);
        assertEquals("lamp", p.name);
        assertEquals(1999, p.priceCents);
        assertEquals("home", p.category);
        assertFalse(p.withdrawn);
        // the value's id may be left out: the key decides
        assertEquals(43, JsonCodec.parseProduct(utf8("43"), utf8("{\"priceCents\":5}")).id);
        final Product tombstone = JsonCodec.parseProduct(utf8("-9"), null);
        assertEquals(-9, tombstone.id);
        assertTrue(tombstone.withdrawn);
        assertTrue(JsonCodec.parseProduct(utf8("9"), utf8("{\"id\":9,\"withdrawn\":true}")).withdrawn);

        assertTrue(reason(() -> JsonCodec.parseProduct(null, utf8("{\"priceCents\":5}"))).startsWith("missing key"));
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("4x"), utf8("{\"priceCents\":5}")))
                .contains("not a product id"));
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("8"), utf8("{\"id\":9,\"priceCents\":5}")))
                .contains("differs from the record key 8"));
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("8"), utf8("{\"id\":8}"))).contains("'priceCents'"));
    }

    @Test
    void deadLettersKeepTheOriginalBytesAsTextOrBase64() throws Exception {
        final byte[] notUtf8 = {(byte) 0xC3, (byte) 0x28, 0x7B};
        final DeadLetter binary = DeadLetter.of("orders", "not JSON: x",
                new KafkaRecord("orders", 1, 17, 5, null, notUtf8));
        assertNull(binary.value);
        assertEquals(Base64.getEncoder().encodeToString(notUtf8), binary.valueBase64);
        final JsonNode json = JsonCodec.tree(JsonCodec.deadLetterJson(binary));
        assertEquals("orders", json.path("stage").asText());
        assertEquals(17, json.path("offset").asLong());
        assertEquals(1, json.path("partition").asInt());
        assertTrue(json.path("key").isNull());

        final DeadLetter text = DeadLetter.of("products", "missing key",
                new KafkaRecord("products", 0, 3, 5, utf8("k"), utf8("{\"a\":\"é\"}")));
        assertEquals("{\"a\":\"é\"}", text.value);
        assertEquals("k", text.key);
        assertNull(text.valueBase64);
    }

    @Test
    void enrichedRecordsCarryTheProductAndTheTotalOrNulls() throws Exception {
        final Order order = new Order(5, 42, 3);
        final JsonNode found = JsonCodec.tree(JsonCodec.enrichedJson(new Enriched<>(order, LookupKind.EXACT,
                new Product(42, "lamp", 1999, "home", false), null, null), 1234L));
        assertEquals(5, found.path("orderId").asLong());
        assertEquals(1234, found.path("orderTime").asLong());
        assertEquals("lamp", found.path("product").path("name").asText());
        assertEquals(3 * 1999, found.path("totalCents").asLong());
        assertEquals(JsonNodeType.NUMBER, found.path("totalCents").getNodeType());

        final JsonNode missing = JsonCodec.tree(JsonCodec.enrichedJson(
                new Enriched<Order, Product>(order, LookupKind.EXACT, null, null, null), null));
        assertTrue(missing.path("product").isNull());
        assertTrue(missing.path("totalCents").isNull());
        assertTrue(missing.path("orderTime").isNull());
    }

    @Test
    void recordsTheOperatorRejectsBecomeDeadLettersWithTheirReason() throws Exception {
        final DeadLetter letter = KafkaEnrichmentJob.deadLetter(
                new Rejected("update", "the payload failed to serialize: boom", "lamp 19.99 (home)"));
        final JsonNode json = JsonCodec.tree(JsonCodec.deadLetterJson(letter));
        assertEquals("enrichment", json.path("stage").asText());
        assertEquals("update: the payload failed to serialize: boom", json.path("reason").asText());
        assertEquals("lamp 19.99 (home)", json.path("value").asText());
        assertEquals(-1, json.path("offset").asLong());
        assertTrue(json.path("topic").isNull());
    }

    // ---- numbers: exact, in range, never wrapped or rounded ----

    @Test
    void idsAtBothEndsOfTheRangeRoundTrip() throws Exception {
        for (long id : new long[] {Long.MIN_VALUE, Long.MAX_VALUE}) {
            final Order order = JsonCodec.parseOrder(JsonCodec.orderJson(new Order(id, id, 1)));
            assertEquals(id, order.orderId);
            assertEquals(id, order.productId);
            final Product product = JsonCodec.parseProduct(JsonCodec.productKeyBytes(id),
                    JsonCodec.productJson(new Product(id, "p", 1, "c", false)));
            assertEquals(id, product.id);
        }
    }

    @Test
    void idsBeyondTheRangeAreRejectedNotWrapped() {
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":9223372036854775808,\"productId\":1,"
                + "\"quantity\":1}"))).contains("'orderId' is 9223372036854775808, outside the 64-bit range"));
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":-9223372036854775809,"
                + "\"quantity\":1}"))).contains("'productId' is -9223372036854775809, outside the 64-bit range"));
        // 2^63 would wrap to Long.MIN_VALUE, the key
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("-9223372036854775808"),
                utf8("{\"id\":9223372036854775808,\"priceCents\":1}")))
                .contains("'id' is 9223372036854775808, outside the 64-bit range"));
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("9223372036854775808"), utf8("{\"priceCents\":1}")))
                .contains("the key '9223372036854775808' is not a product id"));
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("1"), utf8("{\"priceCents\":99999999999999999999}")))
                .contains("'priceCents' is 99999999999999999999, outside the 64-bit range"));
    }

    @Test
    void fractionalOrTextualNumbersAreNoIntegers() {
        for (String id : new String[] {"1.5", "1.0", "1e3", "\"42\"", "true"}) {
            assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":" + id + ",\"productId\":1,"
                    + "\"quantity\":1}"))).contains("the field 'orderId' is not an integer: "), id);
            assertTrue(reason(() -> JsonCodec.parseProduct(utf8("1"), utf8("{\"id\":" + id + ",\"priceCents\":1}")))
                    .contains("the field 'id' is not an integer: "), id);
        }
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("1"), utf8("{\"priceCents\":19.99}")))
                .contains("'priceCents' is not an integer: 19.99"));
    }

    @Test
    void quantitiesArePositiveCountsUpTo2To31Minus1() throws Exception {
        assertEquals(Integer.MAX_VALUE, JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":1,"
                + "\"quantity\":2147483647}")).quantity);
        for (String quantity : new String[] {"0", "-1", "-9223372036854775808", "2147483648",
                "9223372036854775807"}) {
            assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":1,\"quantity\":"
                    + quantity + "}"))).contains("the quantity " + quantity + " is not between 1 and 2147483647"),
                    quantity);
        }
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":1,"
                + "\"quantity\":18446744073709551616}"))).contains("outside the 64-bit range"));
    }

    @Test
    void pricesAreWholeCentsZeroOrMore() throws Exception {
        assertEquals(0, JsonCodec.parseProduct(utf8("1"), utf8("{\"priceCents\":0}")).priceCents);
        assertEquals(Long.MAX_VALUE, JsonCodec.parseProduct(utf8("1"),
                utf8("{\"priceCents\":9223372036854775807}")).priceCents);
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("1"), utf8("{\"priceCents\":-150}")))
                .contains("the price -150 cents is negative"));
    }

    @Test
    void aTotalBeyond64BitsIsRejectedWithTheValues() throws Exception {
        final Product costly = new Product(42, "yacht", (1L << 62) + 1, "boats", false);
        final Order two = new Order(5, 42, 2);
        assertTrue(reason(() -> JsonCodec.enrichedJson(new Enriched<>(two, LookupKind.EXACT, costly, null, null),
                1L)).contains("the total of order 5, 2 x 4611686018427387905 cents (product 42), is beyond "
                + Long.MAX_VALUE + " cents"));
        assertTrue(reason(() -> JsonCodec.totalCents(new Order(6, 42, Integer.MAX_VALUE),
                new Product(42, "p", Long.MAX_VALUE / Integer.MAX_VALUE + 1, "c", false))).contains("is beyond"));
        // the largest totals that fit are written exactly
        final Product max = new Product(42, "p", Long.MAX_VALUE, "c", false);
        assertEquals(Long.MAX_VALUE, JsonCodec.tree(JsonCodec.enrichedJson(new Enriched<>(new Order(7, 42, 1),
                LookupKind.EXACT, max, null, null), 1L)).path("totalCents").longValue());
        final long price = Long.MAX_VALUE / Integer.MAX_VALUE;
        assertEquals(price * Integer.MAX_VALUE, JsonCodec.totalCents(new Order(8, 42, Integer.MAX_VALUE),
                new Product(42, "p", price, "c", false)));
    }

    @Test
    void aRejectedProductsTextShowsItsPriceAsAnAmount() {
        assertEquals("update: boom", KafkaEnrichmentJob.deadLetter(new Rejected("update", "boom",
                new Product(1, "lamp", -150, "home", false))).reason);
        assertEquals("lamp -1.50 (home)", KafkaEnrichmentJob.deadLetter(new Rejected("update", "boom",
                new Product(1, "lamp", -150, "home", false))).value);
        assertEquals("lamp 0.05 (home)", new Product(1, "lamp", 5, "home", false).toString());
        assertEquals("lamp -0.05 (home)", new Product(1, "lamp", -5, "home", false).toString());
        assertEquals("lamp -92233720368547758.08 (home)",
                new Product(1, "lamp", Long.MIN_VALUE, "home", false).toString());
    }

    // ---- one JSON object per record ----

    @Test
    void trailingTextAndRepeatedFieldsAreRejected() {
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":2,\"quantity\":1} x")))
                .startsWith("not JSON"));
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":2,\"quantity\":1}{}")))
                .startsWith("not JSON"));
        assertTrue(reason(() -> JsonCodec.parseOrder(utf8("{\"orderId\":1,\"productId\":2,\"productId\":3,"
                + "\"quantity\":1}"))).contains("productId"));
    }

    @Test
    void productFieldsHaveTheirTypesAndNamesTheirLimit() throws Exception {
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("1"), utf8("{\"priceCents\":1,\"name\":{\"a\":1}}")))
                .contains("the field 'name' is not a string"));
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("1"), utf8("{\"priceCents\":1,\"category\":7}")))
                .contains("the field 'category' is not a string: 7"));
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("1"), utf8("{\"priceCents\":1,\"withdrawn\":\"yes\"}")))
                .contains("the field 'withdrawn' is not true or false"));
        final String longest = "é".repeat(JsonCodec.MAX_PRODUCT_TEXT_BYTES / 2);
        assertEquals(longest, JsonCodec.parseProduct(utf8("1"), JsonCodec.productJson(
                new Product(1, longest, 1, "c", false))).name);
        assertTrue(reason(() -> JsonCodec.parseProduct(utf8("1"), JsonCodec.productJson(
                new Product(1, longest + "x", 1, "c", false)))).contains("the field 'name' is "
                + (JsonCodec.MAX_PRODUCT_TEXT_BYTES + 1) + " UTF-8 bytes long, over the limit of "
                + JsonCodec.MAX_PRODUCT_TEXT_BYTES));
    }

    private interface Parse {
        void run() throws Exception;
    }

    private static String reason(Parse parse) {
        return assertThrows(JsonCodec.MalformedRecordException.class, parse::run).getMessage();
    }
}
