package io.flix.flink.shared;

import io.flix.flink.FlixEnrichment;
import io.flix.flink.Update;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.graph.StreamEdge;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.runtime.partitioner.BroadcastPartitioner;
import org.apache.flink.streaming.runtime.partitioner.ForwardPartitioner;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

/**
 * The job the shared mode builds keeps the update stream's order: the encoder runs at the update stream's
 * parallelism, forward from it (chained), so each upstream subtask's updates reach every writer through one channel,
 * in order. At another parallelism a rebalance would spread one key's updates over several encoders, and the
 * writers would interleave them in any order.
 */
class SharedEnrichmentGraphTest {

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 4})
    void theEncoderRunsForwardFromTheUpdatesAtTheirParallelism(int updateParallelism) {
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(4);
        final DataStream<Update> updates = env.fromData(new Update(1, "a"), new Update(1, "b"))
                .map(u -> u).returns(Update.class).setParallelism(updateParallelism).name("updates");
        final DataStream<Long> lookups = env.fromData(1L, 2L);
        FlixEnrichment.shared(updates, lookups).key(u -> u.key, k -> k).payload(u -> u.payload, Types.STRING)
                .uid("graph").build().sinkTo(new DiscardingSink<>());
        final StreamGraph graph = env.getStreamGraph();

        final StreamNode encoder = node(graph, "FliX enrichment: encode updates");
        assertEquals(updateParallelism, encoder.getParallelism(), "the encoder's parallelism");
        final List<StreamEdge> in = encoder.getInEdges();
        assertEquals(1, in.size());
        assertEquals("updates", graph.getStreamNode(in.get(0).getSourceId()).getOperatorName());
        assertInstanceOf(ForwardPartitioner.class, in.get(0).getPartitioner(), "forward from the updates");
        final StreamNode writer = node(graph, "FliX enrichment: dimension");
        assertEquals(4, writer.getParallelism(), "the writers at the lookups' parallelism");
        assertInstanceOf(BroadcastPartitioner.class, writer.getInEdges().get(0).getPartitioner());
        final StreamNode updateSource = node(graph, "updates");
        assertEquals(List.of(encoder.getId()), updateSource.getOutEdges().stream().map(StreamEdge::getTargetId)
                .toList(), "the updates feed the encoder alone: with object reuse off each consumer of theirs copies "
                + "every update");
        final StreamNode guard = node(graph, "FliX enrichment: mode guard");
        assertEquals("graph", guard.getTransformationUID(), "the guard holds the enrichment's uid");
        assertEquals(List.of(writer.getId()), guard.getInEdges().stream().map(StreamEdge::getSourceId).toList(),
                "the guard hangs off the writer, which emits no record");
    }

    private static StreamNode node(StreamGraph graph, String name) {
        return graph.getStreamNodes().stream().filter(n -> n.getOperatorName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no node " + name));
    }
}
