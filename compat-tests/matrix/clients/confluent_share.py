"""The share scenario (KIP-932) of sluice's compatibility matrix with confluent-kafka-python's
ShareConsumer (PyPI; librdkafka's KIP-932 share consumer).

Usage: confluent_share.py BOOTSTRAP TOPIC GROUP. Two share consumers of GROUP (explicit
acknowledgement) read the ten seeded records k0..k9=v0..v9: v3 is RELEASEd on its first delivery
and ACCEPTed when it comes back, v7 REJECTed, the others ACCEPTed, each poll's acknowledgements
committed with commit_sync. Every delivery is printed as
"SHARE <consumer> <offset> <value> <delivery count> <accept|release|reject>"; the harness
(compat-tests/matrix/share.go) checks that ledger. Both stop once every record reached its final
acknowledgement, or after 60 s. Exit 0 when both consumers ran without error.
"""
import sys
import threading
import time

from confluent_kafka import AcknowledgeType, ShareConsumer

SEEDED = 10
bootstrap, topic, group = sys.argv[1:4]
deadline = time.monotonic() + 60
lock = threading.Lock()
done = set()  # values with a final acknowledgement
failures = []


def ack(value, delivery):
    if value == "v3" and delivery <= 1:
        return "release"
    if value == "v7":
        return "reject"
    return "accept"


ACKS = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}


def finished():
    with lock:
        return len(done) >= SEEDED or bool(failures)


def run(name):
    try:
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                           "share.acknowledgement.mode": "explicit"})
        try:
            c.subscribe([topic])
            while not finished() and time.monotonic() < deadline:
                msgs = c.poll(0.2)
                for m in msgs:
                    if m.error():
                        raise RuntimeError("poll: %s" % m.error())
                    value = m.value().decode()
                    n = m.delivery_count()
                    how = ack(value, n)
                    c.acknowledge(m, ACKS[how])
                    with lock:
                        print("SHARE %s %d %s %d %s" % (name, m.offset(), value, n, how), flush=True)
                        if how != "release":
                            done.add(value)
                if len(msgs):
                    for tp, err in c.commit_sync(30).items():
                        if err is not None:
                            raise RuntimeError("commit_sync %s: %s" % (tp, err))
        finally:
            c.close()
    except Exception as e:  # reported, and the other consumer stops
        with lock:
            failures.append("%s: %r" % (name, e))


threads = [threading.Thread(target=run, args=(n,)) for n in ("c1", "c2")]
for t in threads:
    t.start()
for t in threads:
    t.join()
if len(done) < SEEDED:
    failures.append("final acknowledgements for %d of %d records before the deadline" % (len(done), SEEDED))
for f in failures:
    print("FAIL " + f, flush=True)
sys.exit(1 if failures else 0)
