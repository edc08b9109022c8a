package io.flix.flink;

import java.util.List;
import java.util.Objects;

/**
 * A lookup event with what the dimension held for it. A Flink POJO (its type information comes from
 * {@link FlixEnrichment#enrichedType}: {@link EnrichedTypeInfo}, whose serializer copies it without reflection).
 *
 * <ul>
 *   <li>{@link LookupKind#EXACT}: {@link #payload} is the key's payload, null where absent.</li>
 *   <li>{@link LookupKind#FLOOR}, {@link LookupKind#CEILING}: {@link #matchedKey} is the key found and
 *       {@link #payload} its payload; both null where none.</li>
 *   <li>{@link LookupKind#RANGE}: {@link #matches} holds the keys found in key order (empty where none).</li>
 * </ul>
 */
public final class Enriched<E, P> {

    public E event;
    public LookupKind kind;
    public P payload;
    public Long matchedKey;
    public List<Match<P>> matches;

    public Enriched() {
    }

    public Enriched(E event, LookupKind kind, P payload, Long matchedKey, List<Match<P>> matches) {
        this.event = event;
        this.kind = kind;
        this.payload = payload;
        this.matchedKey = matchedKey;
        this.matches = matches;
    }

    /** Whether the lookup found anything. */
    public boolean found() {
        return kind == LookupKind.RANGE ? matches != null && !matches.isEmpty() : payload != null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Enriched<?, ?> e && Objects.equals(event, e.event) && kind == e.kind
                && Objects.equals(payload, e.payload) && Objects.equals(matchedKey, e.matchedKey)
                && Objects.equals(matches, e.matches);
    }

    @Override
    public int hashCode() {
        return Objects.hash(event, kind, payload, matchedKey, matches);
    }

    @Override
    public String toString() {
        final StringBuilder s = new StringBuilder("Enriched{").append(kind).append(' ').append(event).append(" -> ");
        if (kind == LookupKind.RANGE) {
            s.append(matches);
        } else if (matchedKey != null) {
            s.append(matchedKey).append('=').append(payload);
        } else {
            s.append(payload);
        }
        return s.append('}').toString();
    }
}
