"""kafka-python smoke: admin, produce plain and each codec, group consume with
commit. Idempotence and transactions are checked only when the installed
kafka-python has them (2.1+); older ones print SKIP lines saying so.

Usage: /usr/bin/python3 kafkapython_smoke.py HOST:PORT
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

try:
    import kafka
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
except ImportError as e:
    print("SKIP kafka-python: not installed (%s)" % e)
    sys.exit(0)


def check(name, fn):
    global FAILS
    try:
        err = fn()
    except Exception as e:  # noqa: BLE001 - every failure is a result line
        err = "%s: %s" % (type(e).__name__, e)
    if err is None:
        print("PASS", name, flush=True)
    elif isinstance(err, str) and err.startswith("SKIP "):
        print("SKIP %s: %s" % (name, err[5:]), flush=True)
    else:
        FAILS += 1
        print("FAIL %s: %s" % (name, str(err).replace("\n", " ")[:300]), flush=True)


admin = KafkaAdminClient(bootstrap_servers=BOOT, request_timeout_ms=15000)


def create(topic, parts=3):
    admin.create_topics([NewTopic(topic, num_partitions=parts, replication_factor=1)], timeout_ms=15000)


def produce(topic, n, **conf):
    p = KafkaProducer(bootstrap_servers=BOOT, linger_ms=5, **conf)
    futs = [p.send(topic, key=b"k%d" % i, value=b"v%06d" % i) for i in range(n)]
    p.flush(30)
    for f in futs:
        f.get(timeout=30)
    p.close()


def consume(topic, n, group=None, commit=False, timeout=30, **conf):
    c = KafkaConsumer(topic, bootstrap_servers=BOOT, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=2000, **conf)
    got = []
    deadline = time.time() + timeout
    while len(got) < n and time.time() < deadline:
        for batch in c.poll(timeout_ms=500).values():
            got.extend(m.value for m in batch)
    if commit:
        c.commit()
    c.close()
    return got


def want_values(got, n):
    if sorted(got) != sorted(b"v%06d" % i for i in range(n)):
        return "read %d records, want %d exact values" % (len(got), n)
    return None


def admin_check():
    t = "kp-admin-" + RUN
    create(t, 4)
    if t not in admin.list_topics():
        return "created topic not listed"
    desc = admin.describe_topics([t])
    if len(desc[0]["partitions"]) != 4:
        return "describe_topics: %d partitions, want 4" % len(desc[0]["partitions"])
    admin.delete_topics([t], timeout_ms=15000)
    for _ in range(50):
        if t not in admin.list_topics():
            return None
        time.sleep(0.1)
    return "deleted topic still listed"


def produce_check(suffix, **conf):
    def run():
        t = "kp-%s-%s" % (suffix, RUN)
        create(t)
        produce(t, 1000, **conf)
        return want_values(consume(t, 1000), 1000)
    return run


def idempotent_check():
    if "enable_idempotence" not in KafkaProducer.DEFAULT_CONFIG:
        return "SKIP kafka-python %s has no idempotent producer (added in 2.1)" % kafka.__version__
    return produce_check("idem", enable_idempotence=True)()


def txn_check():
    if "transactional_id" not in KafkaProducer.DEFAULT_CONFIG:
        return "SKIP kafka-python %s has no transactions (added in 2.1)" % kafka.__version__
    t = "kp-txn-" + RUN
    create(t)
    p = KafkaProducer(bootstrap_servers=BOOT, transactional_id="kp-txn-" + RUN)
    p.init_transactions()
    p.begin_transaction()
    for i in range(100):
        p.send(t, value=b"v%06d" % i)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(100, 150):
        p.send(t, value=b"aborted%06d" % i)
    p.abort_transaction()
    p.close()
    return want_values(consume(t, 100, isolation_level="read_committed"), 100)


def group_commit_check():
    t, g = "kp-group-" + RUN, "kp-g-" + RUN
    create(t)
    produce(t, 300)
    first = consume(t, 300, group=g, commit=True)
    if len(first) != 300:
        return "first read %d, want 300" % len(first)
    c = KafkaConsumer(bootstrap_servers=BOOT, group_id=g, enable_auto_commit=False)
    total = sum(c.committed(TopicPartition(t, p)) or 0 for p in range(3))
    c.close()
    if total != 300:
        return "committed offsets sum to %d, want 300" % total
    produce(t, 10)
    second = consume(t, 10, group=g, timeout=15)
    if len(second) != 10:
        return "after commit the group read %d new records, want 10" % len(second)
    return None


check("admin-create-describe-delete", admin_check)
check("produce-plain", produce_check("plain", acks="all"))
check("produce-idempotent", idempotent_check)
for codec in ("gzip", "snappy", "lz4", "zstd"):
    check("produce-" + codec, produce_check(codec, compression_type=codec))
check("group-commit", group_commit_check)
check("transactions", txn_check)
admin.close()
sys.exit(1 if FAILS else 0)
