package io.flix.examples.cluster;

import io.flix.flink.testing.KafkaBrokerExtension;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One Kafka broker ({@link KafkaBrokerExtension}: KRaft, in the test JVM) for every cluster ITCase of the test run,
 * as {@link SessionClusterExtension} shares one cluster: the first class to need it starts it, it lives in JUnit's
 * root store and JUnit stops it when the run ends. Each class's topics, consumer groups and transactional ids have
 * names of its own (a run's name: "a", "d-alpha", "e", "f", "gpus", "lib-a", ...), so no class reads what another
 * wrote. Register it as a static field with {@code @RegisterExtension}, before the cluster's extension.
 */
public final class SharedKafkaBroker implements BeforeAllCallback {

    private KafkaBrokerExtension broker;

    /** The run's broker, once a class's {@code beforeAll} started or found it. */
    public KafkaBrokerExtension broker() {
        return RunWide.started(broker, "the Kafka broker");
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        final ExtensionContext root = context.getRoot();
        broker = RunWide.getOrStart(context, SharedKafkaBroker.class, Running.class, "the Kafka broker", () -> {
            final KafkaBrokerExtension started = new KafkaBrokerExtension();
            started.beforeAll(root);
            return new Running(started, root);
        }).broker();
    }

    /** The broker in the root store: JUnit closes it (stops the broker, deletes its logs) when the run ends. */
    private record Running(KafkaBrokerExtension broker, ExtensionContext root) implements AutoCloseable {

        @Override
        public void close() throws Exception {
            broker.afterAll(root);
        }
    }
}
