package io.flix.examples.kafka;

import io.flix.flink.Rejected;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A dead letter always fits in a Kafka request, whatever the record held, and says what it left out. */
class DeadLetterTest {

    private static final int KIB_900 = 900 * 1024;
    private static final int MB_5 = 5 * 1000 * 1000;

    @Test
    void theBoundIsUnderHalfTheProducersDefaultRequestSize() {
        final int maxRequestSize = (Integer) ProducerConfig.configDef().defaultValues()
                .get(ProducerConfig.MAX_REQUEST_SIZE_CONFIG);
        assertTrue(DeadLetter.MAX_ENCODED_BYTES <= maxRequestSize / 2,
                DeadLetter.MAX_ENCODED_BYTES + " of " + maxRequestSize);
    }

    /** Values of each kind, at 900 KiB and 5 MB. */
    static Stream<Arguments> largeValues() {
        return Stream.of(KIB_900, MB_5).flatMap(size -> Stream.of(
                Arguments.of("binary", size, binary(size)),
                Arguments.of("control characters", size, repeated(size, "\u0001\u001f\n\"\\")),
                Arguments.of("multi-byte UTF-8", size, repeated(size, "é€😀\u0007")),
                Arguments.of("invalid UTF-8 at the end", size, invalidAtTheEnd(size))));
    }

    @ParameterizedTest(name = "{0}, {1} bytes")
    @MethodSource("largeValues")
    void aLargeRecordBecomesATruncatedLetterThatFits(String kind, int size, byte[] value) throws Exception {
        final byte[] key = repeated(5000, "k\u0002");
        final DeadLetter letter = DeadLetter.of("orders", "not JSON: " + kind,
                new KafkaRecord("orders", 3, 123_456_789_012L, 5, key, value));
        final byte[] encoded = JsonCodec.deadLetterJson(letter);
        assertTrue(encoded.length <= DeadLetter.MAX_ENCODED_BYTES, encoded.length + " bytes");

        final JsonNode json = JsonCodec.tree(encoded);
        assertEquals("orders", json.path("topic").asText());
        assertEquals(3, json.path("partition").asInt());
        assertEquals(123_456_789_012L, json.path("offset").asLong());
        assertEquals("not JSON: " + kind, json.path("reason").asText());
        assertTrue(json.path("truncated").asBoolean());
        assertEquals(value.length, json.path("valueBytes").asLong());
        assertEquals(sha256(value), json.path("valueSha256").asText());
        assertEquals(key.length, json.path("keyBytes").asLong());
        // what it carries is the start of the record, as text where the whole value is UTF-8, else base64
        final byte[] carried = json.path("value").isTextual()
                ? json.path("value").asText().getBytes(StandardCharsets.UTF_8)
                : Base64.getDecoder().decode(json.path("valueBase64").asText());
        assertTrue(carried.length > DeadLetter.MAX_VALUE_BYTES - 4 && carried.length <= DeadLetter.MAX_VALUE_BYTES,
                carried.length + " bytes carried");
        assertArrayEquals(Arrays.copyOf(value, carried.length), carried);
        assertEquals(!kind.startsWith("binary") && !kind.startsWith("invalid"), json.path("value").isTextual());
        assertArrayEquals(Arrays.copyOf(key, DeadLetter.MAX_KEY_BYTES),
                json.path("key").asText().getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aSmallRecordIsCarriedWholeAndNotMarkedTruncated() throws Exception {
        final byte[] value = "{\"a\":\"é\u0001\"".getBytes(StandardCharsets.UTF_8);
        final JsonNode json = JsonCodec.tree(JsonCodec.deadLetterJson(DeadLetter.of("orders", "not JSON",
                new KafkaRecord("orders", 0, 1, 5, null, value))));
        assertFalse(json.path("truncated").asBoolean());
        assertEquals("{\"a\":\"é\u0001\"", json.path("value").asText());
        assertEquals(value.length, json.path("valueBytes").asLong());
        assertEquals(sha256(value), json.path("valueSha256").asText());
        assertTrue(json.path("key").isNull());
        assertEquals(-1, json.path("keyBytes").asLong());

        final byte[] keyAtTheLimit = binary(DeadLetter.MAX_KEY_BYTES);
        final byte[] valueAtTheLimit = binary(DeadLetter.MAX_VALUE_BYTES);
        final JsonNode atLimit = JsonCodec.tree(JsonCodec.deadLetterJson(DeadLetter.of("orders", "not JSON",
                new KafkaRecord("orders", 0, 1, 5, keyAtTheLimit, valueAtTheLimit))));
        assertFalse(atLimit.path("truncated").asBoolean());
        assertArrayEquals(valueAtTheLimit, Base64.getDecoder().decode(atLimit.path("valueBase64").asText()));
        assertArrayEquals(keyAtTheLimit, Base64.getDecoder().decode(atLimit.path("keyBase64").asText()));
        assertTrue(atLimit.path("key").isNull());
    }

    @Test
    void aTombstoneHasNoValueAndIsNotTruncated() throws Exception {
        final JsonNode json = JsonCodec.tree(JsonCodec.deadLetterJson(DeadLetter.of("products", "x",
                new KafkaRecord("products", 1, 2, 5, "k".getBytes(StandardCharsets.UTF_8), null))));
        assertTrue(json.path("value").isNull());
        assertTrue(json.path("valueBase64").isNull());
        assertTrue(json.path("valueSha256").isNull());
        assertEquals(-1, json.path("valueBytes").asLong());
        assertEquals("k", json.path("key").asText());
        assertFalse(json.path("truncated").asBoolean());
    }

    @Test
    void anOperatorRejectionWithAHugeReasonOrRecordTextFitsToo() throws Exception {
        final String controlText = "\u0001".repeat(MB_5);
        final byte[] rejected = JsonCodec.deadLetterJson(
                KafkaEnrichmentJob.deadLetter(new Rejected("update", controlText, controlText)));
        assertTrue(rejected.length <= DeadLetter.MAX_ENCODED_BYTES, rejected.length + " bytes");
        final JsonNode json = JsonCodec.tree(rejected);
        assertEquals("enrichment", json.path("stage").asText());
        assertTrue(json.path("truncated").asBoolean());
        assertEquals("update: " + "\u0001".repeat(DeadLetter.MAX_TEXT_BYTES - 8), json.path("reason").asText());
        assertTrue(json.path("topic").isNull());
        assertEquals(-1, json.path("offset").asLong());

        final byte[] text = JsonCodec.deadLetterJson(DeadLetter.of("enrichment", "too long", controlText));
        assertTrue(text.length <= DeadLetter.MAX_ENCODED_BYTES, text.length + " bytes");
        final JsonNode textJson = JsonCodec.tree(text);
        assertTrue(textJson.path("truncated").asBoolean());
        assertEquals(MB_5, textJson.path("valueBytes").asLong());
        assertEquals(DeadLetter.MAX_VALUE_BYTES, textJson.path("value").asText().length());
    }

    @Test
    void aLetterFilledByHandIsBoundedByTheEncoder() throws Exception {
        // every field at its worst: control characters take 6 bytes escaped; lone surrogates are written too
        final String worst = "\u0001".repeat(MB_5);
        final DeadLetter letter = new DeadLetter();
        letter.stage = worst;
        letter.reason = "\ud800".repeat(MB_5);
        letter.topic = worst;
        letter.partition = Integer.MIN_VALUE;
        letter.offset = Long.MIN_VALUE;
        letter.key = worst;
        letter.keyBase64 = "A".repeat(MB_5);
        letter.keyBytes = Long.MIN_VALUE;
        letter.value = worst;
        letter.valueBase64 = "A".repeat(MB_5);
        letter.valueBytes = Long.MIN_VALUE;
        letter.valueSha256 = worst;
        final byte[] encoded = JsonCodec.deadLetterJson(letter);
        assertTrue(encoded.length <= DeadLetter.MAX_ENCODED_BYTES, encoded.length + " bytes");
        assertTrue(encoded.length > DeadLetter.MAX_ENCODED_BYTES * 3 / 4, "near the worst case: " + encoded.length);
        assertTrue(JsonCodec.tree(encoded).path("truncated").asBoolean());
        assertFalse(letter.truncated, "the encoder leaves the letter it was given alone");
    }

    @Test
    void aLetterIsAFlinkPojo() {
        // serialized field by field between the job's tasks, not by Kryo
        assertTrue(TypeInformation.of(DeadLetter.class) instanceof PojoTypeInfo);
    }

    @Test
    void cuttingNeverSplitsACharacter() {
        assertEquals("ab", DeadLetter.cutText("abé", 3));
        assertEquals("abé", DeadLetter.cutText("abé", 4));
        assertEquals("a", DeadLetter.cutText("a😀", 4));
        assertEquals("a😀", DeadLetter.cutText("a😀", 5));
        assertEquals("a\ud800", DeadLetter.cutText("a\ud800b", 4));
        assertNull(DeadLetter.cutText(null, 4));
    }

    // ---- values ----

    private static byte[] binary(int size) {
        final byte[] bytes = new byte[size];
        new SplittableRandom(size).nextBytes(bytes);
        bytes[0] = (byte) 0xFF; // never valid UTF-8
        return bytes;
    }

    /** {@code unit} repeated to {@code size} UTF-8 bytes or a little less. */
    private static byte[] repeated(int size, String unit) {
        final byte[] one = unit.getBytes(StandardCharsets.UTF_8);
        return Arrays.copyOf((unit.repeat(size / one.length)).getBytes(StandardCharsets.UTF_8),
                size / one.length * one.length);
    }

    private static byte[] invalidAtTheEnd(int size) {
        final byte[] bytes = repeated(size, "text ");
        bytes[bytes.length - 1] = (byte) 0xC3; // a lead byte with nothing after it
        return bytes;
    }

    private static String sha256(byte[] bytes) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }
}
