package io.flix.examples.kafka;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.flink.Enriched;
import io.flix.flink.LookupKind;
import io.flix.flink.Rejected;

import com.fasterxml.jackson.databind.JsonNode;
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
        final DeadLetter binary = JsonCodec.deadLetter("orders", "not JSON: x",
                new KafkaRecord("orders", 1, 17, 5, null, notUtf8));
        assertNull(binary.value);
        assertEquals(Base64.getEncoder().encodeToString(notUtf8), binary.valueBase64);
        final JsonNode json = JsonCodec.tree(JsonCodec.deadLetterJson(binary));
        assertEquals("orders", json.path("stage").asText());
        assertEquals(17, json.path("offset").asLong());
        assertEquals(1, json.path("partition").asInt());
        assertTrue(json.path("key").isNull());

        final DeadLetter text = JsonCodec.deadLetter("products", "missing key",
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

    private interface Parse {
        void run() throws Exception;
    }

    private static String reason(Parse parse) {
        return assertThrows(JsonCodec.MalformedRecordException.class, parse::run).getMessage();
    }
}
