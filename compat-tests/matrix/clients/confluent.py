"""One scenario of sluice's compatibility matrix with confluent-kafka-python (librdkafka): Debian's
python3-confluent-kafka and the newest release from PyPI (its wheel bundles librdkafka; installed
by the matrix into a venv in the cache).

Usage: confluent.py SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC. Exit 0: pass; 3: n/a with the
reason on the last stdout line; anything else: fail. Conventions: compat-tests/matrix/doc.go.
"""
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING, OFFSET_END
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource

scenario, bootstrap, topic, group, ts_base, codec = sys.argv[1:7]
ts_base = int(ts_base)


def na(reason):
    print(reason)
    sys.exit(3)


def payload(i):
    return "v%d-%s" % (i, "x" * 100)


def consumer(extra=None):
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest"}
    conf.update(extra or {})
    return Consumer(conf)


def poll(c, n, timeout=30):
    out, deadline = [], time.time() + timeout
    while len(out) < n:
        assert time.time() < deadline, "got %d of %d records" % (len(out), n)
        m = c.poll(0.5)
        if m is None:
            continue
        assert not m.error(), m.error()
        out.append(m)
    return out


def produce(records, conf):
    p = Producer(dict({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 50}, **conf))
    errs = []
    for key, value, headers in records:
        p.produce(topic, key=key, value=value, headers=headers, partition=0,
                  on_delivery=lambda err, msg: err and errs.append(err))
    assert p.flush(30) == 0, "unflushed records"
    assert not errs, errs


def main():
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if scenario == "admin":
        fs = admin.create_topics([NewTopic(topic, 3, 1, config={"retention.ms": "86400000"})])
        fs[topic].result(30)
        md = admin.list_topics(timeout=30)
        assert topic in md.topics and len(md.topics[topic].partitions) == 3, md.topics.get(topic)
        admin.create_partitions([NewPartitions(topic, 5)])[topic].result(30)
        admin.delete_topics([topic])[topic].result(30)
    elif scenario.startswith("produce-"):
        produce([("k%d" % i, payload(i), None) for i in range(10)], {"compression.type": codec})
    elif scenario in ("consume-begin", "consume-end", "consume-ts"):
        c = consumer()
        if scenario == "consume-begin":
            c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            got = [m.value().decode() for m in poll(c, 10)]
            assert got == ["v%d" % i for i in range(10)], got
        elif scenario == "consume-end":
            c.assign([TopicPartition(topic, 0, OFFSET_END)])
            v = poll(c, 1)[0].value().decode()
            assert v.startswith("tail-"), v
        else:
            tp = c.offsets_for_times([TopicPartition(topic, 0, ts_base + 5000)], timeout=30)[0]
            assert tp.offset == 5, tp
            c.assign([tp])
            got = [m.value().decode() for m in poll(c, 5)]
            assert got == ["v%d" % i for i in range(5, 10)], got
        c.close()
    elif scenario == "keys-headers":
        produce([("ck%d" % i, "c%d" % i, [("h", "y%d" % i), ("trace", "t%d" % i)]) for i in range(3)], {})
        c = consumer()
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        for i, m in enumerate(poll(c, 3)):
            assert m.key() == b"k%d" % i and m.headers() == [("h", b"x%d" % i), ("trace", b"s%d" % i)], (m.key(), m.headers())
        c.close()
    elif scenario == "group":
        c = consumer()
        c.subscribe([topic])
        msgs = poll(c, 5)
        assert msgs[0].value() == b"v0", msgs[0].value()
        c.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
        c.close()
        c = consumer()
        c.subscribe([topic])
        v = poll(c, 1)[0].value()
        assert v == b"v5", v
        c.close()
    elif scenario == "configs":
        res = ConfigResource("topic", topic)
        before = admin.describe_configs([res])[res].result(30)
        assert "retention.ms" in before, before
        res.set_config("retention.ms", "3600000")
        # librdkafka 2.0's AdminClient has only the non-incremental AlterConfigs.
        admin.alter_configs([res])[res].result(30)
        after = admin.describe_configs([ConfigResource("topic", topic)])
        after = list(after.values())[0].result(30)
        assert after["retention.ms"].value == "3600000", after["retention.ms"]
    elif scenario == "delete-records":
        if not hasattr(admin, "delete_records"):
            na("confluent-kafka-python %s has no delete_records (added in 2.4)" % __import__("confluent_kafka").version()[0])
        for tp, f in admin.delete_records([TopicPartition(topic, 0, 5)], request_timeout=30).items():
            low = f.result(30).low_watermark
            assert low == 5, "low watermark %d, want 5" % low
    elif scenario == "transactions":
        # Commit c0..c2, abort a0..a2, commit c3..c5 (VerifyTxn in scenarios.go).
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic + "-txn", "transaction.timeout.ms": 20000})
        p.init_transactions(20)
        for prefix, rng, commit in (("c", range(0, 3), True), ("a", range(0, 3), False), ("c", range(3, 6), True)):
            p.begin_transaction()
            for i in rng:
                p.produce(topic, key="%sk%d" % (prefix, i), value="%s%d" % (prefix, i), partition=0)
            if commit:
                p.commit_transaction(20)
            else:
                p.flush(20)  # abort_transaction purges what was not sent yet
                p.abort_transaction(20)
    elif scenario == "exactly-once":
        # Abort a transaction holding an "aborted" record and the group's offset 3, then read the
        # input in the group from its committed offset and write out-v<i> with the offsets.
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic + "-txn"})
        p.init_transactions(20)
        c = consumer({"isolation.level": "read_committed"})
        p.begin_transaction()
        p.produce(topic + "-out", key="k", value="aborted", partition=0)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 3)], c.consumer_group_metadata(), 20)
        p.flush(20)
        p.abort_transaction(20)
        c.subscribe([topic])
        done, deadline = 0, time.time() + 30
        while done < 10:
            assert time.time() < deadline, "transformed %d of 10" % done
            msgs = c.consume(10, 0.5)
            if not msgs:
                continue
            p.begin_transaction()
            for m in msgs:
                assert not m.error(), m.error()
                p.produce(topic + "-out", key=m.key(), value=b"out-" + m.value(), partition=0)
                done += 1
            p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 20)
            p.commit_transaction(20)
        c.close()
    else:
        na("not mapped")


main()
