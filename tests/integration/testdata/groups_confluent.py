#!/usr/bin/python3
"""Consumer group checks with confluent-kafka (librdkafka), run by
groups_clients_test.go: argv = bootstrap, topic prefix.

1. Two consumers in one group with partition.assignment.strategy=
   cooperative-sticky share a 6-partition topic: disjoint assignments that
   cover every partition, and together they read every record.
2. Static membership: a member with group.instance.id is closed (static
   members send no LeaveGroup) and restarted within session.timeout.ms; it
   gets the same partitions back and the other member is never revoked.
Exits non-zero with a message on any failure."""
import sys
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, prefix = sys.argv[1], sys.argv[2]
PARTS = 6
DEADLINE = 90.0


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def create(topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, PARTS, 1)])
    for f in fs.values():
        f.result(30)


def produce(topic, n):
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"v%06d" % i, partition=i % PARTS)
        p.poll(0)
    if p.flush(30) != 0:
        fail("produce flush left messages")


class Member:
    def __init__(self, group, topic, name, instance=None):
        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 200,
        }
        if instance:
            conf["group.instance.id"] = instance
        self.name = name
        self.c = Consumer(conf)
        self.revoked = []
        self.assigned = []
        self.seen = set()
        self.c.subscribe([topic], on_assign=self.on_assign, on_revoke=self.on_revoke)

    def on_assign(self, c, parts):
        self.assigned.extend(p.partition for p in parts)

    def on_revoke(self, c, parts):
        self.revoked.extend(p.partition for p in parts)

    def poll(self):
        m = self.c.poll(0.05)
        if m is not None and not m.error():
            self.seen.add((m.partition(), m.offset()))

    def owned(self):
        return sorted(p.partition for p in self.c.assignment())


def poll_until(members, cond, what):
    end = time.time() + DEADLINE
    while time.time() < end:
        for m in members:
            m.poll()
        if cond():
            return
    fail("timed out waiting for " + what + ": " + ", ".join("%s owns %s" % (m.name, m.owned()) for m in members))


def covers(a, b):
    oa, ob = set(a.owned()), set(b.owned())
    return oa and ob and not (oa & ob) and (oa | ob) == set(range(PARTS))


# 1. Cooperative-sticky sharing.
topic = prefix + "-coop"
create(topic)
produce(topic, 600)
a = Member(prefix + "-coop-group", topic, "a")
b = Member(prefix + "-coop-group", topic, "b")
poll_until([a, b], lambda: covers(a, b) and len(a.seen | b.seen) >= 600, "two members sharing all partitions and 600 records")
print("cooperative: a owns %s, b owns %s, read %d records" % (a.owned(), b.owned(), len(a.seen | b.seen)), flush=True)
a.c.close()
b.c.close()

# 2. Static member restart.
topic = prefix + "-static"
create(topic)
produce(topic, 60)
group = prefix + "-static-group"
x = Member(group, topic, "x", instance="instance-x")
y = Member(group, topic, "y", instance="instance-y")
poll_until([x, y], lambda: covers(x, y), "two static members sharing all partitions")
# Let the group settle: both keep their partitions for a moment.
settle = time.time() + 2
while time.time() < settle:
    x.poll()
    y.poll()
if not covers(x, y):
    fail("assignment changed while settling")
before_x, before_y = x.owned(), y.owned()
y.revoked.clear()
x.c.close()
x2 = Member(group, topic, "x2", instance="instance-x")
poll_until([x2, y], lambda: len(x2.owned()) > 0, "the restarted static member to get partitions")
settle = time.time() + 3
while time.time() < settle:
    x2.poll()
    y.poll()
if x2.owned() != before_x:
    fail("restarted static member owns %s, before the restart %s" % (x2.owned(), before_x))
if y.revoked:
    fail("the other member was revoked %s during the static restart" % y.revoked)
if y.owned() != before_y:
    fail("the other member owns %s, before %s" % (y.owned(), before_y))
print("static: x owned %s before and %s after the restart; y kept %s" % (before_x, x2.owned(), y.owned()), flush=True)
x2.c.close()
y.c.close()
print("OK", flush=True)
