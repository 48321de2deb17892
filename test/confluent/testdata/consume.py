"""Reads --count records of --topic with Confluent's own Python deserializer
for --format (avro, json or protobuf) and prints each value as a JSON line,
for test/confluent to compare with the source table field by field."""
import argparse
import base64
import datetime
import decimal
import json
import time

from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2  # noqa: F401  (puts timestamp.proto in the pool)


def plain(v):
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return int(round(v.timestamp() * 1000))
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def proto_class(proto_fields):
    """The message class for the .proto ProtobufConverter writes for the
    source table, built from its field list (name, type name, number)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="sluice_test_row.proto", package="sluicetest", syntax="proto3")
    fdp.dependency.append("google/protobuf/timestamp.proto")
    msg = fdp.message_type.add(name="Row")
    types = {"int32": 5, "int64": 3, "string": 9, "double": 1, "bool": 8, "bytes": 12}
    for name, typ, number in proto_fields:
        f = msg.field.add(name=name, number=number, label=1)
        if typ in types:
            f.type = types[typ]
        else:
            f.type = 11
            f.type_name = "." + typ
    pool = descriptor_pool.Default()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("sluicetest.Row"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--registry", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--format", required=True, choices=["avro", "json", "protobuf"])
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--proto-fields", default="[]")
    a = p.parse_args()
    registry = SchemaRegistryClient({"url": a.registry})
    if a.format == "avro":
        des = AvroDeserializer(registry)
    elif a.format == "json":
        des = JSONDeserializer(None, schema_registry_client=registry)
    else:
        cls = proto_class(json.loads(a.proto_fields))
        des = ProtobufDeserializer(cls)
    consumer = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "sluice-confluent-" + a.topic,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([a.topic])
    seen = 0
    deadline = time.time() + 120
    while seen < a.count and time.time() < deadline:
        m = consumer.poll(1.0)
        if m is None:
            continue
        if m.error():
            raise SystemExit(str(m.error()))
        v = des(m.value(), SerializationContext(a.topic, MessageField.VALUE))
        if a.format == "protobuf":
            out = {}
            for fd in v.DESCRIPTOR.fields:
                x = getattr(v, fd.name)
                if fd.message_type is not None:
                    x = int(x.seconds * 1000 + x.nanos // 1000000) if v.HasField(fd.name) else None
                out[fd.name] = plain(x)
            v = out
        print(json.dumps(plain(v)), flush=True)
        seen += 1
    consumer.close()
    if seen < a.count:
        raise SystemExit("read %d of %d records" % (seen, a.count))


if __name__ == "__main__":
    main()
