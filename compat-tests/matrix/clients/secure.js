// The matrix's security cells for kafkajs.
//
// node secure.js MECHANISM BOOTSTRAP TOPIC CA CERT KEY USER SCRAM_PASS PLAIN_PASS JWT
//
// MECHANISM is mtls, scram-sha-512, plain or oauthbearer. kafkajs produces ck<i>=c<i> (i < 5)
// to partition 0 of TOPIC over the secured listener at BOOTSTRAP, consumes them back from the
// beginning over the same listener and prints "key:value" lines.
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [mech, bootstrap, topic, ca, cert, key, user, scramPass, plainPass, jwt] = process.argv.slice(2);
const N = 5;

const conf = { clientId: 'sluice-matrix-sec', brokers: [bootstrap], logLevel: logLevel.WARN };
if (mech === 'mtls') {
  conf.ssl = { ca: [fs.readFileSync(ca)], cert: fs.readFileSync(cert), key: fs.readFileSync(key) };
} else if (mech === 'scram-sha-512') {
  conf.ssl = { ca: [fs.readFileSync(ca)] };
  conf.sasl = { mechanism: 'scram-sha-512', username: user, password: scramPass };
} else if (mech === 'plain') {
  conf.sasl = { mechanism: 'plain', username: user, password: plainPass };
} else if (mech === 'oauthbearer') {
  conf.sasl = { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: jwt }) };
}

async function main() {
  const kafka = new Kafka(conf);
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < N; i++) messages.push({ key: `ck${i}`, value: `c${i}`, partition: 0 });
  await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `${topic}-sec` });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${got.length} of ${N} records`)), 40000);
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(`${message.key}:${message.value}`);
        if (got.length === N) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  for (const l of got) console.log(l);
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
