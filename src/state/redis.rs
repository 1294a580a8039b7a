//! The Redis backend, for fleets: every machine behind one API key shares one
//! gate, pace, limit and breaker. Each read-modify-write is one optimistic
//! transaction on the server (WATCH, read the record and the server's `TIME`,
//! apply the same pure rules as the file backend, MULTI/SET/EXEC, again on a
//! conflict), so the policy lives in one place and every time in the record
//! comes from the Redis clock: machines with skewed clocks still agree.
//! Concurrency slots are leases in a sorted set (holders scored by deadline,
//! cleaned on every acquire, by a Lua script), so a process that dies frees
//! its slot when the lease ends. Every key expires when the scope goes idle.
//! Keys are `abide:v1:{<scope hash>}:…`: the hash tag keeps one scope on one
//! Cluster slot, and no key or value holds a secret.

use std::cell::RefCell;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::{Connection, IntoConnectionInfo, RedisError, Script};

use super::store::{Slot, Store, Stored, check_hash, decode, forget, is_empty, scope_hash, sort};
use crate::clock::Millis;
use crate::rules::scope::{self, ScopeState};

/// A transaction that keeps losing to other processes gives up after this
/// many tries (each takes a few loopback round trips).
const MAX_TRIES: u32 = 64;

const ACQUIRE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) + 60000 then
    redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + 60000)
  end
  return 1
end
return 0
";

pub struct RedisStore {
    link: Arc<Mutex<Link>>,
    acquire: Script,
    notes: RefCell<Vec<String>>,
    /// The longest one exchange with the server may take.
    timeout: Duration,
}

/// The connection, and whether an exchange on it failed: replies to it may
/// still be on their way, out of step with any next command, and a slow
/// server would cost another timeout. So it is not used again.
struct Link {
    con: Connection,
    failed: bool,
}

/// Bounds each answer of the next exchange (`answers` replies, as in a
/// pipeline) to its share of `timeout`: the client awaits every reply of a
/// pipeline, each for the socket's full timeout, even after one timed out,
/// so a stalled server cost a two-reply read two timeouts.
fn answers_within(con: &Connection, timeout: Duration, answers: u32) -> redis::RedisResult<()> {
    let each = Some(timeout / answers.max(1));
    con.set_read_timeout(each)?;
    con.set_write_timeout(each)
}

fn io_error(e: RedisError) -> io::Error {
    let kind = if e.is_timeout() {
        io::ErrorKind::TimedOut
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, format!("redis: {}", words(&e)))
}

/// A Redis error in words: the client's own text without the Rust name of
/// its kind, which it puts after a dash (`Redis URL did not parse -
/// InvalidClientConfig`). Its texts never hold the URL's password.
pub fn words(e: &RedisError) -> String {
    e.to_string().replacen(&format!(" - {:?}", e.kind()), "", 1)
}

fn key(scope: &str, part: &str) -> String {
    key_of(&scope_hash(scope), part)
}

fn key_of(hash: &str, part: &str) -> String {
    format!("abide:v1:{{{hash}}}:{part}")
}

/// Keys one SCAN step asks for, and records one MGET fetches: a few
/// kilobytes each, well within one exchange's timeout.
const BATCH: usize = 256;

/// The server's clock, from `TIME` (seconds and microseconds).
fn server_millis((secs, micros): (u64, u64)) -> Millis {
    secs.saturating_mul(1000).saturating_add(micros / 1000)
}

impl RedisStore {
    /// Connects with short timeouts: a Redis that is down or slow must cost a
    /// run a bounded delay, never a hang. The URL is never shown in errors
    /// (it may hold a password).
    pub fn connect(url: &str, timeout: Duration) -> io::Result<RedisStore> {
        let bad_url = |e: RedisError| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad --state URL ({})", words(&e)),
            )
        };
        let info = url.into_connection_info().map_err(bad_url)?;
        // The client would also name itself (two CLIENT SETINFO) on connect:
        // two more replies to await, for nothing abide needs.
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        // The connect and the replies to its setup (AUTH or HELLO, SELECT)
        // share the timeout the client is given, each reply awaited for what
        // is left of it: so each gets its share.
        let setup =
            u32::from(settings.password().is_some() || settings.protocol().supports_resp3())
                + u32::from(settings.db() != 0);
        let client = redis::Client::open(info.set_redis_settings(settings)).map_err(bad_url)?;
        let con = client
            .get_connection_with_timeout(timeout / setup.max(1))
            .map_err(io_error)?;
        Ok(RedisStore {
            link: Arc::new(Mutex::new(Link { con, failed: false })),
            acquire: Script::new(ACQUIRE),
            notes: RefCell::default(),
            timeout,
        })
    }

    /// Runs one `exchange` on the connection, unless an earlier one failed.
    fn exchange<T>(
        &self,
        exchange: impl FnOnce(&mut Connection) -> redis::RedisResult<T>,
    ) -> io::Result<T> {
        let mut link = self.link.lock().unwrap_or_else(|e| e.into_inner());
        if link.failed {
            return Err(io::Error::other("redis: the connection failed earlier"));
        }
        let result = exchange(&mut link.con);
        link.failed = result.is_err();
        result.map_err(io_error)
    }

    fn parse(&self, raw: Option<Vec<u8>>) -> ScopeState {
        match raw {
            None => ScopeState::default(),
            Some(bytes) => decode(&bytes).unwrap_or_else(|e| {
                self.notes.borrow_mut().push(format!(
                    "the scope's record in Redis is unreadable ({e}); treating it as empty"
                ));
                ScopeState::default()
            }),
        }
    }

    /// One scope's read-modify-write, tried again while other processes
    /// win the race; with `drop_empty`, a record left remembering nothing
    /// is deleted rather than written.
    fn change(
        &self,
        key: &str,
        change: &mut dyn FnMut(&mut ScopeState, Millis),
        drop_empty: bool,
    ) -> io::Result<()> {
        let committed = self.exchange(|con| {
            for _ in 0..MAX_TRIES {
                if self.transact(con, key, change, drop_empty)? {
                    return Ok(true);
                }
            }
            Ok(false)
        })?;
        if committed {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("redis: the scope's record changed under {MAX_TRIES} tries in a row"),
        ))
    }

    fn transact(
        &self,
        con: &mut Connection,
        key: &str,
        change: &mut dyn FnMut(&mut ScopeState, Millis),
        drop_empty: bool,
    ) -> redis::RedisResult<bool> {
        answers_within(con, self.timeout, 1)?;
        redis::cmd("WATCH").arg(key).exec(con)?;
        answers_within(con, self.timeout, 2)?;
        let (raw, time): (Option<Vec<u8>>, (u64, u64)) =
            redis::pipe().get(key).cmd("TIME").query(con)?;
        let now = server_millis(time);
        let mut state = self.parse(raw);
        let before = state.clone();
        change(&mut state, now);
        if drop_empty && is_empty(&state) {
            // MULTI, DEL, EXEC.
            answers_within(con, self.timeout, 3)?;
            let committed: Option<()> = redis::pipe().atomic().del(key).ignore().query(con)?;
            return Ok(committed.is_some());
        }
        if state == before {
            answers_within(con, self.timeout, 1)?;
            redis::cmd("UNWATCH").exec(con)?;
            return Ok(true);
        }
        let json = serde_json::to_vec(&state).expect("the state always serializes");
        let ttl = u64::try_from(scope::keep_for(&state, now).as_millis()).unwrap_or(u64::MAX);
        // MULTI, SET, EXEC.
        answers_within(con, self.timeout, 3)?;
        let committed: Option<()> = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(key)
            .arg(json)
            .arg("PX")
            .arg(ttl)
            .ignore()
            .query(con)?;
        Ok(committed.is_some())
    }
}

impl Store for RedisStore {
    fn read(&self, scope: &str) -> io::Result<(ScopeState, Millis)> {
        let (raw, time): (Option<Vec<u8>>, (u64, u64)) = self.exchange(|con| {
            answers_within(con, self.timeout, 2)?;
            redis::pipe()
                .get(key(scope, "state"))
                .cmd("TIME")
                .query(con)
        })?;
        Ok((self.parse(raw), server_millis(time)))
    }

    fn update(
        &self,
        scope: &str,
        change: &mut dyn FnMut(&mut ScopeState, Millis),
    ) -> io::Result<()> {
        self.change(&key(scope, "state"), change, false)
    }

    fn try_slot(&self, scope: &str, limit: u32, lease: Duration) -> io::Result<Option<Slot>> {
        let key = key(scope, "slots");
        let holder = format!("{}-{:016x}", std::process::id(), rand::random::<u64>());
        let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
        let taken: i64 = self.exchange(|con| {
            answers_within(con, self.timeout, 1)?;
            self.acquire
                .key(&key)
                .arg(limit)
                .arg(lease_ms)
                .arg(&holder)
                .invoke(con)
        })?;
        Ok((taken == 1).then(|| {
            Slot::new(Lease {
                link: Arc::clone(&self.link),
                key,
                holder,
            })
        }))
    }

    fn take_notes(&self) -> Vec<String> {
        self.notes.take()
    }

    /// SCANs abide's record keys (never KEYS, which would stall a shared
    /// server), then fetches them in batches; a record that expired in
    /// between is skipped.
    fn list(&self) -> io::Result<(Vec<Stored>, Millis)> {
        let pattern = key_of("*", "state");
        let mut keys = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, found): (u64, Vec<String>) = self.exchange(|con| {
                answers_within(con, self.timeout, 1)?;
                redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(BATCH)
                    .query(con)
            })?;
            keys.extend(found);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        keys.sort();
        keys.dedup();
        let mut listing = Vec::new();
        for batch in keys.chunks(BATCH) {
            let raws: Vec<Option<Vec<u8>>> = self.exchange(|con| {
                answers_within(con, self.timeout, 1)?;
                redis::cmd("MGET").arg(batch).query(con)
            })?;
            for (key, raw) in batch.iter().zip(raws) {
                let hash = key
                    .strip_prefix("abide:v1:{")
                    .and_then(|rest| rest.strip_suffix("}:state"));
                if let (Some(hash), Some(raw)) = (hash.filter(|h| check_hash(h).is_ok()), raw) {
                    listing.push(Stored {
                        hash: hash.to_string(),
                        state: self.parse(Some(raw)),
                    });
                }
            }
        }
        sort(&mut listing);
        let time: (u64, u64) = self.exchange(|con| {
            answers_within(con, self.timeout, 1)?;
            redis::cmd("TIME").query(con)
        })?;
        Ok((listing, server_millis(time)))
    }

    /// The leases that have not ended by the server's clock.
    fn slots_in_use(&self, hash: &str) -> io::Result<u32> {
        check_hash(hash)?;
        let key = key_of(hash, "slots");
        let time: (u64, u64) = self.exchange(|con| {
            answers_within(con, self.timeout, 1)?;
            redis::cmd("TIME").query(con)
        })?;
        let now = server_millis(time);
        self.exchange(|con| {
            answers_within(con, self.timeout, 1)?;
            redis::cmd("ZCOUNT")
                .arg(&key)
                .arg(format!("({now}"))
                .arg("+inf")
                .query(con)
        })
    }

    fn clear(&self, hash: &str, tasks: bool) -> io::Result<()> {
        check_hash(hash)?;
        self.change(
            &key_of(hash, "state"),
            &mut |state, now| forget(state, now, tasks),
            true,
        )
    }
}

/// A held slot; dropping it gives the slot back at once (if Redis is gone,
/// or failed this run, the lease frees it when it ends).
struct Lease {
    link: Arc<Mutex<Link>>,
    key: String,
    holder: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut link = self.link.lock().unwrap_or_else(|e| e.into_inner());
        if !link.failed {
            let _: redis::RedisResult<i64> = redis::cmd("ZREM")
                .arg(&self.key)
                .arg(&self.holder)
                .query(&mut link.con);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_told_in_words() {
        for (url, said) in [
            ("redis://", "Missing hostname"),
            ("http://h/", "Redis URL did not parse"),
            ("redis://h/?protocol=9", "Invalid protocol version: 9"),
        ] {
            let e = url.into_connection_info().unwrap_err();
            assert_eq!(words(&e), said, "{url}");
        }
        let e = RedisStore::connect("redis://:secret@/", Duration::from_millis(10)).err();
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(text, "bad --state URL (Redis URL did not parse)");
        assert!(!text.contains("secret"));
    }

    /// A private redis-server, stopped when dropped, even by a failing test.
    struct Server(std::process::Child);

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// `ABIDE_TEST_REDIS`, else a private redis-server on a free port for
    /// as long as the test holds it (see build.rs for when this is ignored).
    fn redis() -> (RedisStore, Option<Server>) {
        let connect = |url: &str| RedisStore::connect(url, Duration::from_secs(2));
        if let Some(url) = std::env::var("ABIDE_TEST_REDIS")
            .ok()
            .filter(|u| !u.is_empty())
        {
            return (connect(&url).expect("ABIDE_TEST_REDIS answers"), None);
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let server = Server(
            std::process::Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                ])
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server starts"),
        );
        let url = format!("redis://127.0.0.1:{port}");
        for _ in 0..500 {
            if let Ok(store) = connect(&url) {
                return (store, Some(server));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server did not answer on port {port}");
    }

    #[test]
    #[cfg_attr(
        no_redis,
        ignore = "no Redis: install redis-server or set ABIDE_TEST_REDIS"
    )]
    fn lists_and_clears_its_records() {
        let (store, _server) = redis();
        super::super::store::lists_and_clears(&store);
        // A cleared record that remembers nothing is deleted, not kept empty.
        let name = format!("gone-{}", std::process::id());
        store
            .update(&name, &mut |s, now| s.next_allowed_at = Some(now + 1_000))
            .unwrap();
        store.clear(&scope_hash(&name), false).unwrap();
        let exists: bool = store
            .exchange(|con| redis::cmd("EXISTS").arg(key(&name, "state")).query(con))
            .unwrap();
        assert!(!exists);
    }
}
