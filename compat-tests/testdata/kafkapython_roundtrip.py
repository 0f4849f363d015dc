"""Round trip with kafka-python: KafkaProducer (acks=all, gzip) writes keyed records with headers to
partition 0, then a KafkaConsumer with assign() (no group) reads them back. Prints "OK ..." and
exits 0 when every record came back once, in order, at the offset the send future reported;
otherwise prints what differed and exits 1.

usage: kafkapython_roundtrip.py BOOTSTRAP TOPIC COUNT
"""
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, compression_type="gzip",
                         request_timeout_ms=20000, max_block_ms=20000)
futures = []
for i in range(count):
    futures.append(producer.send(topic, key=f"pk{i:04d}".encode(), value=f"kafka-python value {i}".encode(),
                                 partition=0, headers=[("idx", str(i).encode())]))
producer.flush(30)
offsets = []
for i, fut in enumerate(futures):
    try:
        offsets.append(fut.get(timeout=30).offset)
    except Exception as e:  # report the client's own error
        print(f"FAIL produce of record {i}: {type(e).__name__}: {e}")
        sys.exit(1)
producer.close(10)
if offsets != sorted(offsets) or len(set(offsets)) != count:
    print(f"FAIL produce: offsets not strictly increasing: {offsets[:10]}...")
    sys.exit(1)

consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                         auto_offset_reset="earliest", request_timeout_ms=30000)
tp = TopicPartition(topic, 0)
consumer.assign([tp])
consumer.seek(tp, offsets[0])
got = []
deadline = time.monotonic() + 60
while len(got) < count and time.monotonic() < deadline:
    batch = consumer.poll(timeout_ms=1000)
    for records in batch.values():
        got.extend(records)
consumer.close()

if len(got) != count:
    print(f"FAIL consumed {len(got)} of {count} records before the deadline")
    sys.exit(1)
for i, rec in enumerate(got):
    problems = []
    if rec.key != f"pk{i:04d}".encode():
        problems.append(f"key {rec.key!r}")
    if rec.value != f"kafka-python value {i}".encode():
        problems.append(f"value {rec.value!r}")
    if list(rec.headers) != [("idx", str(i).encode())]:
        problems.append(f"headers {rec.headers!r}")
    if rec.offset != offsets[i]:
        problems.append(f"offset {rec.offset} but send reported {offsets[i]}")
    if problems:
        print(f"FAIL record {i}: " + ", ".join(problems))
        sys.exit(1)
print(f"OK {count} records, offsets {offsets[0]}..{offsets[-1]}")
