package io.flix.examples.kafka;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.flink.Enriched;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The JSON of the pipeline's topics, one place for the job, the generator and the tests.
 *
 * <ul>
 *   <li>orders: value {@code {"orderId":1,"productId":42,"quantity":3}}; the record's timestamp is the order's
 *       event time; the key (the order id) is not read.</li>
 *   <li>products (a changelog, keyed by the product id in decimal): value
 *       {@code {"id":42,"name":"...","priceCents":1999,"category":"books"}}; a null value (tombstone) or
 *       {@code "withdrawn":true} deletes the product.</li>
 *   <li>enriched orders: the order, its event time, its product (null where none) and the total.</li>
 *   <li>dead letters: {@link DeadLetter} as JSON, at most {@value DeadLetter#MAX_ENCODED_BYTES} bytes.</li>
 * </ul>
 *
 * <h2>What is accepted</h2>
 * A record is one JSON object (nothing after it, no field twice). Ids, quantities and prices are JSON integer
 * literals within the signed 64-bit range, Long.MIN_VALUE and Long.MAX_VALUE included: {@code 1.5}, {@code 1.0},
 * {@code 1e3}, {@code "42"} and {@code 9223372036854775808} (2^63) are rejected, never rounded or wrapped. A
 * quantity is a count of items, 1 to 2^31 - 1 (zero and negative quantities are rejected); a price is a whole
 * number of cents, zero or more (a negative price is rejected). A name or category is a JSON string of at most
 * {@value #MAX_PRODUCT_TEXT_BYTES} UTF-8 bytes, so that an enriched order stays small. An order whose total
 * (price x quantity) does not fit in 64 bits is not written as an enriched order ({@link #enrichedJson} rejects
 * it). Each rejection names the field and the value; the job sends the record to the dead-letter topic with it.
 */
public final class JsonCodec {

    /** The most UTF-8 bytes of a product's name and of its category. */
    public static final int MAX_PRODUCT_TEXT_BYTES = 4096;

    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY);

    private JsonCodec() {
    }

    /** A record that cannot be used, with the reason. */
    public static final class MalformedRecordException extends Exception {
        private static final long serialVersionUID = 1L;

        public MalformedRecordException(String reason) {
            super(reason);
        }
    }

    // ---- orders ----

    public static Order parseOrder(byte[] value) throws MalformedRecordException {
        final JsonNode node = object(value, "order");
        final long orderId = requiredLong(node, "orderId");
        final long productId = requiredLong(node, "productId");
        final long quantity = requiredLong(node, "quantity");
        if (quantity < 1 || quantity > Integer.MAX_VALUE) {
            throw new MalformedRecordException("the quantity " + quantity + " is not between 1 and "
                    + Integer.MAX_VALUE);
        }
        return new Order(orderId, productId, (int) quantity);
    }

    public static byte[] orderJson(Order order) {
        final ObjectNode node = MAPPER.createObjectNode();
        node.put("orderId", order.orderId);
        node.put("productId", order.productId);
        node.put("quantity", order.quantity);
        return bytes(node);
    }

    // ---- products ----

    /** The product id a changelog key names, in decimal. */
    public static long productKey(byte[] key) throws MalformedRecordException {
        if (key == null) {
            throw new MalformedRecordException("missing key: a product record needs its product id as the key");
        }
        final String text = new String(key, StandardCharsets.UTF_8).trim();
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new MalformedRecordException("the key '" + cut(text) + "' is not a product id (a decimal integer "
                    + "from " + Long.MIN_VALUE + " to " + Long.MAX_VALUE + ")");
        }
    }

    /** A changelog record as a product; a tombstone (null value) becomes a withdrawn product. */
    public static Product parseProduct(byte[] key, byte[] value) throws MalformedRecordException {
        final long id = productKey(key);
        if (value == null) {
            return new Product(id, null, 0, null, true);
        }
        final JsonNode node = object(value, "product");
        final Long valueId = optionalLong(node, "id");
        if (valueId != null && valueId != id) {
            throw new MalformedRecordException("the id " + valueId + " differs from the record key " + id);
        }
        final JsonNode withdrawn = node.get("withdrawn");
        if (withdrawn != null && !withdrawn.isNull() && !withdrawn.isBoolean()) {
            throw new MalformedRecordException("the field 'withdrawn' is not true or false: "
                    + cut(withdrawn.toString()));
        }
        if (withdrawn != null && withdrawn.booleanValue()) {
            return new Product(id, null, 0, null, true);
        }
        final long priceCents = requiredLong(node, "priceCents");
        if (priceCents < 0) {
            throw new MalformedRecordException("the price " + priceCents + " cents is negative");
        }
        return new Product(id, optionalText(node, "name"), priceCents, optionalText(node, "category"), false);
    }

    public static byte[] productKeyBytes(long id) {
        return Long.toString(id).getBytes(StandardCharsets.UTF_8);
    }

    public static byte[] productJson(Product product) {
        final ObjectNode node = MAPPER.createObjectNode();
        node.put("id", product.id);
        node.put("name", product.name);
        node.put("priceCents", product.priceCents);
        node.put("category", product.category);
        return bytes(node);
    }

    // ---- enriched orders and dead letters ----

    /** The order's total, price x quantity, in cents; rejected where it does not fit in 64 bits. */
    public static long totalCents(Order order, Product product) throws MalformedRecordException {
        try {
            return Math.multiplyExact(product.priceCents, (long) order.quantity);
        } catch (ArithmeticException e) {
            throw new MalformedRecordException("the total of order " + order.orderId + ", " + order.quantity
                    + " x " + product.priceCents + " cents (product " + product.id + "), is beyond "
                    + Long.MAX_VALUE + " cents");
        }
    }

    /**
     * {@code {"orderId":..,"productId":..,"quantity":..,"orderTime":..,"product":{..}|null,"totalCents":..|null}}.
     *
     * @throws MalformedRecordException where the total does not fit in 64 bits ({@link #totalCents})
     */
    public static byte[] enrichedJson(Enriched<Order, Product> enriched, Long timestamp)
            throws MalformedRecordException {
        final Order order = enriched.event;
        final Product product = enriched.payload;
        final ObjectNode node = MAPPER.createObjectNode();
        node.put("orderId", order.orderId);
        node.put("productId", order.productId);
        node.put("quantity", order.quantity);
        if (timestamp == null) {
            node.putNull("orderTime");
        } else {
            node.put("orderTime", timestamp.longValue());
        }
        if (product == null) {
            node.putNull("product");
            node.putNull("totalCents");
        } else {
            final ObjectNode p = node.putObject("product");
            p.put("id", product.id);
            p.put("name", product.name);
            p.put("priceCents", product.priceCents);
            p.put("category", product.category);
            node.put("totalCents", totalCents(order, product));
        }
        return bytes(node);
    }

    /** The letter as JSON, within its limits ({@link DeadLetter#bounded()}) whatever it holds. */
    public static byte[] deadLetterJson(DeadLetter letter) {
        try {
            return MAPPER.writeValueAsBytes(letter.bounded());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e); // a POJO of plain values always writes
        }
    }

    /** Reads any JSON text (tests and the generator's checks). */
    public static JsonNode tree(byte[] json) throws IOException {
        return MAPPER.readTree(json);
    }

    // ---- helpers ----

    private static JsonNode object(byte[] value, String what) throws MalformedRecordException {
        if (value == null) {
            throw new MalformedRecordException("no value: an " + what + " record needs a JSON object");
        }
        final JsonNode node;
        try {
            node = MAPPER.readTree(value);
        } catch (IOException e) {
            throw new MalformedRecordException("not JSON: " + firstLine(e));
        }
        if (node == null || !node.isObject()) {
            throw new MalformedRecordException("not a JSON object: " + (node == null ? "empty" : node.getNodeType()));
        }
        return node;
    }

    private static long requiredLong(JsonNode node, String field) throws MalformedRecordException {
        final Long v = optionalLong(node, field);
        if (v == null) {
            throw new MalformedRecordException("missing key: no field '" + field + "'");
        }
        return v;
    }

    /**
     * The field as a signed 64-bit integer, null where absent or null. Jackson reads an integer literal as an int,
     * long or BigInteger node by its size, and says whether it fits a long: a literal beyond the range is rejected,
     * not wrapped; a fraction or exponent is no integer.
     */
    private static Long optionalLong(JsonNode node, String field) throws MalformedRecordException {
        final JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isIntegralNumber()) {
            throw new MalformedRecordException("the field '" + field + "' is not an integer: " + cut(v.toString()));
        }
        if (!v.canConvertToLong()) {
            throw new MalformedRecordException("the field '" + field + "' is " + cut(v.toString())
                    + ", outside the 64-bit range " + Long.MIN_VALUE + " to " + Long.MAX_VALUE);
        }
        return v.longValue();
    }

    private static String optionalText(JsonNode node, String field) throws MalformedRecordException {
        final JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new MalformedRecordException("the field '" + field + "' is not a string: " + cut(v.toString()));
        }
        final String text = v.textValue();
        final int utf8Bytes = text.getBytes(StandardCharsets.UTF_8).length;
        if (utf8Bytes > MAX_PRODUCT_TEXT_BYTES) {
            throw new MalformedRecordException("the field '" + field + "' is " + utf8Bytes + " UTF-8 bytes long, "
                    + "over the limit of " + MAX_PRODUCT_TEXT_BYTES);
        }
        return text;
    }

    private static byte[] bytes(JsonNode node) {
        try {
            return MAPPER.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e); // a tree of plain values always writes
        }
    }

    private static String firstLine(Exception e) {
        final String message = String.valueOf(e.getMessage());
        final int newline = message.indexOf('\n');
        return cut(newline < 0 ? message : message.substring(0, newline));
    }

    private static String cut(String text) {
        return text.length() > 200 ? text.substring(0, 200) + "..." : text;
    }
}
