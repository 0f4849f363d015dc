"""confluent-kafka-python (librdkafka) over a secured listener: a Producer writes COUNT records,
a Consumer in a consumer group reads them back. The security settings are given as a JSON
object of librdkafka properties. Prints "OK ..." and exits 0 when every record came back once;
otherwise prints what went wrong and exits 1.

usage: confluent_security.py BOOTSTRAP TOPIC COUNT SETTINGS_JSON
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer

bootstrap, topic, count, settings = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
deadline = time.monotonic() + 60
errors = []


def on_error(err):
    errors.append(str(err))


producer = Producer(dict(settings, **{"bootstrap.servers": bootstrap, "acks": "all", "error_cb": on_error}))
delivered = []


def on_delivery(err, msg):
    if err is not None:
        errors.append(f"delivery failed: {err}")
    else:
        delivered.append(msg.value())


for i in range(count):
    producer.produce(topic, value=f"v{i:05d}".encode(), on_delivery=on_delivery)
    producer.poll(0)
producer.flush(30)
if len(delivered) != count:
    print(f"delivered {len(delivered)} of {count}: {errors[:3]}")
    sys.exit(1)

consumer = Consumer(dict(settings, **{"bootstrap.servers": bootstrap, "group.id": "py-" + topic,
                                      "auto.offset.reset": "earliest", "error_cb": on_error}))
consumer.subscribe([topic])
seen = set()
while len(seen) < count and time.monotonic() < deadline:
    msg = consumer.poll(1.0)
    if msg is None or msg.error():
        continue
    seen.add(msg.value())
consumer.close()
if len(seen) != count:
    print(f"consumed {len(seen)} of {count}: {errors[:3]}")
    sys.exit(1)
print(f"OK {count} records produced and consumed")
