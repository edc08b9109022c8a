package io.flix.examples.kafka;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;

/**
 * A record the pipeline could not use, with the reason, as written to the dead-letter topic. A Flink POJO.
 *
 * <p>A letter names where the record came from (topic, partition, offset: read the whole record there) and carries
 * its key and value: as text where the bytes are valid UTF-8, else base64 ({@link #keyBase64},
 * {@link #valueBase64}). Records the enrichment rejected carry the operator's reason and the record's text.
 *
 * <h2>Size: a letter always fits in a Kafka request</h2>
 * A letter carries at most the first {@value #MAX_VALUE_BYTES} bytes of the value and {@value #MAX_KEY_BYTES} of
 * the key (text is cut at a character boundary), and at most {@value #MAX_TEXT_BYTES} UTF-8 bytes of its stage,
 * reason and topic. Where anything was cut, {@link #truncated} is true; {@link #keyBytes}, {@link #valueBytes} and
 * {@link #valueSha256} always describe the whole original. JSON escaping grows text at most sixfold (a control
 * character is written as a six-character escape), so whatever the bytes, the encoded letter
 * ({@link JsonCodec#deadLetterJson}) is at most {@value #MAX_ENCODED_BYTES} bytes: under half the
 * Kafka producer's default {@code max.request.size} (1 MiB), so that the dead-letter sink never fails on a letter.
 * The encoder applies these limits to every letter ({@link #bounded()}), however it was made.
 */
public class DeadLetter {

    /** The most of a record's value that a letter carries. */
    public static final int MAX_VALUE_BYTES = 64 * 1024;
    /** The most of a record's key that a letter carries. */
    public static final int MAX_KEY_BYTES = 1024;
    /** The most UTF-8 bytes of the stage, the reason and the topic. */
    public static final int MAX_TEXT_BYTES = 1024;
    private static final int SHA256_HEX_CHARS = 64;
    /** Field names, punctuation, numbers and booleans of the JSON object: about 300 bytes, rounded up. */
    private static final int ENVELOPE_BYTES = 1024;
    /** The most bytes one UTF-8 byte of text (or one lone surrogate, counted as 3) takes once JSON-escaped. */
    private static final int ESCAPE_GROWTH = 6;
    /** The largest encoded letter, whatever it carries (key and value as base64: 4 characters per 3 bytes). */
    public static final int MAX_ENCODED_BYTES = ENVELOPE_BYTES
            + ESCAPE_GROWTH * (3 * MAX_TEXT_BYTES + MAX_KEY_BYTES + MAX_VALUE_BYTES + SHA256_HEX_CHARS)
            + 4 * ((MAX_KEY_BYTES + 2) / 3) + 4 * ((MAX_VALUE_BYTES + 2) / 3);

    /**
     * {@code orders}, {@code products}, or {@code enrichment} for records the FliX operator rejected and enriched
     * orders that cannot be written.
     */
    public String stage;
    public String reason;
    /** The source topic, partition and offset; null and -1 where the record did not come from a topic. */
    public String topic;
    public int partition = -1;
    public long offset = -1;
    /** The key as text; null where there was none or it is not UTF-8 (then see {@link #keyBase64}). */
    public String key;
    public String keyBase64;
    /** The whole key's size in bytes; -1 where there was none. */
    public long keyBytes = -1;
    /** The value as text; null where it was a tombstone or not UTF-8 (then see {@link #valueBase64}). */
    public String value;
    public String valueBase64;
    /** The whole value's size in bytes (UTF-8 for a record's text); -1 where there was none. */
    public long valueBytes = -1;
    /** The SHA-256 of the whole value, in hex: to check a record found at the offset; null where none. */
    public String valueSha256;
    /** True where the letter carries less than the whole key, value, stage, reason or topic. */
    public boolean truncated;

    public DeadLetter() {
    }

    /** A letter for a Kafka record that could not be used: its origin, the reason, its key and value. */
    public static DeadLetter of(String stage, String reason, KafkaRecord record) {
        final DeadLetter letter = new DeadLetter();
        letter.stage = stage;
        letter.reason = reason;
        letter.topic = record.topic;
        letter.partition = record.partition;
        letter.offset = record.offset;
        letter.carryKey(record.key);
        letter.carryValue(record.value);
        return letter.bounded();
    }

    /** A letter for a record that did not come from a topic (the operator's rejections): its text. */
    public static DeadLetter of(String stage, String reason, String recordText) {
        final DeadLetter letter = new DeadLetter();
        letter.stage = stage;
        letter.reason = reason;
        letter.carryValue(recordText == null ? null : recordText.getBytes(StandardCharsets.UTF_8));
        return letter.bounded();
    }

    /** A copy of this letter with every field within its limit; {@link #truncated} where one was cut. */
    public DeadLetter bounded() {
        final DeadLetter b = new DeadLetter();
        b.truncated = truncated;
        b.stage = b.fit(stage, MAX_TEXT_BYTES);
        b.reason = b.fit(reason, MAX_TEXT_BYTES);
        b.topic = b.fit(topic, MAX_TEXT_BYTES);
        b.partition = partition;
        b.offset = offset;
        b.key = b.fit(key, MAX_KEY_BYTES);
        b.keyBase64 = b.fitBase64(keyBase64, MAX_KEY_BYTES);
        b.keyBytes = keyBytes;
        b.value = b.fit(value, MAX_VALUE_BYTES);
        b.valueBase64 = b.fitBase64(valueBase64, MAX_VALUE_BYTES);
        b.valueBytes = valueBytes;
        b.valueSha256 = b.fit(valueSha256, SHA256_HEX_CHARS);
        return b;
    }

    @Override
    public String toString() {
        return stage + " " + topic + "-" + partition + "@" + offset + ": " + reason;
    }

    private void carryKey(byte[] bytes) {
        if (bytes == null) {
            return;
        }
        keyBytes = bytes.length;
        final String text = utf8(bytes);
        if (text != null) {
            key = text;
        } else {
            keyBase64 = base64Prefix(bytes, MAX_KEY_BYTES);
            truncated |= bytes.length > MAX_KEY_BYTES;
        }
    }

    private void carryValue(byte[] bytes) {
        if (bytes == null) {
            return;
        }
        valueBytes = bytes.length;
        valueSha256 = sha256(bytes);
        final String text = utf8(bytes);
        if (text != null) {
            value = text;
        } else {
            valueBase64 = base64Prefix(bytes, MAX_VALUE_BYTES);
            truncated |= bytes.length > MAX_VALUE_BYTES;
        }
    }

    /** {@code text} cut to {@code maxBytes} of UTF-8; marks this letter truncated where it was cut. */
    private String fit(String text, int maxBytes) {
        final String cut = cutText(text, maxBytes);
        truncated |= text != null && cut.length() < text.length();
        return cut;
    }

    private String fitBase64(String base64, int maxBytes) {
        if (base64 == null || base64.length() <= base64Chars(maxBytes)) {
            return base64;
        }
        truncated = true;
        return base64.substring(0, base64Chars(maxBytes));
    }

    /**
     * The longest prefix of {@code text} whose UTF-8 encoding takes at most {@code maxBytes}, never splitting a
     * surrogate pair; a lone surrogate counts 3 bytes. Returns {@code text} itself where it fits.
     */
    static String cutText(String text, int maxBytes) {
        if (text == null || text.length() <= maxBytes / 3) {
            return text;
        }
        int bytes = 0;
        for (int i = 0; i < text.length(); i++) {
            final char c = text.charAt(i);
            final int width;
            final int chars;
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                width = 4;
                chars = 2;
            } else {
                width = c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
                chars = 1;
            }
            if (bytes + width > maxBytes) {
                return text.substring(0, i);
            }
            bytes += width;
            i += chars - 1;
        }
        return text;
    }

    /** Base64 of at most the first {@code maxBytes} of {@code bytes}. */
    private static String base64Prefix(byte[] bytes, int maxBytes) {
        return Base64.getEncoder().encodeToString(
                bytes.length <= maxBytes ? bytes : Arrays.copyOf(bytes, maxBytes));
    }

    private static int base64Chars(int bytes) {
        return 4 * ((bytes + 2) / 3);
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

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
