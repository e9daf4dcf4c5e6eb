// kafkajs smoke check of `make compat`: admin (create, metadata, list,
// delete topics, fetch group offsets), produce acks=-1 plain / each built-in
// codec / idempotent, group consume with per-partition order and commit, a
// second member of the group that finds nothing left, and a committed plus
// an aborted transaction read back with read_committed.
//
// Usage: NODE_PATH=DIR/node_modules node kafkajs_smoke.js HOST:PORT
// (DIR: where tests/compat/deps.sh ran `npm ci` on this folder's lock file).
// RUN_ID makes topic and group names unique; KAFKAJS_LOG_LEVEL (default WARN)
// sets how much kafkajs logs, to stderr. Prints one "PASS name",
// "FAIL name: why" or "SKIP name: why" line per check and exits 1 when any
// check failed. Every check has its own deadline and the whole run one more,
// so a hung request ends as a FAIL line, not a hung run.
'use strict'

const BOOT = process.argv[2]
if (!BOOT) {
  console.error('usage: node kafkajs_smoke.js HOST:PORT')
  process.exit(2)
}
const RUN = process.env.RUN_ID || Date.now().toString(36)
const CHECK_MS = 20000 // one check's deadline
const TOTAL_MS = 55000 // the whole run's; a normal run takes 20-30 s
let fails = 0
let current = '' // the check running now

let kjs
try {
  kjs = require('kafkajs')
} catch (e) {
  console.log(`SKIP kafkajs: not installed (${e.code || e.message}); run tests/compat/deps.sh`)
  process.exit(0)
}
const { Kafka, CompressionTypes, CompressionCodecs, Partitioners, logLevel } = kjs

setTimeout(() => {
  if (current) console.log(`FAIL ${current}: still running at the run's ${TOTAL_MS / 1000}s deadline`)
  console.log(`FAIL run: still running after ${TOTAL_MS / 1000}s; later checks not run`)
  process.exit(1)
}, TOTAL_MS).unref()

const stderrLogger = () => ({ namespace, label, log }) => {
  const { message, ...rest } = log
  process.stderr.write(`kafkajs ${label} [${namespace}] ${message} ${JSON.stringify(rest)}\n`)
}

const kafka = new Kafka({
  clientId: 'ringbroker-compat',
  brokers: [BOOT],
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { initialRetryTime: 100, retries: 5, maxRetryTime: 2000 },
  logLevel: logLevel.WARN,
  logCreator: stderrLogger,
})

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// within rejects with "what: timed out after ms" when p has not settled by then.
function within(p, ms, what) {
  let timer
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms}ms`)), ms)
  })
  return Promise.race([p, t]).finally(() => clearTimeout(timer))
}

// describe gives an error's class, Kafka error type and message on one line.
function describe(e) {
  if (!(e instanceof Error)) return String(e)
  let s = `${e.name}: ${e.message}`
  if (e.type && !s.includes(e.type)) s += ` (${e.type})`
  if (e.cause instanceof Error) s += `; cause ${describe(e.cause)}`
  else if (Array.isArray(e.errors) && e.errors.length) s += `; cause ${describe(e.errors[0])}`
  return s.replace(/\s+/g, ' ').slice(0, 400)
}

// Clients a check opened; disconnected after it, whatever its outcome.
let opened = []
function track(client) {
  opened.push(client)
  return client
}

// check runs fn under CHECK_MS; fn returns nothing for PASS, a string for
// FAIL, or {skip: why}.
async function check(name, fn) {
  opened = []
  current = name
  const start = Date.now()
  let why
  try {
    const r = await within(fn(), CHECK_MS, 'check')
    if (r && r.skip) {
      console.log(`SKIP ${name}: ${r.skip}`)
      return
    }
    why = r
  } catch (e) {
    why = describe(e)
  } finally {
    const clients = opened
    opened = []
    await Promise.all(clients.map(c => within(c.disconnect(), 5000, 'disconnect').catch(() => {})))
    process.stderr.write(`kafkajs_smoke: ${name} took ${((Date.now() - start) / 1000).toFixed(1)}s\n`)
  }
  current = ''
  if (why) {
    fails++
    console.log(`FAIL ${name}: ${why}`)
  } else {
    console.log(`PASS ${name}`)
  }
}

let admin
const created = []

async function createTopic(topic, partitions = 3) {
  created.push(topic)
  const ok = await admin.createTopics({
    topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
    waitForLeaders: true,
    timeout: 10000,
  })
  if (!ok) throw new Error(`createTopics ${topic}: reported the topic as already there`)
}

// IDEMPOTENT: producer options of the idempotent and transactional checks.
// Unlimited retries, as kafkajs wants for exactly-once (it warns otherwise);
// the check's deadline still bounds them.
const IDEMPOTENT = {
  idempotent: true,
  maxInFlightRequests: 1,
  retry: { initialRetryTime: 100, retries: Number.MAX_SAFE_INTEGER, maxRetryTime: 2000 },
}

const value = i => 'v' + String(i).padStart(6, '0')

// produce sends n records (keys k<i>, values v<i>) in batches of 100, each
// send acks=-1.
async function produce(topic, n, opts = {}, compression = CompressionTypes.None) {
  const p = track(kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, ...opts }))
  await p.connect()
  for (let i = 0; i < n; i += 100) {
    const messages = []
    for (let j = i; j < Math.min(n, i + 100); j++) messages.push({ key: 'k' + j, value: value(j) })
    await p.send({ topic, acks: -1, timeout: 10000, compression, messages })
  }
  await p.disconnect()
}

// consume reads topic with a consumer of groupId until n records arrived and
// settleMs passed without more (or waitMs for the first when n is 0), and
// returns them as {partition, offset, value}. With commit it commits the next
// offset of each partition read before leaving.
async function consume(topic, n, { groupId, readUncommitted = false, commit = false, settleMs = 500, waitMs = 15000 } = {}) {
  const c = track(kafka.consumer({
    groupId: groupId || `kjs-read-${RUN}-${Math.random().toString(36).slice(2, 8)}`,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 250,
    readUncommitted,
    retry: { initialRetryTime: 100, retries: 5, maxRetryTime: 2000 },
  }))
  const got = []
  let last = Date.now()
  let fetches = 0
  let joined = false
  c.on(c.events.GROUP_JOIN, () => { joined = true })
  c.on(c.events.FETCH, () => { if (joined) fetches++ })
  let crashed
  c.on(c.events.CRASH, e => { crashed = e.payload.error })
  await c.connect()
  await c.subscribe({ topic, fromBeginning: true })
  await c.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      got.push({ partition, offset: Number(message.offset), value: message.value.toString() })
      last = Date.now()
    },
  })
  const start = Date.now()
  for (;;) {
    if (crashed) throw crashed
    if (n > 0 && got.length >= n && Date.now() - last >= settleMs) break
    // n == 0: done after a few fetches since the join came back empty.
    if (n === 0 && fetches >= 4 && Date.now() - start >= settleMs) break
    if (Date.now() - start > waitMs) break
    await sleep(50)
  }
  if (commit && got.length) {
    const next = new Map()
    for (const r of got) next.set(r.partition, Math.max(next.get(r.partition) || 0, r.offset + 1))
    await c.commitOffsets([...next].map(([partition, offset]) => ({ topic, partition, offset: String(offset) })))
  }
  await c.disconnect()
  return got
}

// verify returns why got is not exactly v0..v(n-1), each partition in offset
// order with values in the order they were produced, or nothing.
function verify(got, n, label = 'read') {
  const want = new Set()
  for (let i = 0; i < n; i++) want.add(value(i))
  const seen = new Set()
  for (const r of got) {
    if (!want.has(r.value)) return `${label}: unexpected value ${JSON.stringify(r.value)} at ${r.partition}/${r.offset}`
    if (seen.has(r.value)) return `${label}: ${r.value} read twice`
    seen.add(r.value)
  }
  if (seen.size !== n) return `${label}: ${seen.size} of ${n} records`
  const byPart = new Map()
  for (const r of got) {
    const prev = byPart.get(r.partition)
    if (prev && (r.offset <= prev.offset || r.value <= prev.value)) {
      return `${label}: partition ${r.partition} out of order: ${prev.value}@${prev.offset} then ${r.value}@${r.offset}`
    }
    byPart.set(r.partition, r)
  }
  return undefined
}

async function adminCreateMetadata() {
  const t = `kjs-admin-${RUN}`
  await createTopic(t, 3)
  const md = await admin.fetchTopicMetadata({ topics: [t] })
  const tm = md.topics.find(x => x.name === t)
  if (!tm) return `fetchTopicMetadata: ${t} missing`
  if (tm.partitions.length !== 3) return `fetchTopicMetadata: ${tm.partitions.length} partitions, want 3`
  const bad = tm.partitions.find(p => p.partitionErrorCode !== 0 || p.leader < 0)
  if (bad) return `fetchTopicMetadata: partition ${bad.partitionId} error ${bad.partitionErrorCode} leader ${bad.leader}`
  const names = await admin.listTopics()
  if (!names.includes(t)) return `listTopics: ${t} missing from ${names.length} topics`
  const cl = await admin.describeCluster()
  if (!cl.brokers.length || cl.controller == null) return `describeCluster: ${JSON.stringify(cl)}`
  return undefined
}

function produceCheck(suffix, opts, compression) {
  return async () => {
    const t = `kjs-${suffix}-${RUN}`
    await createTopic(t)
    await produce(t, 1000, opts, compression)
    return verify(await consume(t, 1000), 1000)
  }
}

// codecCheck runs produceCheck for a codec kafkajs can encode, and skips one
// that needs a codec package registered in CompressionCodecs.
function codecCheck(name, type, plugin) {
  return async () => {
    try {
      CompressionCodecs[type]()
    } catch (e) {
      return { skip: `kafkajs ${require('kafkajs/package.json').version} has no built-in ${name} codec (${plugin} plugin needed)` }
    }
    return produceCheck(name, {}, type)()
  }
}

const groupTopic = `kjs-group-${RUN}`
const group = `kjs-g-${RUN}`

async function groupCommit() {
  await createTopic(groupTopic)
  await produce(groupTopic, 300)
  const got = await consume(groupTopic, 300, { groupId: group, commit: true })
  return verify(got, 300, 'group read')
}

async function fetchOffsets() {
  const [offs] = await admin.fetchOffsets({ groupId: group, topics: [groupTopic] })
  const ends = await admin.fetchTopicOffsets(groupTopic)
  if (!offs || offs.partitions.length !== 3) return `fetchOffsets: ${JSON.stringify(offs)}`
  for (const p of offs.partitions) {
    const end = ends.find(e => e.partition === p.partition)
    if (!end || p.offset !== end.high) return `partition ${p.partition}: committed ${p.offset}, high watermark ${end && end.high}`
  }
  const sum = offs.partitions.reduce((s, p) => s + Number(p.offset), 0)
  if (sum !== 300) return `committed offsets sum to ${sum}, want 300`
  return undefined
}

async function groupSecondMember() {
  const left = await consume(groupTopic, 0, { groupId: group, settleMs: 1000 })
  if (left.length) return `read ${left.length} records after the commit, want 0 (first ${left[0].value}@${left[0].partition}/${left[0].offset})`
  return undefined
}

async function transactions() {
  const t = `kjs-txn-${RUN}`
  await createTopic(t)
  const p = track(kafka.producer({
    transactionalId: `kjs-txn-${RUN}`,
    ...IDEMPOTENT,
    createPartitioner: Partitioners.DefaultPartitioner,
  }))
  await p.connect()
  const msgs = (from, to, prefix) => {
    const m = []
    for (let i = from; i < to; i++) m.push({ key: 'k' + i, value: prefix(i) })
    return m
  }
  let tx = await p.transaction()
  await tx.send({ topic: t, acks: -1, messages: msgs(0, 100, value) })
  await tx.commit()
  tx = await p.transaction()
  await tx.send({ topic: t, acks: -1, messages: msgs(100, 150, i => 'aborted' + i) })
  await tx.abort()
  await p.disconnect()
  const [committed, raw] = await Promise.all([
    consume(t, 100, { readUncommitted: false }),
    consume(t, 150, { readUncommitted: true }),
  ])
  const why = verify(committed, 100, 'read_committed')
  if (why) return why
  if (raw.length !== 150) return `read_uncommitted read ${raw.length}, want 150 (100 committed + 50 aborted)`
  return undefined
}

async function deleteTopics() {
  await admin.deleteTopics({ topics: created, timeout: 10000 })
  for (let i = 0; i < 50; i++) {
    const names = await admin.listTopics()
    const still = created.filter(t => names.includes(t))
    if (!still.length) return undefined
    if (i === 49) return `still listed after deleteTopics: ${still.join(', ')}`
    await sleep(100)
  }
  return undefined
}

async function main() {
  admin = kafka.admin()
  try {
    await within(admin.connect(), 15000, 'admin connect')
  } catch (e) {
    console.log(`FAIL connect: ${describe(e)}`)
    process.exit(1)
  }
  await check('admin-create-metadata', adminCreateMetadata)
  await check('produce-plain', produceCheck('plain', {}))
  await check('produce-gzip', codecCheck('gzip', CompressionTypes.GZIP, null))
  await check('produce-snappy', codecCheck('snappy', CompressionTypes.Snappy, 'kafkajs-snappy'))
  await check('produce-lz4', codecCheck('lz4', CompressionTypes.LZ4, 'kafkajs-lz4'))
  await check('produce-zstd', codecCheck('zstd', CompressionTypes.ZSTD, '@kafkajs/zstd'))
  await check('produce-idempotent', produceCheck('idem', IDEMPOTENT))
  await check('group-commit', groupCommit)
  await check('admin-fetch-offsets', fetchOffsets)
  await check('group-second-member', groupSecondMember)
  await check('transactions', transactions)
  await check('admin-delete-topics', deleteTopics)
  await within(admin.disconnect(), 5000, 'admin disconnect').catch(() => {})
  process.exit(fails ? 1 : 0)
}

main().catch(e => {
  console.log(`FAIL run: ${describe(e)}`)
  process.exit(1)
})
