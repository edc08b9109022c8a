package io.flix.flink.testing;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real single-node KRaft Kafka broker in the test JVM (Kafka's own KafkaClusterTestKit), started once per test
 * class and deleted afterwards. Register it as a static field with {@code @RegisterExtension}.
 *
 * <p>Single-node settings: internal topics (consumer offsets, transaction state) get one replica and a
 * min ISR of one, so that transactional (exactly-once) producers work on one broker.
 */
public final class KafkaBrokerExtension implements BeforeAllCallback, AfterAllCallback {

    private final Map<String, String> brokerSettings;
    private KafkaClusterTestKit cluster;

    public KafkaBrokerExtension() {
        this(Map.of());
    }

    /** A broker with these settings besides the single-node ones (for example a fast log cleaner). */
    public KafkaBrokerExtension(Map<String, String> brokerSettings) {
        this.brokerSettings = Map.copyOf(brokerSettings);
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        TestKitNodes nodes = new TestKitNodes.Builder()
                .setCombined(true)
                .setNumBrokerNodes(1)
                .setNumControllerNodes(1)
                .build();
        final KafkaClusterTestKit.Builder builder = new KafkaClusterTestKit.Builder(nodes)
                .setConfigProp("offsets.topic.replication.factor", "1")
                .setConfigProp("offsets.topic.num.partitions", "1")
                .setConfigProp("transaction.state.log.replication.factor", "1")
                .setConfigProp("transaction.state.log.min.isr", "1")
                .setConfigProp("transaction.state.log.num.partitions", "1")
                .setConfigProp("group.initial.rebalance.delay.ms", "0")
                .setConfigProp("auto.create.topics.enable", "false");
        brokerSettings.forEach(builder::setConfigProp);
        cluster = builder.build();
        cluster.format();
        cluster.startup();
        cluster.waitForReadyBrokers();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    /** The broker's bootstrap address, for clients and for Flink's Kafka connectors. */
    public String bootstrapServers() {
        if (cluster == null) {
            throw new IllegalStateException("the broker is not running: register the extension as a static field");
        }
        return cluster.bootstrapServers();
    }

    /** Properties that point a Kafka client at this broker. */
    public Properties clientProperties() {
        Properties properties = new Properties();
        properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        return properties;
    }

    /** Creates topics with the given partition counts (one replica each) and waits until they exist. */
    public void createTopics(Map<String, Integer> partitionsByTopic) throws Exception {
        createTopics(partitionsByTopic, Map.of());
    }

    /** Creates topics with the given partition counts and topic settings (one replica each); waits until they exist. */
    public void createTopics(Map<String, Integer> partitionsByTopic, Map<String, String> topicSettings)
            throws Exception {
        List<NewTopic> topics = partitionsByTopic.entrySet().stream()
                .map(e -> new NewTopic(e.getKey(), e.getValue(), (short) 1).configs(topicSettings))
                .toList();
        try (Admin admin = Admin.create(clientProperties())) {
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
        }
    }
}
