#!/usr/bin/python3
"""Transaction checks with confluent-kafka (librdkafka), run by
txn_confluent_test.go: argv = bootstrap, topic prefix.

1. A transactional producer commits a transaction of 10 records and aborts
   one of 5 on <prefix>-out (3 partitions): a read_committed consumer reads
   the 10 only, a read_uncommitted one all 15.
2. send_offsets_to_transaction: a consumer in group <prefix>-group reads 8
   records of <prefix>-in; an aborted transaction that carries its position
   leaves the group's committed offsets as they were, a committed one moves
   them to the position, all at once; while it is pending, committed() with
   require_stable (read_committed) does not answer.
Exits non-zero with a message on any failure; prints "OK" at the end."""
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, prefix = sys.argv[1], sys.argv[2]
OUT, IN, GROUP = prefix + "-out", prefix + "-in", prefix + "-group"
DEADLINE = 60.0


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def create(topic, parts):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for t, f in admin.create_topics([NewTopic(topic, parts, 1)]).items():
        f.result(30)


def read_all(topic, parts, isolation):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-" + isolation, "isolation.level": isolation,
                  "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    got, eof = [], set()
    end = time.time() + DEADLINE
    while len(eof) < parts and time.time() < end:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
                continue
            fail("consume %s: %s" % (isolation, m.error()))
        got.append(m.value().decode())
    c.close()
    if len(eof) < parts:
        fail("%s consumer reached the end of %d of %d partitions" % (isolation, len(eof), parts))
    return got


def committed(parts, isolation="read_committed", timeout=30):
    # librdkafka asks with require_stable when isolation.level=read_committed.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                  "isolation.level": isolation})
    offs = c.committed([TopicPartition(IN, p) for p in range(parts)], timeout=timeout)
    c.close()
    return {tp.partition: tp.offset for tp in offs}


create(OUT, 3)
create(IN, 2)

p = Producer({"bootstrap.servers": bootstrap, "transactional.id": prefix + "-txn", "transaction.timeout.ms": 30000})
p.init_transactions(30)
p.begin_transaction()
for i in range(10):
    p.produce(OUT, value=("committed-%d" % i).encode(), partition=i % 3)
p.commit_transaction(30)
p.begin_transaction()
for i in range(5):
    p.produce(OUT, value=("aborted-%d" % i).encode(), partition=i % 3)
p.flush(30)
p.abort_transaction(30)

rc = read_all(OUT, 3, "read_committed")
ru = read_all(OUT, 3, "read_uncommitted")
if sorted(rc) != sorted("committed-%d" % i for i in range(10)):
    fail("read_committed read %d records: %s" % (len(rc), sorted(rc)))
if len(ru) != 15:
    fail("read_uncommitted read %d records, want 15" % len(ru))
print("read_committed %d, read_uncommitted %d" % (len(rc), len(ru)), flush=True)

# send_offsets_to_transaction
plain = Producer({"bootstrap.servers": bootstrap})
for i in range(8):
    plain.produce(IN, value=("in-%d" % i).encode(), partition=i % 2)
plain.flush(30)
c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
c.subscribe([IN])
seen = []
end = time.time() + DEADLINE
while len(seen) < 8 and time.time() < end:
    m = c.poll(0.5)
    if m is None or m.error():
        continue
    seen.append(m)
if len(seen) < 8:
    fail("group consumer read %d of 8 input records" % len(seen))
before = committed(2)
if any(o >= 0 for o in before.values()):
    fail("group has committed offsets before any transaction: %s" % before)

positions = c.position([TopicPartition(IN, pp) for pp in range(2)])
p.begin_transaction()
p.produce(OUT, value=b"with-offsets-aborted", partition=0)
p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 30)
p.flush(30)
p.abort_transaction(30)
after_abort = committed(2)
if any(o >= 0 for o in after_abort.values()):
    fail("aborted transaction moved the group's offsets: %s" % after_abort)

p.begin_transaction()
p.produce(OUT, value=b"with-offsets", partition=0)
p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 30)
mid = committed(2, "read_uncommitted")
if any(o >= 0 for o in mid.values()):
    fail("offsets visible before the commit: %s" % mid)
# With require_stable the pending commit answers UNSTABLE_OFFSET_COMMIT,
# which librdkafka retries until its timeout.
try:
    unstable = committed(2, "read_committed", timeout=2)
    fail("committed() with require_stable returned %s while a commit was pending" % unstable)
except Exception as e:  # KafkaException: _TIMED_OUT
    print("require_stable while pending: %s" % e, flush=True)
p.commit_transaction(30)
after = committed(2)
want = {tp.partition: tp.offset for tp in positions}
if after != want or sum(after.values()) != 8:
    fail("committed offsets after the commit %s, want %s" % (after, want))
c.close()
print("group offsets %s -> %s" % (before, after), flush=True)
print("OK", flush=True)
