"""Round trip with confluent-kafka-python (librdkafka): an idempotent Producer writes keyed
records with headers to partition 0, then a Consumer with assign() (no consumer group) reads
them back. Prints "OK ..." and exits 0 when every record came back once, in order, with the
offset its delivery report gave; otherwise prints what differed and exits 1.

usage: confluent_roundtrip.py BOOTSTRAP TOPIC COUNT
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
deadline = time.monotonic() + 60

producer = Producer({
    "bootstrap.servers": bootstrap,
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "compression.type": "lz4",
})
delivered = {}  # key -> offset
errors = []


def on_delivery(err, msg):
    if err is not None:
        errors.append(f"delivery of {msg.key()!r} failed: {err}")
    else:
        delivered[msg.key().decode()] = msg.offset()


for i in range(count):
    producer.produce(topic, key=f"ck{i:04d}", value=f"confluent value {i}".encode(), partition=0,
                     headers=[("idx", str(i).encode()), ("src", b"confluent")], on_delivery=on_delivery)
    producer.poll(0)
remaining = producer.flush(30)
if remaining or errors or len(delivered) != count:
    print(f"FAIL produce: {remaining} undelivered, {len(delivered)} delivered, errors: {errors[:5]}")
    sys.exit(1)
offsets = [delivered[f"ck{i:04d}"] for i in range(count)]
if offsets != sorted(offsets) or len(set(offsets)) != count:
    print(f"FAIL produce: delivery offsets not strictly increasing: {offsets[:10]}...")
    sys.exit(1)

# confluent-kafka-python 1.x refuses a Consumer without group.id; with assign() and no commits
# the group is never joined.
consumer = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": "compat-assign-only",
    "enable.auto.commit": False,
    "enable.partition.eof": True,
})
consumer.assign([TopicPartition(topic, 0, offsets[0])])
got = []
while len(got) < count and time.monotonic() < deadline:
    msg = consumer.poll(1.0)
    if msg is None:
        continue
    if msg.error():
        if msg.error().code() == KafkaError._PARTITION_EOF:
            continue
        print(f"FAIL consume error: {msg.error()}")
        sys.exit(1)
    got.append(msg)
consumer.close()

if len(got) != count:
    print(f"FAIL consumed {len(got)} of {count} records before the deadline")
    sys.exit(1)
for i, msg in enumerate(got):
    want_key = f"ck{i:04d}"
    headers = msg.headers() or []
    problems = []
    if msg.key() != want_key.encode():
        problems.append(f"key {msg.key()!r}")
    if msg.value() != f"confluent value {i}".encode():
        problems.append(f"value {msg.value()!r}")
    if headers != [("idx", str(i).encode()), ("src", b"confluent")]:
        problems.append(f"headers {headers!r}")
    if msg.offset() != delivered[want_key]:
        problems.append(f"offset {msg.offset()} but delivery report said {delivered[want_key]}")
    if problems:
        print(f"FAIL record {i}: " + ", ".join(problems))
        sys.exit(1)
print(f"OK {count} records, offsets {offsets[0]}..{offsets[-1]}")
