package io.sluice.transforms;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;

import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.SinkConnectorConfig;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.TransformationStage;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.util.ConnectorTaskId;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Runs the differential test's cases through Apache Kafka Connect's own
 * transforms and predicates and writes what comes out.
 *
 * <pre>java io.sluice.transforms.Harness cases.json out.json</pre>
 *
 * For each case the chain is built as a Connect worker builds a task's: a
 * SourceConnectorConfig or SinkConnectorConfig over the case's config (plus
 * name, connector.class of a stub connector, tasks.max), then
 * ConnectorConfig.transformationStages, which instantiates each transform
 * and predicate, configures them with the prefixed originals and pairs them
 * with negate. The record (SourceRecord, or SinkRecord with the case's
 * offset) is decoded from JsonConverter envelopes (schemas.enable=true; key
 * converter isKey=true, value isKey=false, headers through a JsonConverter
 * header converter) and run through each stage's apply, as
 * TransformationChain does (without the error handler, so that the
 * transform's own exception is reported). Whatever comes out is encoded
 * back with the same converters.
 *
 * The output is a JSON array, one object per case in the cases' order:
 * {"name", "record"}, {"name", "dropped": true}, {"name", "error"} or
 * {"name", "config_error"}; errors are "SimpleClassName: message". The
 * envelopes are JsonConverter's bytes re-indented token by token (numbers
 * keep JsonConverter's text, objects its key order), so the file is
 * deterministic.
 */
public final class Harness {

    private static final ObjectMapper MAPPER = new ObjectMapper()
        .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
        .setNodeFactory(JsonNodeFactory.withExactBigDecimals(true));

    private final Plugins plugins;
    private final ConnectMetrics metrics;

    private Harness(Plugins plugins, ConnectMetrics metrics) {
        this.plugins = plugins;
        this.metrics = metrics;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: Harness <cases.json> <out.json>");
            System.exit(2);
        }
        JsonNode cases = MAPPER.readTree(new File(args[0]));
        if (!cases.isArray()) {
            throw new IllegalArgumentException(args[0] + ": not a JSON array");
        }

        Map<String, String> worker = new HashMap<>();
        worker.put("bootstrap.servers", "localhost:9092");
        worker.put("key.converter", JsonConverter.class.getName());
        worker.put("value.converter", JsonConverter.class.getName());
        worker.put("offset.storage.file.filename", "/dev/null");
        Plugins plugins = new Plugins(Collections.emptyMap());
        ConnectMetrics metrics = new ConnectMetrics("harness", new StandaloneConfig(worker), Time.SYSTEM, "harness-cluster");
        Harness h = new Harness(plugins, metrics);

        Path out = Path.of(args[1]);
        Path tmp = Files.createTempFile(out.toAbsolutePath().getParent(), ".expected", ".json");
        JsonFactory factory = MAPPER.getFactory();
        Set<String> names = new HashSet<>();
        try (OutputStream os = Files.newOutputStream(tmp);
             JsonGenerator gen = factory.createGenerator(os, JsonEncoding.UTF8)) {
            Separators seps = Separators.createDefaultInstance()
                .withObjectFieldValueSpacing(Separators.Spacing.AFTER)
                .withObjectEmptySeparator("")
                .withArrayEmptySeparator("");
            DefaultPrettyPrinter pp = new DefaultPrettyPrinter(seps)
                .withObjectIndenter(new DefaultIndenter("  ", "\n"))
                .withArrayIndenter(new DefaultIndenter("  ", "\n"));
            gen.setPrettyPrinter(pp);
            gen.writeStartArray();
            for (JsonNode c : cases) {
                String name = text(c, "name");
                if (!names.add(name)) {
                    throw new IllegalArgumentException("duplicate case name: " + name);
                }
                try {
                    h.run(c, gen);
                } catch (BadCase e) {
                    throw new IllegalArgumentException("case " + name + ": " + e.getMessage(), e);
                }
            }
            gen.writeEndArray();
            gen.writeRaw('\n');
        }
        Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        metrics.stop();
        System.err.printf("Harness: %d cases -> %s%n", names.size(), out);
    }

    /** A case the harness cannot run: a mistake in cases.json, not a result. */
    static final class BadCase extends Exception {
        BadCase(String msg) {
            super(msg);
        }

        BadCase(String msg, Throwable cause) {
            super(msg, cause);
        }
    }

    private static final Set<String> CASE_KEYS = Set.of("name", "kind", "expect_config_error", "converter", "config", "record");
    private static final Set<String> RECORD_KEYS = Set.of("topic", "partition", "offset", "timestamp", "key", "value", "headers");

    /** Refuses keys the harness would ignore: a misspelt key is a mistake, not a default. */
    private static void requireOnly(JsonNode n, Set<String> allowed, String what) throws BadCase {
        for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!allowed.contains(k)) {
                throw new BadCase(what + " has an unknown key \"" + k + "\"; known: " + new java.util.TreeSet<>(allowed));
            }
        }
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual()) {
            throw new IllegalArgumentException("a case needs a string \"" + field + "\": " + n);
        }
        return v.asText();
    }

    /** Runs one case and writes its result object. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private void run(JsonNode c, JsonGenerator gen) throws IOException, BadCase {
        String name = c.get("name").asText();
        String kind = text(c, "kind");
        boolean sink;
        switch (kind) {
            case "source" -> sink = false;
            case "sink" -> sink = true;
            default -> throw new BadCase("kind must be \"source\" or \"sink\", not " + kind);
        }
        requireOnly(c, CASE_KEYS, "a case");
        boolean expectConfigError = c.path("expect_config_error").asBoolean(false);
        JsonNode rec = c.get("record");
        if (rec == null || !rec.isObject()) {
            throw new BadCase("no \"record\" object");
        }
        requireOnly(rec, RECORD_KEYS, "record");
        String topic = rec.path("topic").asText(null);
        if (topic == null) {
            throw new BadCase("record.topic must be a string");
        }

        Map<String, String> props = new HashMap<>();
        JsonNode config = c.get("config");
        if (config == null || !config.isObject()) {
            throw new BadCase("no \"config\" object");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = config.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual()) {
                throw new BadCase("config values must be strings: " + e.getKey());
            }
            props.put(e.getKey(), e.getValue().asText());
        }
        props.put(ConnectorConfig.NAME_CONFIG, "harness");
        props.put(ConnectorConfig.CONNECTOR_CLASS_CONFIG, sink ? StubSinkConnector.class.getName() : StubSourceConnector.class.getName());
        props.putIfAbsent(ConnectorConfig.TASKS_MAX_CONFIG, "1");
        if (sink) {
            props.putIfAbsent(SinkConnectorConfig.TOPICS_CONFIG, topic);
        }

        // The chain, as Worker.TaskBuilder builds it.
        List<TransformationStage> stages;
        try {
            ConnectorConfig cc = sink ? new SinkConnectorConfig(plugins, props) : new SourceConnectorConfig(plugins, props, false);
            stages = (List) cc.transformationStages(plugins, new ConnectorTaskId("harness", 0), metrics);
        } catch (Exception e) {
            gen.writeStartObject();
            gen.writeStringField("name", name);
            gen.writeStringField("config_error", describe(unwrap(e)));
            gen.writeEndObject();
            return;
        }
        if (expectConfigError) {
            closeAll(stages);
            throw new BadCase("expect_config_error, but Connect configured the chain");
        }

        // schemas.enable=true and the case's own converter keys, for
        // every converter.
        Map<String, String> convProps = new HashMap<>();
        JsonNode conv = c.get("converter");
        if (conv != null && !conv.isNull()) {
            if (!conv.isObject()) {
                throw new BadCase("\"converter\" must be an object of strings");
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = conv.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                convProps.put(e.getKey(), e.getValue().asText());
            }
        }
        convProps.put("schemas.enable", "true");
        JsonConverter keyConv = new JsonConverter();
        keyConv.configure(convProps, true);
        JsonConverter valueConv = new JsonConverter();
        valueConv.configure(convProps, false);
        JsonConverter headerConv = new JsonConverter();
        Map<String, String> headerProps = new HashMap<>(convProps);
        headerProps.put("converter.type", "header");
        headerConv.configure(headerProps);

        SchemaAndValue key = decode(keyConv, topic, rec.get("key"), "key");
        SchemaAndValue value = decode(valueConv, topic, rec.get("value"), "value");
        ConnectHeaders headers = new ConnectHeaders();
        JsonNode hs = rec.get("headers");
        if (hs != null && !hs.isNull()) {
            if (!hs.isArray()) {
                throw new BadCase("record.headers must be an array");
            }
            for (JsonNode h : hs) {
                String hk = h.path("key").asText(null);
                if (hk == null) {
                    throw new BadCase("a header needs a string key");
                }
                JsonNode hv = h.get("value");
                byte[] bytes = hv == null || hv.isNull() ? null : MAPPER.writeValueAsBytes(hv);
                SchemaAndValue sv;
                try {
                    sv = headerConv.toConnectHeader(topic, hk, bytes);
                } catch (RuntimeException e) {
                    throw new BadCase("header " + hk + ": JsonConverter refuses it: " + e, e);
                }
                headers.add(hk, sv);
            }
        }
        Integer partition = null;
        JsonNode p = rec.get("partition");
        if (p != null && !p.isNull()) {
            if (!p.isInt()) {
                throw new BadCase("record.partition must be an int or null");
            }
            partition = p.intValue();
        }
        Long timestamp = null;
        JsonNode ts = rec.get("timestamp");
        if (ts != null && !ts.isNull()) {
            if (!ts.isIntegralNumber()) {
                throw new BadCase("record.timestamp must be epoch millis or null");
            }
            timestamp = ts.longValue();
        }

        ConnectRecord record;
        if (sink) {
            JsonNode off = rec.get("offset");
            if (off == null || !off.isIntegralNumber()) {
                throw new BadCase("a sink record needs an integer offset");
            }
            if (partition == null) {
                throw new BadCase("a sink record needs a partition");
            }
            record = new SinkRecord(topic, partition, key.schema(), key.value(), value.schema(), value.value(),
                off.longValue(), timestamp, timestamp == null ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME,
                headers);
        } else {
            if (rec.has("offset")) {
                throw new BadCase("a source record has no offset");
            }
            record = new SourceRecord(Collections.emptyMap(), Collections.emptyMap(), topic, partition,
                key.schema(), key.value(), value.schema(), value.value(), timestamp, headers);
        }

        // TransformationChain.apply, without the error handler.
        Exception failure = null;
        try {
            for (TransformationStage stage : stages) {
                record = stage.apply(record);
                if (record == null) {
                    break;
                }
            }
        } catch (Exception e) {
            failure = e;
        } finally {
            closeAll(stages);
        }

        gen.writeStartObject();
        gen.writeStringField("name", name);
        if (failure != null) {
            gen.writeStringField("error", describe(failure));
        } else if (record == null) {
            gen.writeBooleanField("dropped", true);
        } else {
            // Convert before writing, so that a conversion failure is the
            // case's result rather than half a record.
            byte[] k, v;
            List<String> hkeys = new ArrayList<>();
            List<byte[]> hvals = new ArrayList<>();
            try {
                k = keyConv.fromConnectData(record.topic(), record.keySchema(), record.key());
                v = valueConv.fromConnectData(record.topic(), record.valueSchema(), record.value());
                for (Header h : (Iterable<Header>) record.headers()) {
                    hkeys.add(h.key());
                    hvals.add(headerConv.fromConnectHeader(record.topic(), h.key(), h.schema(), h.value()));
                }
            } catch (Exception e) {
                gen.writeStringField("error", "converting the output: " + describe(e));
                gen.writeEndObject();
                return;
            }
            gen.writeObjectFieldStart("record");
            gen.writeStringField("topic", record.topic());
            if (record.kafkaPartition() == null) {
                gen.writeNullField("partition");
            } else {
                gen.writeNumberField("partition", record.kafkaPartition());
            }
            if (record instanceof SinkRecord sr) {
                gen.writeNumberField("offset", sr.kafkaOffset());
            }
            if (record.timestamp() == null) {
                gen.writeNullField("timestamp");
            } else {
                gen.writeNumberField("timestamp", record.timestamp());
            }
            gen.writeFieldName("key");
            copy(k, gen);
            gen.writeFieldName("value");
            copy(v, gen);
            gen.writeArrayFieldStart("headers");
            for (int i = 0; i < hkeys.size(); i++) {
                gen.writeStartObject();
                gen.writeStringField("key", hkeys.get(i));
                gen.writeFieldName("value");
                copy(hvals.get(i), gen);
                gen.writeEndObject();
            }
            gen.writeEndArray();
            gen.writeEndObject();
        }
        gen.writeEndObject();
    }

    private static SchemaAndValue decode(JsonConverter conv, String topic, JsonNode envelope, String what) throws BadCase {
        byte[] bytes;
        try {
            bytes = envelope == null || envelope.isNull() ? null : MAPPER.writeValueAsBytes(envelope);
        } catch (IOException e) {
            throw new BadCase(what + ": " + e, e);
        }
        try {
            return conv.toConnectData(topic, bytes);
        } catch (RuntimeException e) {
            throw new BadCase(what + ": JsonConverter refuses it: " + e, e);
        }
    }

    /**
     * Writes JsonConverter's bytes into gen token by token: numbers keep
     * their text, objects their key order. Null bytes (a tombstone) are
     * JSON null.
     */
    private static void copy(byte[] bytes, JsonGenerator gen) throws IOException {
        if (bytes == null) {
            gen.writeNull();
            return;
        }
        try (JsonParser p = MAPPER.getFactory().createParser(bytes)) {
            JsonToken t;
            while ((t = p.nextToken()) != null) {
                switch (t) {
                    case START_OBJECT -> gen.writeStartObject();
                    case END_OBJECT -> gen.writeEndObject();
                    case START_ARRAY -> gen.writeStartArray();
                    case END_ARRAY -> gen.writeEndArray();
                    case FIELD_NAME -> gen.writeFieldName(p.currentName());
                    case VALUE_STRING -> gen.writeString(p.getText());
                    case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> gen.writeNumber(p.getText());
                    case VALUE_TRUE -> gen.writeBoolean(true);
                    case VALUE_FALSE -> gen.writeBoolean(false);
                    case VALUE_NULL -> gen.writeNull();
                    default -> throw new IOException("unexpected token " + t + " in " + new String(bytes, StandardCharsets.UTF_8));
                }
            }
        }
    }

    private static void closeAll(List<TransformationStage> stages) {
        for (TransformationStage s : stages) {
            s.close();
        }
    }

    /**
     * The exception worth reporting: transformationStages wraps what it
     * catches in ConnectException(cause), adding nothing but the cause's
     * toString.
     */
    private static Throwable unwrap(Throwable e) {
        while (e instanceof ConnectException && e.getCause() != null
            && String.valueOf(e.getMessage()).equals(e.getCause().toString())) {
            e = e.getCause();
        }
        return e;
    }

    /**
     * An object's identity hash in a message (InsertField's "No value
     * specified for static field: ...InsertField$InsertionSpec@2f1de2d6")
     * differs from run to run; it is replaced so that the output is stable.
     */
    private static final Pattern IDENTITY_HASH = Pattern.compile("\\b([a-z]\\w*(?:\\.[\\w$]+)+)@[0-9a-f]{1,8}\\b");

    private static String describe(Throwable e) {
        String msg = String.valueOf(e.getMessage());
        msg = IDENTITY_HASH.matcher(msg).replaceAll("$1@<hash>");
        return e.getClass().getSimpleName() + ": " + msg;
    }
}
