//! One scenario of sluice's compatibility matrix with the Rust rdkafka crate (librdkafka, the
//! copy rdkafka-sys bundles, built with cmake).
//!
//! Usage: sluice-compat-rdkafka SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC. Exit 0: pass; 3: n/a
//! with the reason on the last stdout line; anything else: fail. Conventions:
//! compat-tests/matrix/doc.go.

use std::process::exit;
use std::time::{Duration, Instant};

use rdkafka::admin::{
    AdminClient, AdminOptions, AlterConfig, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{BorrowedMessage, Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const T30: Duration = Duration::from_secs(30);

struct Args {
    scenario: String,
    bootstrap: String,
    topic: String,
    group: String,
    ts_base: i64,
    codec: String,
}

fn na(reason: &str) -> ! {
    println!("{}", reason);
    exit(3)
}

fn ensure(cond: bool, msg: String) -> Res<()> {
    if cond {
        Ok(())
    } else {
        Err(msg.into())
    }
}

fn payload(i: usize) -> String {
    format!("v{}-{}", i, "x".repeat(100))
}

fn config(a: &Args, extra: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &a.bootstrap);
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c
}

fn consumer(a: &Args, extra: &[(&str, &str)]) -> Res<BaseConsumer> {
    let mut c = config(a, &[("group.id", &a.group), ("enable.auto.commit", "false"), ("auto.offset.reset", "earliest")]);
    for (k, v) in extra {
        c.set(*k, *v);
    }
    Ok(c.create()?)
}

/// poll reads n messages within 30 s and hands each to f.
fn poll(c: &BaseConsumer, n: usize, mut f: impl FnMut(&BorrowedMessage) -> Res<()>) -> Res<()> {
    let deadline = Instant::now() + T30;
    let mut got = 0;
    while got < n {
        ensure(Instant::now() < deadline, format!("got {} of {} records", got, n))?;
        match c.poll(Duration::from_millis(500)) {
            None => continue,
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(m)) => {
                f(&m)?;
                got += 1;
            }
        }
    }
    Ok(())
}

fn values(c: &BaseConsumer, n: usize) -> Res<Vec<String>> {
    let mut out = Vec::new();
    poll(c, n, |m| {
        out.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned());
        Ok(())
    })?;
    Ok(out)
}

fn seeded(from: usize, to: usize) -> Vec<String> {
    (from..to).map(|i| format!("v{}", i)).collect()
}

fn one(tpl_topic: &str, offset: Offset) -> Res<TopicPartitionList> {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(tpl_topic, 0, offset)?;
    Ok(tpl)
}

/// produce sends (key, value, headers) records to partition 0 and waits until all are delivered.
fn produce(a: &Args, extra: &[(&str, &str)], records: Vec<(String, String, Option<OwnedHeaders>)>) -> Res<()> {
    let mut c = config(a, &[("enable.idempotence", "true"), ("linger.ms", "50")]);
    for (k, v) in extra {
        c.set(*k, *v);
    }
    let p: ThreadedProducer<DefaultProducerContext> = c.create()?;
    for (k, v, h) in &records {
        let mut r = BaseRecord::to(&a.topic).partition(0).key(k).payload(v);
        if let Some(h) = h {
            r = r.headers(h.clone());
        }
        p.send(r).map_err(|(e, _)| e)?;
    }
    p.flush(T30)?;
    ensure(p.in_flight_count() == 0, "records left in flight".into())
}

fn admin(a: &Args) -> Res<AdminClient<DefaultClientContext>> {
    Ok(config(a, &[]).create()?)
}

fn main() {
    let v: Vec<String> = std::env::args().collect();
    if v.len() < 7 {
        eprintln!("usage: sluice-compat-rdkafka SCENARIO BOOTSTRAP TOPIC GROUP TS_BASE CODEC");
        exit(2);
    }
    let a = Args {
        scenario: v[1].clone(),
        bootstrap: v[2].clone(),
        topic: v[3].clone(),
        group: v[4].clone(),
        ts_base: v[5].parse().unwrap_or(0),
        codec: v[6].clone(),
    };
    // stderr: a failure's cause is the last line of the output, and stdout is kept for n/a.
    eprintln!("librdkafka {}", rdkafka::util::get_rdkafka_version().1);
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("tokio runtime");
    if let Err(e) = run(&a, &rt) {
        eprintln!("error: {}", e);
        exit(1);
    }
}

fn run(a: &Args, rt: &tokio::runtime::Runtime) -> Res<()> {
    let opts = AdminOptions::new().operation_timeout(Some(T30)).request_timeout(Some(T30));
    let topic = a.topic.as_str();
    match a.scenario.as_str() {
        "admin" => {
            let ad = admin(a)?;
            let nt = NewTopic::new(topic, 3, TopicReplication::Fixed(1)).set("retention.ms", "86400000");
            for r in rt.block_on(ad.create_topics(&[nt], &opts))? {
                r.map_err(|(t, e)| format!("create {}: {}", t, e))?;
            }
            let md = ad.inner().fetch_metadata(Some(topic), T30)?;
            let n = md.topics().first().map(|t| t.partitions().len()).unwrap_or(0);
            ensure(n == 3, format!("metadata shows {} partitions, want 3", n))?;
            for r in rt.block_on(ad.create_partitions(&[NewPartitions::new(topic, 5)], &opts))? {
                r.map_err(|(t, e)| format!("create partitions {}: {}", t, e))?;
            }
            for r in rt.block_on(ad.delete_topics(&[topic], &opts))? {
                r.map_err(|(t, e)| format!("delete {}: {}", t, e))?;
            }
        }
        s if s.starts_with("produce-") => {
            let recs = (0..10).map(|i| (format!("k{}", i), payload(i), None)).collect();
            produce(a, &[("compression.type", &a.codec)], recs)?;
        }
        "consume-begin" => {
            let c = consumer(a, &[])?;
            c.assign(&one(topic, Offset::Beginning)?)?;
            let got = values(&c, 10)?;
            ensure(got == seeded(0, 10), format!("got {:?}", got))?;
        }
        "consume-end" => {
            let c = consumer(a, &[])?;
            c.assign(&one(topic, Offset::End)?)?;
            let got = values(&c, 1)?;
            ensure(got[0].starts_with("tail-"), format!("first record from end is {:?}", got[0]))?;
        }
        "consume-ts" => {
            let c = consumer(a, &[])?;
            let tpl = c.offsets_for_times(one(topic, Offset::Offset(a.ts_base + 5000))?, T30)?;
            let off = tpl.find_partition(topic, 0).map(|p| p.offset());
            ensure(off == Some(Offset::Offset(5)), format!("offset for timestamp {:?}, want 5", off))?;
            c.assign(&tpl)?;
            let got = values(&c, 5)?;
            ensure(got == seeded(5, 10), format!("got {:?}", got))?;
        }
        "keys-headers" => {
            let recs = (0..3)
                .map(|i| {
                    let h = OwnedHeaders::new()
                        .insert(Header { key: "h", value: Some(&format!("y{}", i)) })
                        .insert(Header { key: "trace", value: Some(&format!("t{}", i)) });
                    (format!("ck{}", i), format!("c{}", i), Some(h))
                })
                .collect();
            produce(a, &[], recs)?;
            let c = consumer(a, &[])?;
            c.assign(&one(topic, Offset::Beginning)?)?;
            let mut i = 0;
            poll(&c, 3, |m| {
                let mut got = String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned();
                if let Some(hs) = m.headers() {
                    for h in hs.iter() {
                        got += &format!(" {}={}", h.key, String::from_utf8_lossy(h.value.unwrap_or_default()));
                    }
                }
                let want = format!("k{} h=x{} trace=s{}", i, i, i);
                i += 1;
                ensure(got == want, format!("got {:?}, want {:?}", got, want))
            })?;
        }
        "group" => {
            {
                let c = consumer(a, &[])?;
                c.subscribe(&[topic])?;
                let got = values(&c, 5)?;
                ensure(got[0] == "v0", format!("first record {:?}", got[0]))?;
                c.commit(&one(topic, Offset::Offset(5))?, CommitMode::Sync)?;
                c.unsubscribe();
            }
            let c = consumer(a, &[])?;
            c.subscribe(&[topic])?;
            let got = values(&c, 1)?;
            ensure(got[0] == "v5", format!("resumed at {:?}, want v5", got[0]))?;
        }
        "configs" => {
            let ad = admin(a)?;
            let res = [ResourceSpecifier::Topic(topic)];
            let before = rt.block_on(ad.describe_configs(&res, &opts))?;
            let cfg = before.into_iter().next().ok_or("no describe result")??;
            ensure(cfg.get("retention.ms").is_some(), "describe configs lacks retention.ms".into())?;
            // rdkafka has only the non-incremental AlterConfigs.
            let alter = AlterConfig::new(ResourceSpecifier::Topic(topic)).set("retention.ms", "3600000");
            for r in rt.block_on(ad.alter_configs(&[alter], &opts))? {
                r.map_err(|(_, e)| format!("alter configs: {}", e))?;
            }
            let after = rt.block_on(ad.describe_configs(&res, &opts))?;
            let cfg = after.into_iter().next().ok_or("no describe result")??;
            let got = cfg.get("retention.ms").and_then(|e| e.value.clone());
            ensure(got.as_deref() == Some("3600000"), format!("retention.ms after alter: {:?}", got))?;
        }
        "delete-records" => {
            let ad = admin(a)?;
            let out = rt.block_on(ad.delete_records(&one(topic, Offset::Offset(5))?, &opts))?;
            let p = out.find_partition(topic, 0).ok_or("no result for partition 0")?;
            p.error()?;
            ensure(p.offset() == Offset::Offset(5), format!("low watermark {:?}, want 5", p.offset()))?;
        }
        "transactions" => transactions(a)?,
        "exactly-once" => exactly_once(a)?,
        _ => na("not mapped"),
    }
    Ok(())
}

fn txn_producer(a: &Args) -> Res<ThreadedProducer<DefaultProducerContext>> {
    let txn = format!("{}-txn", a.topic);
    let p: ThreadedProducer<DefaultProducerContext> =
        config(a, &[("transactional.id", &txn), ("transaction.timeout.ms", "20000")]).create()?;
    p.init_transactions(T30)?;
    Ok(p)
}

/// transactions commits c0..c2, aborts a0..a2 and commits c3..c5 (VerifyTxn in scenarios.go).
fn transactions(a: &Args) -> Res<()> {
    let p = txn_producer(a)?;
    for (prefix, from, commit) in [("c", 0, true), ("a", 0, false), ("c", 3, true)] {
        p.begin_transaction()?;
        for i in from..from + 3 {
            let (k, v) = (format!("{}k{}", prefix, i), format!("{}{}", prefix, i));
            p.send(BaseRecord::to(&a.topic).partition(0).key(&k).payload(&v)).map_err(|(e, _)| e)?;
        }
        if commit {
            p.commit_transaction(T30)?;
        } else {
            p.flush(T30)?; // abort_transaction purges what was not sent yet
            p.abort_transaction(T30)?;
        }
    }
    Ok(())
}

/// exactly_once aborts a transaction holding an "aborted" record and the group's offset 3, then
/// reads the input in the group from its committed offset and writes out-v<i> with the offsets.
fn exactly_once(a: &Args) -> Res<()> {
    let p = txn_producer(a)?;
    let c = consumer(a, &[("isolation.level", "read_committed")])?;
    let out = format!("{}-out", a.topic);
    p.begin_transaction()?;
    p.send(BaseRecord::to(&out).partition(0).key("k").payload("aborted")).map_err(|(e, _)| e)?;
    let meta = c.group_metadata().ok_or("no group metadata")?;
    p.send_offsets_to_transaction(&one(&a.topic, Offset::Offset(3))?, &meta, T30)?;
    p.flush(T30)?;
    p.abort_transaction(T30)?;
    c.subscribe(&[&a.topic])?;
    let (mut done, deadline) = (0, Instant::now() + T30);
    while done < 10 {
        ensure(Instant::now() < deadline, format!("transformed {} of 10", done))?;
        let m = match c.poll(Duration::from_millis(500)) {
            None => continue,
            Some(r) => r?,
        };
        p.begin_transaction()?;
        let mut v = b"out-".to_vec();
        v.extend_from_slice(m.payload().unwrap_or_default());
        p.send(BaseRecord::to(&out).partition(0).key(m.key().unwrap_or_default()).payload(&v)).map_err(|(e, _)| e)?;
        done += 1;
        let positions = c.position()?;
        let meta = c.group_metadata().ok_or("no group metadata")?;
        p.send_offsets_to_transaction(&positions, &meta, T30)?;
        p.commit_transaction(T30)?;
    }
    Ok(())
}
