"""Two confluent-kafka-python (librdkafka) consumers in one group with synchronous commits
after every record.

Phase 1: COUNT keyed records are produced; consumer A alone takes every partition and reads
half of them. Phase 2: consumer B subscribes. With STRATEGY cooperative-sticky that must be
an incremental rebalance: A gives up only some partitions (never all of them, never "lost")
and B gets exactly those. With an eager STRATEGY (range, roundrobin) A gives up everything and
the two get disjoint shares. Both poll until all COUNT records are read. Phase 3: COUNT more
records are produced and both poll until they are read too. Every record must be read exactly
once across A and B.

Prints "OK ..." and exits 0 on success; otherwise prints what differed and exits 1.

usage: groups_cooperative.py BOOTSTRAP TOPIC GROUP PARTITIONS COUNT STRATEGY
"""
import faulthandler
import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

bootstrap, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
partitions, count = int(sys.argv[4]), int(sys.argv[5])
strategy = sys.argv[6]
cooperative = strategy == "cooperative-sticky"
deadline = time.monotonic() + 90
failures = []


def watchdog():
    # A blocking client call (commit, close) that never returns would otherwise hang until
    # the test's own timeout kills us silently: say where we are stuck, then exit.
    print("FAIL watchdog: still running 10s after the deadline; Python stacks on stderr", flush=True)
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()
    os._exit(2)


_watchdog = threading.Timer(100, watchdog)
_watchdog.daemon = True
_watchdog.start()


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


T0 = time.monotonic()


class Member:
    def __init__(self, name):
        self.name = name
        self.owned = set()
        self.events = []  # ("assign"|"revoke"|"lost", sorted partitions)
        self.read = []
        self.pending = {}  # partition -> next offset read but not yet committed
        self.commit_retries = 0
        self.c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": strategy,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
            # Group state machine debug logs go to stderr; the test shows them only on failure.
            "debug": "cgrp",
            "client.id": name,
        })

    def subscribe(self):
        self.c.subscribe([topic], on_assign=self.on_assign, on_revoke=self.on_revoke,
                         on_lost=self.on_lost)

    def on_assign(self, consumer, tps):
        ps = sorted(tp.partition for tp in tps)
        self.events.append(("assign", ps, round(time.monotonic() - T0, 2)))
        other = b if self is a else a
        if set(ps) & other.owned:
            fail(f"{self.name} assigned {ps} while {other.name} owns {sorted(other.owned)}")
        self.owned |= set(ps)

    def on_revoke(self, consumer, tps):
        ps = sorted(tp.partition for tp in tps)
        self.events.append(("revoke", ps, round(time.monotonic() - T0, 2)))
        # What a commit refused mid-rebalance left behind is committed before the partitions
        # are given up, so their next owner starts after everything read here.
        if not self.commit_pending(set(ps)):
            fail(f"{self.name} could not commit {self.pending} while giving up {ps}")
        self.owned -= set(ps)

    def on_lost(self, consumer, tps):
        ps = sorted(tp.partition for tp in tps)
        self.events.append(("lost", ps, round(time.monotonic() - T0, 2)))
        self.owned -= set(ps)
        fail(f"{self.name} lost partitions {ps}")

    def poll_one(self, timeout=0.02):
        msg = self.c.poll(timeout)
        if msg is None:
            return None
        if msg.error():
            fail(f"{self.name} consume error: {msg.error()}")
            return None
        self.read.append(msg.value().decode())
        self.pending[msg.partition()] = msg.offset() + 1
        # Synchronous commit of this record before anything else is read. A commit that
        # reaches the coordinator between JoinGroup and SyncGroup is refused with
        # REBALANCE_IN_PROGRESS (as Kafka does); it stays pending and is retried on the next
        # poll or committed in on_revoke.
        self.commit_pending(None)
        return msg

    def commit_pending(self, partitions):
        offsets = [TopicPartition(topic, p, o) for p, o in sorted(self.pending.items())
                   if partitions is None or p in partitions]
        if not offsets:
            return True
        try:
            self.c.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.REBALANCE_IN_PROGRESS:
                fail(f"{self.name} commit {offsets}: {e}")
            self.commit_retries += 1
            return False
        for tp in offsets:
            if self.pending.get(tp.partition) == tp.offset:
                del self.pending[tp.partition]
        return True


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

t_phase2 = round(time.monotonic() - T0, 2)
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
for kind, ps, *_ in a_join_events:
    if kind == "revoke":
        revoked |= set(ps)
if not revoked:
    fail(f"A saw no revocation when B joined: {a_join_events}")
if cooperative:
    if revoked == all_parts:
        fail(f"A had every partition revoked when B joined (eager, not incremental): {a_join_events}")
    if set(b.owned) != revoked:
        fail(f"B owns {sorted(b.owned)}, but A gave up {sorted(revoked)}")
elif revoked != all_parts:
    fail(f"eager {strategy}: A gave up only {sorted(revoked)} when B joined: {a_join_events}")

t_phase3 = round(time.monotonic() - T0, 2)
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

for m in (a, b):
    if not m.commit_pending(None):
        fail(f"{m.name} could not commit {m.pending} at the end")
b.c.close()
a.c.close()
if failures:
    print(f"A events {a.events}\nB events {b.events}")
    sys.exit(1)
print(f"OK A read {len(a.read)} B read {len(b.read)}; commits retried after REBALANCE_IN_PROGRESS: "
      f"A {a.commit_retries}, B {b.commit_retries}; B joined at {t_phase2}s, settled at {t_phase3}s, "
      f"done at {round(time.monotonic() - T0, 2)}s; A events {a.events}; B events {b.events}")
