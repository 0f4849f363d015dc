"""One scenario of sluice's compatibility matrix with aiokafka (asyncio; installed by the matrix
from PyPI into a venv in the cache).

Usage: aiokafka_compat.py SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC. Exit 0: pass; 3: n/a
with the reason on the last stdout line; anything else: fail. Conventions: compat-tests/matrix/doc.go.
"""
import asyncio
import sys
import time

import aiokafka
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

scenario, bootstrap, topic, group, ts_base, codec = sys.argv[1:7]
ts_base = int(ts_base)


def na(reason):
    print(reason)
    sys.exit(3)


def payload(i):
    return "v%d-%s" % (i, "x" * 100)


def consumer(**kw):
    kw.setdefault("enable_auto_commit", False)
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **kw)


async def poll(c, n, timeout=30):
    out, deadline = [], time.time() + timeout
    while len(out) < n:
        assert time.time() < deadline, "got %d of %d records" % (len(out), n)
        for recs in (await c.getmany(timeout_ms=500)).values():
            out.extend(recs)
    return out


async def admin():
    a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await a.start()
    return a


async def main():
    tp = TopicPartition(topic, 0)
    if scenario == "admin":
        a = await admin()
        await a.create_topics([NewTopic(topic, 3, 1, topic_configs={"retention.ms": "86400000"})])
        assert topic in await a.list_topics()
        d = (await a.describe_topics([topic]))[0]
        assert len(d["partitions"]) == 3, d
        await a.create_partitions({topic: NewPartitions(5)})
        await a.delete_topics([topic])
        await a.close()
    elif scenario.startswith("produce-"):
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                             linger_ms=50, enable_idempotence=True)
        await p.start()
        fs = [await p.send(topic, key=b"k%d" % i, value=payload(i).encode(), partition=0) for i in range(10)]
        for f in fs:
            await f
        await p.stop()
    elif scenario in ("consume-begin", "consume-end", "consume-ts"):
        c = consumer()
        await c.start()
        c.assign([tp])
        if scenario == "consume-begin":
            await c.seek_to_beginning(tp)
            got = [m.value.decode() for m in await poll(c, 10)]
            assert got == ["v%d" % i for i in range(10)], got
        elif scenario == "consume-end":
            await c.seek_to_end(tp)
            v = (await poll(c, 1))[0].value.decode()
            assert v.startswith("tail-"), v
        else:
            ot = (await c.offsets_for_times({tp: ts_base + 5000}))[tp]
            assert ot is not None and ot.offset == 5, ot
            c.seek(tp, ot.offset)
            got = [m.value.decode() for m in await poll(c, 5)]
            assert got == ["v%d" % i for i in range(5, 10)], got
        await c.stop()
    elif scenario == "keys-headers":
        p = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await p.start()
        for i in range(3):
            await p.send_and_wait(topic, key=b"ck%d" % i, value=b"c%d" % i, partition=0,
                                  headers=[("h", b"y%d" % i), ("trace", b"t%d" % i)])
        await p.stop()
        c = consumer()
        await c.start()
        c.assign([tp])
        await c.seek_to_beginning(tp)
        for i, m in enumerate((await poll(c, 3))[:3]):
            assert m.key == b"k%d" % i and list(m.headers) == [("h", b"x%d" % i), ("trace", b"s%d" % i)], (m.key, m.headers)
        await c.stop()
    elif scenario == "group":
        c = consumer(group_id=group)
        await c.start()
        c.subscribe([topic])
        msgs = await poll(c, 5)
        assert msgs[0].value == b"v0", msgs[0].value
        await c.commit({tp: 5})
        await c.stop()
        c = consumer(group_id=group)
        await c.start()
        c.subscribe([topic])
        v = (await poll(c, 1))[0].value
        assert v == b"v5", v
        await c.stop()
    elif scenario == "configs":
        a = await admin()
        before = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        assert "retention.ms" in repr(before), before
        await a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})])
        await a.close()
    elif scenario == "delete-records":
        a = await admin()
        res = await a.delete_records({tp: RecordsToDelete(5)})
        assert res[tp] == 5, res
        await a.close()
    elif scenario == "transactions":
        # Commit c0..c2, abort a0..a2, commit c3..c5 (VerifyTxn in scenarios.go).
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=topic + "-txn")
        await p.start()
        for prefix, rng, commit in (("c", range(0, 3), True), ("a", range(0, 3), False), ("c", range(3, 6), True)):
            await p.begin_transaction()
            for i in rng:
                await p.send_and_wait(topic, key=b"%sk%d" % (prefix.encode(), i), value=b"%s%d" % (prefix.encode(), i), partition=0)
            if commit:
                await p.commit_transaction()
            else:
                await p.abort_transaction()
        await p.stop()
    elif scenario == "exactly-once":
        # Abort a transaction holding an "aborted" record and the group's offset 3, then read the
        # input in the group from its committed offset and write out-v<i> with the offsets.
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=topic + "-txn")
        await p.start()
        await p.begin_transaction()
        await p.send_and_wait(topic + "-out", key=b"k", value=b"aborted", partition=0)
        await p.send_offsets_to_transaction({tp: 3}, group)
        await p.abort_transaction()
        c = consumer(group_id=group, isolation_level="read_committed")
        await c.start()
        c.subscribe([topic])
        done, deadline = 0, time.time() + 30
        while done < 10:
            assert time.time() < deadline, "transformed %d of 10" % done
            batch = await c.getmany(timeout_ms=500)
            if not batch:
                continue
            async with p.transaction():
                offsets = {}
                for btp, recs in batch.items():
                    for m in recs:
                        await p.send(topic + "-out", key=m.key, value=b"out-" + m.value, partition=0)
                        offsets[btp] = m.offset + 1
                        done += 1
                await p.send_offsets_to_transaction(offsets, group)
        await c.stop()
        await p.stop()
    else:
        na("not mapped")


asyncio.run(main())
