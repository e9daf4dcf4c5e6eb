#!/usr/bin/python3
"""Smoke test of ringbroker with confluent-kafka (librdkafka).

Usage: confluent_smoke.py BOOTSTRAP [TOPIC]

Creates TOPIC with 3 partitions through AdminClient, produces N messages to
explicit partitions, flushes, and reads them back with a Consumer that uses
assign() (no group membership: consumer groups are not part of this smoke
test). Exits non-zero with a message on any failure.
"""
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
PER_PARTITION = 200
TIMEOUT_S = 60


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def main():
    if len(sys.argv) < 2:
        fail("usage: confluent_smoke.py BOOTSTRAP [TOPIC]")
    bootstrap = sys.argv[1]
    topic = sys.argv[2] if len(sys.argv) > 2 else "py-smoke"
    common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}

    admin = AdminClient(dict(common))
    futures = admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)],
                                  operation_timeout=30, request_timeout=30)
    for name, fut in futures.items():
        try:
            fut.result(timeout=TIMEOUT_S)
        except Exception as e:  # KafkaException or timeout
            fail("create_topics %s: %r" % (name, e))
    print("created %s with %d partitions" % (topic, PARTITIONS), flush=True)

    md = admin.list_topics(topic=topic, timeout=30)
    tmd = md.topics.get(topic)
    if tmd is None or tmd.error is not None:
        fail("metadata for %s: %r" % (topic, tmd and tmd.error))
    if len(tmd.partitions) != PARTITIONS:
        fail("metadata for %s: %d partitions, want %d" % (topic, len(tmd.partitions), PARTITIONS))

    expected = {p: [] for p in range(PARTITIONS)}
    delivered = []
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append("%s/%s: %s" % (msg.topic(), msg.partition(), err))
        else:
            delivered.append((msg.partition(), msg.offset(), msg.value()))

    producer = Producer(dict(common, **{"acks": "all", "linger.ms": 5, "enable.idempotence": False,
                                        "compression.type": "lz4"}))
    for i in range(PARTITIONS * PER_PARTITION):
        p = i % PARTITIONS
        key = ("k%06d" % i).encode()
        value = ("confluent value %06d %s" % (i, "x" * (i % 50))).encode()
        expected[p].append((key, value))
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=p,
                                 headers=[("idx", str(i).encode())], on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(TIMEOUT_S)
    if left:
        fail("flush: %d messages still queued after %ds" % (left, TIMEOUT_S))
    if errors:
        fail("%d delivery errors, first: %s" % (len(errors), errors[:5]))
    total = PARTITIONS * PER_PARTITION
    if len(delivered) != total:
        fail("%d delivery reports, want %d" % (len(delivered), total))
    for p, off, _ in delivered:
        if off < 0 or off >= PER_PARTITION:
            fail("delivery report offset %d for partition %d, want 0..%d" % (off, p, PER_PARTITION - 1))
    print("produced %d messages" % total, flush=True)

    # librdkafka wants a group.id for a Consumer; assign() does not join it
    # and auto commit is off, so no group coordinator is used.
    consumer = Consumer(dict(common, **{"group.id": "py-smoke-unused", "enable.auto.commit": False,
                                        "enable.partition.eof": False, "auto.offset.reset": "earliest"}))
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got = {p: [] for p in range(PARTITIONS)}
    count = 0
    deadline = time.monotonic() + TIMEOUT_S
    while count < total and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            fail("consume: %s" % msg.error())
        p = msg.partition()
        if msg.offset() != len(got[p]):
            fail("partition %d: offset %d, want %d" % (p, msg.offset(), len(got[p])))
        got[p].append((msg.key(), msg.value()))
        hdrs = msg.headers() or []
        if len(hdrs) != 1 or hdrs[0][0] != "idx":
            fail("partition %d offset %d: headers %r, want one idx header" % (p, msg.offset(), hdrs))
        count += 1
    consumer.close()
    if count != total:
        fail("consumed %d of %d messages in %ds" % (count, total, TIMEOUT_S))
    for p in range(PARTITIONS):
        if got[p] != expected[p]:
            for i, (g, w) in enumerate(zip(got[p], expected[p])):
                if g != w:
                    fail("partition %d offset %d: got %r, want %r" % (p, i, g, w))
            fail("partition %d: %d messages, want %d" % (p, len(got[p]), len(expected[p])))
    print("consumed %d messages, all match" % count, flush=True)


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        fail("KafkaException: %r" % (e,))
