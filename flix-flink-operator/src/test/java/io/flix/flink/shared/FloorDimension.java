package io.flix.flink.shared;

import io.flix.flink.Enriched;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The dimension of the shared mode's floor-lookup job tests: keys 0, 3, 6, ... with payload "v" + key, and the
 * answer a floor lookup of a probe must give, written as the tests' sinks write an enriched probe.
 */
final class FloorDimension {

    final TreeMap<Long, String> oracle = new TreeMap<>();
    final List<Long> updateKeys = new ArrayList<>();

    FloorDimension(int keys) {
        for (long k = 0; k < keys; k++) {
            oracle.put(k * 3, "v" + k * 3);
            updateKeys.add(k * 3);
        }
    }

    /** An enriched probe as the sinks write it: "probe->matched key:payload". */
    static String written(Enriched<Long, String> enriched) {
        return enriched.event + "->" + enriched.matchedKey + ":" + enriched.payload;
    }

    /** What the sink must have written for {@code probe}, from the oracle's floor entry. */
    String floorAnswer(long probe) {
        final Map.Entry<Long, String> floor = oracle.floorEntry(probe);
        return probe + "->" + (floor == null ? null : floor.getKey()) + ":" + (floor == null ? null : floor.getValue());
    }
}
