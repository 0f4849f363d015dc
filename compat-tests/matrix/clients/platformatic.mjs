// One scenario of sluice's compatibility matrix with @platformatic/kafka (installed by the matrix
// from npm into the cache; its directory is in $PLATFORMATIC_KAFKA).
//
// Usage: node platformatic.mjs SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC. Exit 0: pass; 3: n/a
// with the reason on the last stdout line; anything else: fail. Conventions: compat-tests/matrix/doc.go.
import { join } from 'node:path'
import zlib from 'node:zlib'
import { pathToFileURL } from 'node:url'

const kafka = await import(pathToFileURL(join(process.env.PLATFORMATIC_KAFKA, 'dist', 'index.js')))
const { Admin, Consumer, Producer, stringSerializers, stringDeserializers } = kafka

const [scenario, bootstrap, topic, group, tsBaseArg, codec] = process.argv.slice(2)
const tsBase = BigInt(tsBaseArg)
const brokers = [bootstrap]
const base = { clientId: 'sluice-compat', bootstrapBrokers: brokers, timeout: 30000, retries: 10 }

function na (reason) {
  console.log(reason)
  process.exit(3)
}

function assert (cond, ...msg) {
  if (!cond) throw new Error('assertion failed: ' + msg.map(m => typeof m === 'string' ? m : JSON.stringify(m, (_, v) => typeof v === 'bigint' ? v.toString() : v)).join(' '))
}

const payload = i => `v${i}-${'x'.repeat(100)}`

function producer (extra = {}) {
  return new Producer({ ...base, serializers: stringSerializers, ...extra })
}

function consumer (extra = {}) {
  return new Consumer({ ...base, groupId: group, deserializers: stringDeserializers, ...extra })
}

// take reads n messages from a stream, failing after 30 s.
async function take (stream, n) {
  const out = []
  const timer = setTimeout(() => stream.destroy(new Error(`got ${out.length} of ${n} records`)), 30000)
  try {
    for await (const m of stream) {
      out.push(m)
      if (out.length >= n) break
    }
  } finally {
    clearTimeout(timer)
  }
  assert(out.length >= n, `got ${out.length} of ${n} records`)
  return out
}

function headersOf (m) {
  return [...m.headers].map(([k, v]) => `${k}=${v}`).join(',')
}

async function main () {
  switch (scenario) {
    case 'admin': {
      const a = new Admin(base)
      await a.createTopics({ topics: [topic], partitions: 3, replicas: 1, configs: [{ name: 'retention.ms', value: '86400000' }] })
      const names = await a.listTopics()
      assert(names.includes(topic), 'listTopics lacks', topic)
      const md = await a.metadata({ topics: [topic] })
      assert(md.topics.get(topic).partitionsCount === 3, 'partitions', md.topics.get(topic).partitionsCount)
      // No assignments (null): an empty list would ask for 2 new partitions with 0 assignments.
      await a.createPartitions({ topics: [{ name: topic, count: 5 }] })
      await a.deleteTopics({ topics: [topic] })
      await a.close()
      break
    }
    case 'produce-none': case 'produce-gzip': case 'produce-snappy': case 'produce-lz4': case 'produce-zstd': {
      if (codec === 'zstd' && typeof zlib.zstdCompressSync !== 'function') {
        na(`@platformatic/kafka compresses zstd with node:zlib, which has zstd from Node 22.15 (this is ${process.version})`)
      }
      const p = producer({ idempotent: true, compression: codec })
      const messages = []
      for (let i = 0; i < 10; i++) messages.push({ topic, partition: 0, key: `k${i}`, value: payload(i) })
      await p.send({ messages })
      await p.close()
      break
    }
    case 'consume-begin': case 'consume-end': case 'consume-ts': {
      const c = consumer()
      let stream
      if (scenario === 'consume-begin') {
        stream = await c.consume({ topics: [topic], mode: 'earliest', autocommit: false, maxWaitTime: 500 })
        const got = (await take(stream, 10)).map(m => m.value)
        assert(got.join() === [...Array(10).keys()].map(i => `v${i}`).join(), got)
      } else if (scenario === 'consume-end') {
        stream = await c.consume({ topics: [topic], mode: 'latest', autocommit: false, maxWaitTime: 500 })
        const v = (await take(stream, 1))[0].value
        assert(v.startsWith('tail-'), 'first record from end', v)
      } else {
        const offsets = await c.listOffsets({ topics: [topic], timestamp: tsBase + 5000n })
        const at = offsets.get(topic)[0]
        assert(at === 5n, 'offset for timestamp', at)
        stream = await c.consume({ topics: [topic], mode: 'manual', offsets: [{ topic, partition: 0, offset: at }], autocommit: false, maxWaitTime: 500 })
        const got = (await take(stream, 5)).map(m => m.value)
        assert(got.join() === [5, 6, 7, 8, 9].map(i => `v${i}`).join(), got)
      }
      await stream.close()
      await c.close(true)
      break
    }
    case 'keys-headers': {
      const p = producer()
      const messages = []
      for (let i = 0; i < 3; i++) messages.push({ topic, partition: 0, key: `ck${i}`, value: `c${i}`, headers: { h: `y${i}`, trace: `t${i}` } })
      await p.send({ messages })
      await p.close()
      const c = consumer()
      const stream = await c.consume({ topics: [topic], mode: 'earliest', autocommit: false, maxWaitTime: 500 })
      const got = await take(stream, 3)
      for (let i = 0; i < 3; i++) {
        assert(got[i].key === `k${i}` && headersOf(got[i]) === `h=x${i},trace=s${i}`, got[i].key, headersOf(got[i]))
      }
      await stream.close()
      await c.close(true)
      break
    }
    case 'group': {
      let c = consumer()
      let stream = await c.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest', autocommit: false, maxWaitTime: 500 })
      const msgs = await take(stream, 5)
      assert(msgs[0].value === 'v0', msgs[0].value)
      await msgs[4].commit() // commits the next offset, 5
      await stream.close()
      await c.close()
      c = consumer()
      stream = await c.consume({ topics: [topic], mode: 'committed', fallbackMode: 'fail', autocommit: false, maxWaitTime: 500 })
      const v = (await take(stream, 1))[0].value
      assert(v === 'v5', v)
      await stream.close()
      await c.close()
      break
    }
    case 'configs': {
      const a = new Admin(base)
      const before = await a.describeConfigs({ resources: [{ resourceType: 2, resourceName: topic }] })
      assert(before[0].configs.some(c => c.name === 'retention.ms'), 'no retention.ms')
      await a.incrementalAlterConfigs({ resources: [{ resourceType: 2, resourceName: topic, configs: [{ name: 'retention.ms', configOperation: 0, value: '3600000' }] }] })
      const after = await a.describeConfigs({ resources: [{ resourceType: 2, resourceName: topic, configurationKeys: ['retention.ms'] }] })
      const got = after[0].configs.find(c => c.name === 'retention.ms').value
      assert(got === '3600000', 'retention.ms after alter', got)
      await a.close()
      break
    }
    case 'delete-records': {
      const a = new Admin(base)
      const res = await a.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 5n }] }] })
      assert(res[0].partitions[0].lowWatermark === 5n, 'low watermark', res[0].partitions[0].lowWatermark)
      await a.close()
      break
    }
    case 'transactions': {
      // Commit c0..c2, abort a0..a2, commit c3..c5 (VerifyTxn in scenarios.go).
      const p = producer({ transactionalId: `${topic}-txn`, idempotent: true })
      for (const [prefix, from, commit] of [['c', 0, true], ['a', 0, false], ['c', 3, true]]) {
        const tx = await p.beginTransaction()
        const messages = []
        for (let i = from; i < from + 3; i++) messages.push({ topic, partition: 0, key: `${prefix}k${i}`, value: `${prefix}${i}` })
        await tx.send({ messages })
        if (commit) await tx.commit()
        else await tx.abort()
      }
      await p.close()
      break
    }
    case 'exactly-once': {
      // Abort a transaction holding an "aborted" record, then read the input in the group from its
      // committed offset and write out-v<i> with the offsets in transactions. The aborted
      // transaction carries no offset: addOffset takes a consumed message, and none is consumed yet.
      const p = producer({ transactionalId: `${topic}-txn`, idempotent: true })
      let tx = await p.beginTransaction()
      await tx.send({ messages: [{ topic: `${topic}-out`, partition: 0, key: 'k', value: 'aborted' }] })
      await tx.abort()
      const c = consumer({ isolationLevel: 1 })
      const stream = await c.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest', autocommit: false, isolationLevel: 1, maxWaitTime: 500 })
      const msgs = await take(stream, 10)
      for (let i = 0; i < 10; i += 5) {
        tx = await p.beginTransaction()
        await tx.addConsumer(c)
        const batch = msgs.slice(i, i + 5)
        await tx.send({ messages: batch.map(m => ({ topic: `${topic}-out`, partition: 0, key: m.key, value: `out-${m.value}` })) })
        await tx.addOffset(batch[batch.length - 1])
        await tx.commit()
      }
      await stream.close()
      await c.close()
      await p.close()
      break
    }
    default:
      na('not mapped')
  }
}

main().then(() => process.exit(0), err => {
  console.error(err && err.stack ? err.stack : err)
  if (err && err.errors) console.error(JSON.stringify(err.errors.map(e => e.message)))
  process.exit(1)
})
