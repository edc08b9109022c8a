package io.flix.examples.kafka;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.flink.Enriched;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

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
 *   <li>dead letters: {@link DeadLetter} as JSON.</li>
 * </ul>
 */
public final class JsonCodec {

    private static final ObjectMapper MAPPER = new ObjectMapper();

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
            throw new MalformedRecordException("the quantity " + quantity + " is not between 1 and 2^31 - 1");
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
            throw new MalformedRecordException("the key '" + cut(text) + "' is not a product id");
        }
    }

    /** A changelog record as a product; a tombstone (null value) becomes a withdrawn product. */
    public static Product parseProduct(byte[] key, byte[] value) throws MalformedRecordException {
        final long id = productKey(key);
        if (value == null) {
            return new Product(id, null, 0, null, true);
        }
        final JsonNode node = object(value, "product");
        final JsonNode idNode = node.get("id");
        if (idNode != null && !idNode.isNull() && (!idNode.canConvertToExactIntegral() || idNode.asLong() != id)) {
            throw new MalformedRecordException("the id " + idNode + " differs from the record key " + id);
        }
        final boolean withdrawn = node.path("withdrawn").asBoolean(false);
        if (withdrawn) {
            return new Product(id, null, 0, null, true);
        }
        return new Product(id, optionalText(node, "name"), requiredLong(node, "priceCents"),
                optionalText(node, "category"), false);
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

    /**
     * {@code {"orderId":..,"productId":..,"quantity":..,"orderTime":..,"product":{..}|null,"totalCents":..|null}}.
     */
    public static byte[] enrichedJson(Enriched<Order, Product> enriched, Long timestamp) {
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
            node.put("totalCents", product.priceCents * order.quantity);
        }
        return bytes(node);
    }

    public static byte[] deadLetterJson(DeadLetter letter) {
        return bytes(MAPPER.valueToTree(letter));
    }

    /** A dead letter for a record that could not be parsed: its origin, the reason and its bytes. */
    public static DeadLetter deadLetter(String stage, String reason, KafkaRecord record) {
        final DeadLetter letter = new DeadLetter();
        letter.stage = stage;
        letter.reason = reason;
        letter.topic = record.topic;
        letter.partition = record.partition;
        letter.offset = record.offset;
        letter.key = record.key == null ? null : textOrBase64(record.key);
        if (record.value != null) {
            final String text = utf8(record.value);
            if (text != null) {
                letter.value = text;
            } else {
                letter.valueBase64 = Base64.getEncoder().encodeToString(record.value);
            }
        }
        return letter;
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
        final JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            throw new MalformedRecordException("missing key: no field '" + field + "'");
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new MalformedRecordException("the field '" + field + "' is not an integer: " + cut(v.toString()));
        }
        return v.asLong();
    }

    private static String optionalText(JsonNode node, String field) {
        final JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    private static byte[] bytes(JsonNode node) {
        try {
            return MAPPER.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e); // a tree of plain values always writes
        }
    }

    private static String textOrBase64(byte[] bytes) {
        final String text = utf8(bytes);
        return text != null ? text : "base64:" + Base64.getEncoder().encodeToString(bytes);
    }

    /** The bytes as UTF-8 text, or null where they are not valid UTF-8. */
    private static String utf8(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return null;
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
