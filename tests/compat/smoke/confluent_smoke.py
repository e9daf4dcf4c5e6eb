"""confluent-kafka (librdkafka) smoke: admin, produce plain / idempotent / each
codec, group consume with commit, transactions (commit and abort, read_committed).

Usage: /usr/bin/python3 confluent_smoke.py HOST:PORT
Prints one "PASS name", "FAIL name: why" or "SKIP name: why" line per check and
exits 1 when any check failed.
"""
import os
import sys
import time
import uuid

BOOT = sys.argv[1]
RUN = os.environ.get("RUN_ID", uuid.uuid4().hex[:8])
FAILS = 0


def result(name, err):
    global FAILS
    if err is None:
        print("PASS", name, flush=True)
    else:
        FAILS += 1
        print("FAIL %s: %s" % (name, str(err).replace("\n", " ")[:300]), flush=True)


def check(name, fn):
    try:
        result(name, fn())
    except Exception as e:  # noqa: BLE001 - every failure is a result line
        result(name, "%s: %s" % (type(e).__name__, e))


try:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError as e:
    print("SKIP confluent-kafka: not installed (%s)" % e)
    sys.exit(0)

admin = AdminClient({"bootstrap.servers": BOOT})


def create(topic, parts=3):
    futs = admin.create_topics([NewTopic(topic, num_partitions=parts, replication_factor=1)], operation_timeout=10)
    futs[topic].result(15)


def consume_all(topic, n, group=None, isolation="read_uncommitted", commit=False, timeout=30):
    conf = {
        "bootstrap.servers": BOOT,
        "group.id": group or "cf-read-" + uuid.uuid4().hex[:8],
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": isolation,
    }
    c = Consumer(conf)
    c.subscribe([topic])
    got = []
    deadline = time.time() + timeout
    try:
        while len(got) < n and time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                raise KafkaException(m.error())
            got.append(m.value())
        # a short extra poll proves nothing beyond n is visible
        end = time.time() + 1.5
        while time.time() < end:
            m = c.poll(0.3)
            if m is not None and not m.error():
                got.append(m.value())
        if commit:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return got


def produce(topic, n, **conf):
    p = Producer(dict({"bootstrap.servers": BOOT, "linger.ms": 5}, **conf))
    errs = []
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%06d" % i, on_delivery=lambda e, m: e and errs.append(e))
        p.poll(0)
    left = p.flush(30)
    if errs:
        raise RuntimeError("delivery errors: %s" % errs[:3])
    if left:
        raise RuntimeError("%d messages not delivered" % left)


def want_values(got, n):
    want = sorted(b"v%06d" % i for i in range(n))
    if sorted(got) != want:
        return "read %d records, want %d exact values" % (len(got), n)
    return None


def admin_check():
    t = "cf-admin-" + RUN
    create(t, 4)
    md = admin.list_topics(timeout=10)
    if t not in md.topics or len(md.topics[t].partitions) != 4:
        return "created topic not in metadata with 4 partitions"
    if 1 not in md.brokers:
        return "broker id 1 not in metadata: %s" % list(md.brokers)
    admin.delete_topics([t], operation_timeout=10)[t].result(15)
    for _ in range(50):
        if t not in admin.list_topics(timeout=10).topics:
            return None
        time.sleep(0.1)
    return "deleted topic still listed"


def produce_check(suffix, **conf):
    def run():
        t = "cf-%s-%s" % (suffix, RUN)
        create(t)
        produce(t, 1000, **conf)
        return want_values(consume_all(t, 1000), 1000)
    return run


def group_commit_check():
    t, g = "cf-group-" + RUN, "cf-g-" + RUN
    create(t)
    produce(t, 300)
    first = consume_all(t, 300, group=g, commit=True)
    if len(first) != 300:
        return "first read %d, want 300" % len(first)
    c = Consumer({"bootstrap.servers": BOOT, "group.id": g})
    try:
        offs = c.committed([TopicPartition(t, p) for p in range(3)], timeout=10)
    finally:
        c.close()
    if sum(o.offset for o in offs) != 300:
        return "committed offsets sum to %d, want 300" % sum(o.offset for o in offs)
    produce(t, 10)
    second = consume_all(t, 10, group=g, timeout=15)
    if len(second) != 10:
        return "after commit the group read %d new records, want 10" % len(second)
    return None


def txn_check():
    t = "cf-txn-" + RUN
    create(t)
    p = Producer({"bootstrap.servers": BOOT, "transactional.id": "cf-txn-" + RUN})
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(100):
        p.produce(t, value=b"v%06d" % i)
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(100, 150):
        p.produce(t, value=b"aborted%06d" % i)
    # Deliver them first (abort would purge unsent ones): the aborted
    # records must be in the log for read_committed to filter out.
    if p.flush(15):
        return "aborted records not delivered before abort"
    p.abort_transaction(15)
    committed = consume_all(t, 100, isolation="read_committed")
    err = want_values(committed, 100)
    if err:
        return "read_committed: " + err
    raw = consume_all(t, 150, isolation="read_uncommitted")
    if len(raw) != 150:
        return "read_uncommitted read %d, want 150 (committed + aborted)" % len(raw)
    return None


check("admin-create-delete", admin_check)
check("produce-plain", produce_check("plain", acks="all"))
check("produce-idempotent", produce_check("idem", **{"enable.idempotence": True}))
for codec in ("gzip", "snappy", "lz4", "zstd"):
    check("produce-" + codec, produce_check(codec, **{"enable.idempotence": True, "compression.type": codec}))
check("group-commit", group_commit_check)
check("transactions", txn_check)
sys.exit(1 if FAILS else 0)
