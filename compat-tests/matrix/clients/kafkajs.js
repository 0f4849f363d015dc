// One scenario of sluice's compatibility matrix with kafkajs.
// Usage: node kafkajs.js SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC (NODE_PATH holds kafkajs).
// Exit 0: pass; 3: n/a with the reason on the last stdout line; anything else: fail.
// Conventions: compat-tests/matrix/doc.go.
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const [scenario, bootstrap, topic, group, tsBaseArg, codec] = process.argv.slice(2);
const tsBase = Number(tsBaseArg);
const kafka = new Kafka({ clientId: 'sluice-matrix', brokers: [bootstrap], logLevel: logLevel.WARN, retry: { retries: 3 } });

class NA extends Error {}
const payload = (i) => `v${i}-${'x'.repeat(100)}`;
function check(ok, msg) { if (!ok) throw new Error(msg); }

// consume runs a consumer in group g from fromBeginning until n messages arrive, optionally
// seeking partition 0 to offset first.
async function consume(g, n, { fromBeginning = true, seek, autoCommit = false } = {}) {
  const consumer = kafka.consumer({ groupId: g, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`got ${got.length} of ${n} records`)), 45000);
    consumer.run({
      autoCommit,
      eachMessage: async ({ message }) => {
        if (got.length < n) got.push(message);
        if (got.length === n) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
    if (seek !== undefined) consumer.seek({ topic, partition: 0, offset: String(seek) });
  });
  return { consumer, got };
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  switch (scenario) {
    case 'admin': {
      await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '86400000' }] }], waitForLeaders: true });
      check((await admin.listTopics()).includes(topic), 'listTopics lacks topic');
      const md = await admin.fetchTopicMetadata({ topics: [topic] });
      check(md.topics[0].partitions.length === 3, `partitions ${md.topics[0].partitions.length}`);
      await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] });
      await admin.deleteTopics({ topics: [topic] });
      break;
    }
    case 'produce-none': case 'produce-gzip': case 'produce-snappy': case 'produce-lz4': case 'produce-zstd': {
      const types = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP };
      if (!(codec in types)) throw new NA(`kafkajs ships only gzip; ${codec} needs a third-party codec package registered by the application`);
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      await producer.send({ topic, compression: types[codec], acks: -1, messages: [...Array(10).keys()].map((i) => ({ key: `k${i}`, value: payload(i), partition: 0 })) });
      await producer.disconnect();
      break;
    }
    case 'consume-begin': {
      const { consumer, got } = await consume(group, 10);
      check(got.map((m) => m.value.toString()).join(',') === [...Array(10).keys()].map((i) => `v${i}`).join(','), `got ${got.map((m) => m.value.toString())}`);
      await consumer.disconnect();
      break;
    }
    case 'consume-end': {
      const { consumer, got } = await consume(group, 1, { fromBeginning: false });
      check(got[0].value.toString().startsWith('tail-'), `first record from end is ${got[0].value}`);
      await consumer.disconnect();
      break;
    }
    case 'consume-ts': {
      const offs = await admin.fetchTopicOffsetsByTimestamp(topic, tsBase + 5000);
      check(offs[0].offset === '5', `offset for timestamp is ${offs[0].offset}`);
      const { consumer, got } = await consume(group, 5, { seek: 5 });
      check(got[0].value.toString() === 'v5', `first record ${got[0].value}`);
      await consumer.disconnect();
      break;
    }
    case 'keys-headers': {
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic, messages: [0, 1, 2].map((i) => ({ key: `ck${i}`, value: `c${i}`, partition: 0, headers: { h: `y${i}`, trace: `t${i}` } })) });
      await producer.disconnect();
      const { consumer, got } = await consume(group, 3);
      got.forEach((m, i) => check(m.key.toString() === `k${i}` && m.headers.h.toString() === `x${i}` && m.headers.trace.toString() === `s${i}`, `record ${i}: ${m.key} ${JSON.stringify(m.headers)}`));
      await consumer.disconnect();
      break;
    }
    case 'group': {
      let { consumer, got } = await consume(group, 5);
      check(got[0].value.toString() === 'v0', `first ${got[0].value}`);
      await consumer.commitOffsets([{ topic, partition: 0, offset: '5' }]);
      await consumer.disconnect();
      ({ consumer, got } = await consume(group, 1));
      check(got[0].value.toString() === 'v5', `resumed at ${got[0].value}`);
      await consumer.disconnect();
      break;
    }
    case 'configs': {
      const d = await admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false });
      check(d.resources[0].configEntries.some((c) => c.configName === 'retention.ms'), 'retention.ms not described');
      await admin.alterConfigs({ resources: [{ type: 2, name: topic, configEntries: [{ name: 'retention.ms', value: '3600000' }] }] });
      break;
    }
    case 'delete-records': {
      await admin.fetchTopicMetadata({ topics: [topic] }); // deleteTopicRecords needs cached metadata
      await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '5' }] });
      break;
    }
    case 'transactions': {
      // Commit c0..c2, abort a0..a2, commit c3..c5 (VerifyTxn in scenarios.go).
      const producer = kafka.producer({ transactionalId: `${topic}-txn`, idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      for (const [prefix, from, to, commit] of [['c', 0, 3, true], ['a', 0, 3, false], ['c', 3, 6, true]]) {
        const txn = await producer.transaction();
        const msgs = [];
        for (let i = from; i < to; i++) msgs.push({ key: `${prefix}k${i}`, value: `${prefix}${i}`, partition: 0 });
        await txn.send({ topic, messages: msgs });
        if (commit) await txn.commit(); else await txn.abort();
      }
      await producer.disconnect();
      break;
    }
    case 'exactly-once': {
      // Abort a transaction holding an "aborted" record and the group's offset 3, then read the
      // input in the group from its committed offset and write out-v<i> with the offsets.
      const producer = kafka.producer({ transactionalId: `${topic}-txn`, idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      const doomed = await producer.transaction();
      await doomed.send({ topic: `${topic}-out`, messages: [{ key: 'k', value: 'aborted', partition: 0 }] });
      await doomed.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: '3' }] }] });
      await doomed.abort();
      const { consumer, got } = await consume(group, 10);
      check(got[0].value.toString() === 'v0', `group resumed at ${got[0].value} after the aborted transaction`);
      const txn = await producer.transaction();
      await txn.send({ topic: `${topic}-out`, messages: got.map((m) => ({ key: m.key, value: `out-${m.value}`, partition: 0 })) });
      await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: '10' }] }] });
      await txn.commit();
      await consumer.disconnect();
      await producer.disconnect();
      break;
    }
    default:
      throw new NA('not mapped');
  }
  await admin.disconnect();
}

main().then(() => process.exit(0), (err) => {
  if (err instanceof NA) { console.log(err.message); process.exit(3); }
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
