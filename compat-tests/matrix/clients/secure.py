"""The matrix's security cells for the Python clients.

secure.py LIB MECHANISM BOOTSTRAP TOPIC CA CERT KEY USER SCRAM_PASS PLAIN_PASS JWT

LIB is "confluent" (confluent-kafka-python, librdkafka) or "kafka-python". MECHANISM is mtls,
scram-sha-512, plain or oauthbearer. The client produces ck<i>=c<i> (i < 5) to partition 0 of
TOPIC over the secured listener at BOOTSTRAP, consumes them back from the beginning over the
same listener and prints "key:value" lines. Exit 3 with a reason on the last line of stdout: the
client cannot use the mechanism.
"""
import sys
import time

N = 5


def na(reason):
    print(reason)
    sys.exit(3)


def confluent(mech, bootstrap, topic, ca, cert, key, user, scram_pass, plain_pass, jwt):
    from confluent_kafka import Consumer, Producer, TopicPartition

    conf = {"bootstrap.servers": bootstrap}
    if mech == "mtls":
        conf.update({"security.protocol": "SSL", "ssl.ca.location": ca,
                     "ssl.certificate.location": cert, "ssl.key.location": key})
    elif mech == "scram-sha-512":
        conf.update({"security.protocol": "SASL_SSL", "ssl.ca.location": ca, "sasl.mechanisms": "SCRAM-SHA-512",
                     "sasl.username": user, "sasl.password": scram_pass})
    elif mech == "plain":
        conf.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                     "sasl.username": user, "sasl.password": plain_pass})
    elif mech == "oauthbearer":
        # librdkafka's built-in unsecured JWT (alg none), as Kafka's own test tokens.
        conf.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "OAUTHBEARER",
                     "enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=" + user})
    errors = []
    p = Producer(dict(conf))
    for i in range(N):
        p.produce(topic, key=b"ck%d" % i, value=b"c%d" % i, partition=0,
                  on_delivery=lambda err, msg: err and errors.append(err))
    left = p.flush(30)
    if left or errors:
        raise SystemExit("produce: %d undelivered, errors %s" % (left, errors))
    c = Consumer(dict(conf, **{"group.id": topic + "-sec", "enable.auto.commit": False}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 30
    while len(got) < N and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            raise SystemExit("consume: %s" % m.error())
        got.append((m.key(), m.value()))
    c.close()
    return got


def kafkapython(mech, bootstrap, topic, ca, cert, key, user, scram_pass, plain_pass, jwt):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    conf = {"bootstrap_servers": bootstrap}
    if mech == "mtls":
        conf.update(security_protocol="SSL", ssl_cafile=ca, ssl_certfile=cert, ssl_keyfile=key)
    elif mech == "scram-sha-512":
        conf.update(security_protocol="SASL_SSL", ssl_cafile=ca, sasl_mechanism="SCRAM-SHA-512",
                    sasl_plain_username=user, sasl_plain_password=scram_pass)
    elif mech == "plain":
        conf.update(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                    sasl_plain_username=user, sasl_plain_password=plain_pass)
    elif mech == "oauthbearer":
        try:
            from kafka.sasl.oauth import AbstractTokenProvider
        except ImportError:
            from kafka.oauth.abstract import AbstractTokenProvider

        class Static(AbstractTokenProvider):
            def token(self):
                return jwt

        conf.update(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Static())
    p = KafkaProducer(acks="all", **conf)
    for i in range(N):
        p.send(topic, key=b"ck%d" % i, value=b"c%d" % i, partition=0).get(timeout=30)
    p.close()
    c = KafkaConsumer(consumer_timeout_ms=20000, enable_auto_commit=False, **conf)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = []
    for m in c:
        got.append((m.key, m.value))
        if len(got) == N:
            break
    c.close()
    return got


def main():
    lib, args = sys.argv[1], sys.argv[2:]
    got = (confluent if lib == "confluent" else kafkapython)(*args)
    for k, v in got:
        print("%s:%s" % (k.decode(), v.decode()))
    if len(got) != N:
        raise SystemExit("consumed %d of %d records" % (len(got), N))


main()
