"""Produces records with Confluent's own Python serializers (Avro, JSON
Schema and Protobuf) against the Schema Registry at --registry, for the Sluice sinks of
test/confluent to decode. Prints one JSON line per record produced: what
the sinks must write."""
import argparse
import datetime
import decimal
import json

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2  # noqa: F401  (puts timestamp.proto in the pool)

AVRO_SCHEMA = json.dumps({
    "type": "record", "name": "Payment", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "small", "type": "int"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "born", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
})

JSON_SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Payment", "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "amount": {"type": "number"},
        "active": {"type": "boolean"},
        "note": {"type": ["null", "string"]},
    },
    "required": ["id", "name", "amount", "active"],
})

def payment_class():
    """shop.Payment as a generated class would define it: what a Python
    producer hands ProtobufSerializer."""
    fdp = descriptor_pb2.FileDescriptorProto(name="shop/payment.proto", package="shop", syntax="proto3")
    fdp.dependency.append("google/protobuf/timestamp.proto")
    msg = fdp.message_type.add(name="Payment")
    for name, typ, number in [("id", 3, 1), ("name", 9, 2), ("amount", 1, 3), ("active", 8, 4), ("note", 9, 6)]:
        msg.field.add(name=name, number=number, type=typ, label=1)
    msg.field.add(name="at", number=5, type=11, type_name=".google.protobuf.Timestamp", label=1)
    pool = descriptor_pool.Default()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Payment"))


UTC = datetime.timezone.utc
ROWS = [
    {"id": 1, "name": "Ann", "amount": 12.5, "active": True, "small": -7,
     "price": decimal.Decimal("1234.50"), "born": datetime.date(1980, 2, 29),
     "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), "note": "first"},
    {"id": 2, "name": "Bob O'Hara", "amount": -0.25, "active": False, "small": 2147483647,
     "price": decimal.Decimal("-0.01"), "born": datetime.date(1969, 12, 31),
     "at": datetime.datetime(1999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "note": None},
    {"id": 3, "name": "Çé 名前", "amount": 1e300, "active": True, "small": 0,
     "price": decimal.Decimal("0.00"), "born": datetime.date(2000, 1, 1),
     "at": datetime.datetime(1970, 1, 1, 0, 0, 0, tzinfo=UTC), "note": ""},
]


def as_json(row):
    out = {}
    for k, v in row.items():
        if isinstance(v, decimal.Decimal):
            v = str(v)
        elif isinstance(v, datetime.datetime):
            v = int(v.timestamp() * 1000)
        elif isinstance(v, datetime.date):
            v = v.isoformat()
        out[k] = v
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--registry", required=True)
    p.add_argument("--avro-topic", required=True)
    p.add_argument("--json-topic", required=True)
    p.add_argument("--proto-topic", required=True)
    a = p.parse_args()
    registry = SchemaRegistryClient({"url": a.registry})
    producer = Producer({"bootstrap.servers": a.bootstrap, "enable.idempotence": True})
    avro = AvroSerializer(registry, AVRO_SCHEMA)
    jsons = JSONSerializer(JSON_SCHEMA, registry)
    json_fields = set(json.loads(JSON_SCHEMA)["properties"])
    payment = payment_class()
    protos = ProtobufSerializer(payment, registry, {"use.deprecated.format": False})
    for row in ROWS:
        producer.produce(a.avro_topic, value=avro(row, SerializationContext(a.avro_topic, MessageField.VALUE)))
        j = {k: v for k, v in row.items() if k in json_fields}
        producer.produce(a.json_topic, value=jsons(j, SerializationContext(a.json_topic, MessageField.VALUE)))
        m = payment(id=row["id"], name=row["name"], amount=row["amount"], active=row["active"], note=row["note"] or "")
        m.at.FromMilliseconds(int(row["at"].timestamp() * 1000))
        producer.produce(a.proto_topic, value=protos(m, SerializationContext(a.proto_topic, MessageField.VALUE)))
        print(json.dumps(as_json(row)), flush=True)
    if producer.flush(30) != 0:
        raise SystemExit("records left unsent")


if __name__ == "__main__":
    main()
