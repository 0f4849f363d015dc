"""One scenario of sluice's compatibility matrix with kafka-python: Debian's python3-kafka (2.0.2)
and kafka-python 2.x from PyPI (installed by the matrix into a venv in the cache), which adds
delete_records and a transactional producer; a scenario the running version lacks is n/a.

Usage: kafkapython.py SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC. Exit 0: pass; 3: n/a with
the reason on the last stdout line; anything else: fail. Conventions: compat-tests/matrix/doc.go.
"""
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.structs import OffsetAndMetadata
from kafka import __version__ as kafka_version

scenario, bootstrap, topic, group, ts_base, codec = sys.argv[1:7]
ts_base = int(ts_base)


def na(reason):
    print(reason)
    sys.exit(3)


def payload(i):
    return "v%d-%s" % (i, "x" * 100)


def om(offset):
    """OffsetAndMetadata has a leader_epoch field since kafka-python 2.1."""
    if len(OffsetAndMetadata._fields) == 3:
        return OffsetAndMetadata(offset, "", -1)
    return OffsetAndMetadata(offset, None)


def consumer(**kw):
    return KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                         consumer_timeout_ms=30000, **kw)


def poll(c, n, timeout=30):
    out, deadline = [], time.time() + timeout
    while len(out) < n:
        assert time.time() < deadline, "got %d of %d records" % (len(out), n)
        for recs in c.poll(500).values():
            out.extend(recs)
    return out


def main():
    if scenario == "admin":
        a = KafkaAdminClient(bootstrap_servers=bootstrap)
        a.create_topics([NewTopic(topic, 3, 1, topic_configs={"retention.ms": "86400000"})])
        assert topic in a.list_topics()
        d = a.describe_topics([topic])[0]
        assert len(d["partitions"]) == 3, d
        a.create_partitions({topic: NewPartitions(5)})
        a.delete_topics([topic])
    elif scenario.startswith("produce-"):
        import kafka.codec
        if codec != "none" and not getattr(kafka.codec, "has_" + codec, lambda: False)():
            na("kafka-python needs a separate Python module for %s (Debian: python3-snappy, python3-zstandard; scripts/install-test-deps.sh installs them)" % codec)
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec, linger_ms=50)
        fs = [p.send(topic, key=b"k%d" % i, value=payload(i).encode(), partition=0) for i in range(10)]
        for f in fs:
            f.get(30)
        p.close()
    elif scenario in ("consume-begin", "consume-end", "consume-ts"):
        c = consumer()
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        if scenario == "consume-begin":
            c.seek_to_beginning(tp)
            got = [m.value.decode() for m in poll(c, 10)]
            assert got == ["v%d" % i for i in range(10)], got
        elif scenario == "consume-end":
            c.seek_to_end(tp)
            v = poll(c, 1)[0].value.decode()
            assert v.startswith("tail-"), v
        else:
            ot = c.offsets_for_times({tp: ts_base + 5000})[tp]
            assert ot is not None and ot.offset == 5, ot
            c.seek(tp, ot.offset)
            got = [m.value.decode() for m in poll(c, 5)]
            assert got == ["v%d" % i for i in range(5, 10)], got
        c.close()
    elif scenario == "keys-headers":
        p = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(3):
            p.send(topic, key=b"ck%d" % i, value=b"c%d" % i, partition=0,
                   headers=[("h", b"y%d" % i), ("trace", b"t%d" % i)]).get(30)
        p.close()
        c = consumer()
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        for i, m in enumerate(poll(c, 3)[:3]):
            assert m.key == b"k%d" % i and m.headers == [("h", b"x%d" % i), ("trace", b"s%d" % i)], (m.key, m.headers)
        c.close()
    elif scenario == "group":
        c = consumer(group_id=group)
        c.subscribe([topic])
        msgs = poll(c, 5)
        assert msgs[0].value == b"v0", msgs[0].value
        c.commit({TopicPartition(topic, 0): om(5)})
        c.close()
        c = consumer(group_id=group)
        c.subscribe([topic])
        v = poll(c, 1)[0].value
        assert v == b"v5", v
        c.close()
    elif scenario == "configs":
        a = KafkaAdminClient(bootstrap_servers=bootstrap)
        before = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        assert "retention.ms" in repr(before), before
        a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})])
    elif scenario == "delete-records":
        a = KafkaAdminClient(bootstrap_servers=bootstrap)
        if not hasattr(a, "delete_records"):
            na("kafka-python %s's admin client has no delete_records (added in 2.1)" % kafka_version)
        a.delete_records({TopicPartition(topic, 0): 5})
    elif scenario in ("transactions", "exactly-once") and not hasattr(KafkaProducer, "init_transactions"):
        na("kafka-python %s has no transactional producer (added in 2.1)" % kafka_version)
    elif scenario == "transactions":
        # Commit c0..c2, abort a0..a2, commit c3..c5 (VerifyTxn in scenarios.go).
        p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=topic + "-txn")
        p.init_transactions()
        for prefix, rng, commit in (("c", range(0, 3), True), ("a", range(0, 3), False), ("c", range(3, 6), True)):
            p.begin_transaction()
            fs = [p.send(topic, key=b"%sk%d" % (prefix.encode(), i), value=b"%s%d" % (prefix.encode(), i), partition=0) for i in rng]
            p.flush(20)
            for f in fs:
                f.get(20)
            if commit:
                p.commit_transaction()
            else:
                p.abort_transaction()
        p.close()
    elif scenario == "exactly-once":
        # Abort a transaction holding an "aborted" record and the group's offset 3, then read the
        # input in the group from its committed offset and write out-v<i> with the offsets.
        p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=topic + "-txn")
        p.init_transactions()
        p.begin_transaction()
        p.send(topic + "-out", key=b"k", value=b"aborted", partition=0).get(20)
        p.send_offsets_to_transaction({TopicPartition(topic, 0): om(3)}, group)
        p.abort_transaction()
        c = consumer(group_id=group, isolation_level="read_committed")
        c.subscribe([topic])
        done, deadline = 0, time.time() + 30
        while done < 10:
            assert time.time() < deadline, "transformed %d of 10" % done
            batch = c.poll(500)
            if not batch:
                continue
            p.begin_transaction()
            offsets = {}
            for tp, recs in batch.items():
                for m in recs:
                    p.send(topic + "-out", key=m.key, value=b"out-" + m.value, partition=0)
                    offsets[tp] = om(m.offset + 1)
                    done += 1
            p.send_offsets_to_transaction(offsets, group)
            p.commit_transaction()
        c.close()
        p.close()
    else:
        na("not mapped")


main()
