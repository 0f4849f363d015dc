#!/usr/bin/env python3
"""Measures an AlterReplicaLogDirs move of one partition on a running sluice (or Kafka) broker
with two log.dirs: it writes SIZE_MIB MiB to a new one-partition topic "m", then moves it to the
other directory with kafka-reassign-partitions (log_dirs) while a producer sends one acks=all
record at a time, and prints the time of the move and the latency percentiles of that producer.
sluice logs copy_took and swap_took (the time the partition was not served) for the move.

Usage: bench/jbod_move.py BOOTSTRAP DIR1 DIR2 KAFKA_LIB SIZE_MIB  (python3-confluent-kafka, java)
"""
import json, os, subprocess, sys, threading, time
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

boot, d1, d2, jars, mb = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
admin = AdminClient({"bootstrap.servers": boot})
admin.create_topics([NewTopic("m", 1, 1)])["m"].result()
p = Producer({"bootstrap.servers": boot, "linger.ms": 5, "acks": "all"})
val = os.urandom(1024)
for i in range(mb * 1024):
    while True:
        try:
            p.produce("m", val, partition=0); break
        except BufferError:
            p.poll(0.01)
p.flush()
src = d1 if os.path.isdir(os.path.join(d1, "m-0")) else d2
dst = d2 if src == d1 else d1
lat, stop = [], threading.Event()
def loop():
    q = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 0})
    while not stop.is_set():
        t = time.monotonic()
        q.produce("m", b"x", partition=0)
        q.flush(30)
        lat.append(time.monotonic() - t)
th = threading.Thread(target=loop); th.start()
time.sleep(1)
plan = os.path.join(os.path.dirname(d1.rstrip("/")), "jbod-move-plan.json")
json.dump({"version": 1, "partitions": [{"topic": "m", "partition": 0, "replicas": [1], "log_dirs": [dst]}]}, open(plan, "w"))
t0 = time.monotonic()
subprocess.run(["java", "-cp", jars + "/*", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand", "--bootstrap-server", boot,
                "--execute", "--reassignment-json-file", plan], check=True, capture_output=True)
while not os.path.isdir(os.path.join(dst, "m-0")) or os.path.isdir(os.path.join(src, "m-0")):
    time.sleep(0.05)
moved = time.monotonic() - t0
time.sleep(1)
stop.set(); th.join()
lat.sort()
print(f"partition {mb} MiB moved {src} -> {dst} in {moved:.2f}s (incl. tool start); produce acks=all during: n={len(lat)} p50={lat[len(lat)//2]*1000:.1f}ms p99={lat[int(len(lat)*0.99)]*1000:.1f}ms max={lat[-1]*1000:.1f}ms")
