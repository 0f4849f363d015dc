"""Two confluent-kafka-python (librdkafka) consumers in one group with
partition.assignment.strategy=cooperative-sticky and synchronous commits after every record.

Phase 1: COUNT keyed records are produced; consumer A alone takes every partition and reads
half of them. Phase 2: consumer B subscribes, which must trigger an incremental rebalance: A
gives up only some partitions (never all of them, never "lost") and B gets exactly those.
Both poll until all COUNT records are read. Phase 3: COUNT more records are produced and
both poll until they are read too. Every record must be read exactly once across A and B.

Prints "OK ..." and exits 0 on success; otherwise prints what differed and exits 1.

usage: groups_cooperative.py BOOTSTRAP TOPIC GROUP PARTITIONS COUNT
"""
import sys
import time

from confluent_kafka import Consumer, Producer

bootstrap, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
partitions, count = int(sys.argv[4]), int(sys.argv[5])
deadline = time.monotonic() + 90
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg, flush=True)


def check_deadline(what):
    if time.monotonic() > deadline:
        print("FAIL timed out:", what, flush=True)
        for f in failures:
            print("FAIL", f)
        sys.exit(1)


def produce(prefix):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    errs = []

    def on_delivery(err, msg):
        if err is not None:
            errs.append(str(err))

    values = []
    for i in range(count):
        v = f"{prefix}-{i:04d}"
        values.append(v)
        # Keys spread the records over the partitions (librdkafka hashes keys).
        p.produce(topic, key=v.encode(), value=v.encode(), on_delivery=on_delivery)
    left = p.flush(30)
    if left or errs:
        print(f"FAIL produce {prefix}: {left} undelivered, errors {errs[:5]}", flush=True)
        sys.exit(1)
    return values


class Member:
    def __init__(self, name):
        self.name = name
        self.owned = set()
        self.events = []  # ("assign"|"revoke"|"lost", sorted partitions)
        self.read = []
        self.c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": "cooperative-sticky",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
        })

    def subscribe(self):
        self.c.subscribe([topic], on_assign=self.on_assign, on_revoke=self.on_revoke,
                         on_lost=self.on_lost)

    def on_assign(self, consumer, tps):
        ps = sorted(tp.partition for tp in tps)
        self.events.append(("assign", ps))
        self.owned |= set(ps)

    def on_revoke(self, consumer, tps):
        ps = sorted(tp.partition for tp in tps)
        self.events.append(("revoke", ps))
        self.owned -= set(ps)

    def on_lost(self, consumer, tps):
        ps = sorted(tp.partition for tp in tps)
        self.events.append(("lost", ps))
        self.owned -= set(ps)
        fail(f"{self.name} lost partitions {ps}")

    def poll_one(self, timeout=0.1):
        msg = self.c.poll(timeout)
        if msg is None:
            return None
        if msg.error():
            fail(f"{self.name} consume error: {msg.error()}")
            return None
        self.read.append(msg.value().decode())
        # Synchronous commit of exactly this record before anything else is read.
        self.c.commit(message=msg, asynchronous=False)
        return msg


all_parts = set(range(partitions))
first = produce("first")
a = Member("A")
b = Member("B")
a.subscribe()

# Phase 1: A alone reads half of the records.
while len(a.read) < count // 2:
    check_deadline(f"A reading half of phase 1 (read {len(a.read)})")
    a.poll_one()
if a.owned != all_parts:
    fail(f"A alone owns {sorted(a.owned)}, want all {sorted(all_parts)}")
a_events_before = len(a.events)

# Phase 2: B joins. Both poll until every phase-1 record is read and B owns partitions.
b.subscribe()
while True:
    check_deadline(f"phase 2: A owns {sorted(a.owned)}, B owns {sorted(b.owned)}, "
                   f"read {len(a.read)}+{len(b.read)} of {count}; A events {a.events}, B events {b.events}")
    a.poll_one()
    b.poll_one()
    if b.owned and (a.owned | b.owned) == all_parts and len(set(a.read + b.read)) >= count:
        break
if a.owned & b.owned:
    fail(f"A and B both own {sorted(a.owned & b.owned)}")

a_join_events = a.events[a_events_before:]
revoked = set()
for kind, ps in a_join_events:
    if kind == "revoke":
        revoked |= set(ps)
if not revoked:
    fail(f"A saw no revocation when B joined: {a_join_events}")
if revoked == all_parts:
    fail(f"A had every partition revoked when B joined (eager, not incremental): {a_join_events}")
if set(b.owned) != revoked:
    fail(f"B owns {sorted(b.owned)}, but A gave up {sorted(revoked)}")

# Phase 3: more records while both are members.
second = produce("second")
want = set(first) | set(second)
while len(set(a.read + b.read)) < len(want):
    check_deadline(f"phase 3: read {len(set(a.read + b.read))} of {len(want)}")
    a.poll_one()
    b.poll_one()

both = a.read + b.read
dups = sorted({v for v in both if both.count(v) > 1}) if len(both) != len(set(both)) else []
if dups:
    fail(f"{len(dups)} records read more than once: {dups[:10]}")
if set(both) != want:
    fail(f"unexpected records {sorted(set(both) - want)[:10]}")
if not [v for v in b.read if v.startswith("second")] or not [v for v in a.read if v.startswith("second")]:
    fail(f"phase 3 records not shared: A read {len(a.read)}, B read {len(b.read)}")

b.c.close()
a.c.close()
if failures:
    print(f"A events {a.events}\nB events {b.events}")
    sys.exit(1)
print(f"OK A read {len(a.read)} B read {len(b.read)}; A events {a.events}; B events {b.events}")
