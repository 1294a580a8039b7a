//! Properties of the pure core, for any server delay, status, method,
//! policy, draw and clock: never earlier than the server allowed (after the
//! floor), never longer than `--max-wait` or what is left of the budget,
//! jitter only adds, and a write that may have been processed is never
//! replayed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use abide::exit::Kind;
use abide::rules::attempt::{Observation, Phase};
use abide::rules::decision::{
    Draw, Next, Policy, Progress, Replay, Settlement, Verdict, WaitCause, after_check,
    attempt_room, budget_refused, classify, classify_keyed, cut_scope_wait, cut_wait,
    effect_unknown, next_step, opened_breaker, scope_step, settle,
};
use abide::rules::delay::{self, DelaySource, MAX_SERVER_DELAY, ServerDelay};
use abide::rules::scope::{GateCause, Level, Wait as ScopeWait};
use proptest::prelude::*;

/// Durations from nothing to past any budget, weighted towards the small.
fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (0u64..5_000).prop_map(Duration::from_millis),
        (0u64..10_000_000).prop_map(Duration::from_millis),
        (0u64..=MAX_SERVER_DELAY.as_secs()).prop_map(Duration::from_secs),
        Just(Duration::ZERO),
        Just(MAX_SERVER_DELAY),
    ]
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        1u32..10,
        (1u64..600_000).prop_map(Duration::from_millis),
        proptest::option::of(duration()),
        (0u64..5_000).prop_map(Duration::from_millis),
        prop_oneof![Just(0.0), 0.0..1.0f64, 1.0..5.0f64],
        (0u64..5_000).prop_map(Duration::from_millis),
        (0u64..60_000).prop_map(Duration::from_millis),
        proptest::collection::vec(100u16..600, 0..8),
    )
        .prop_map(
            |(attempts, budget, max_wait, floor, jitter, backoff, backoff_max, retry_on)| Policy {
                attempts,
                budget,
                hard_budget: false,
                max_wait,
                floor,
                jitter,
                backoff,
                backoff_max: backoff_max.max(backoff),
                retry_on,
                fixed_delay: None,
                retry_all: false,
            },
        )
}

fn server_delay() -> impl Strategy<Value = ServerDelay> {
    let source = prop_oneof![
        Just(DelaySource::RetryAfterMs),
        Just(DelaySource::RetryAfterSeconds),
        Just(DelaySource::RetryAfterDate),
    ];
    (duration(), source).prop_map(|(delay, source)| ServerDelay { delay, source })
}

fn scope_wait() -> impl Strategy<Value = ScopeWait> {
    prop_oneof![
        Just(ScopeWait::Rate),
        Just(ScopeWait::Gate(GateCause::RetryAfter)),
        Just(ScopeWait::Gate(GateCause::QuotaExhausted)),
        Just(ScopeWait::HalfOpen(Level::Scope)),
        Just(ScopeWait::HalfOpen(Level::Endpoint)),
        Just(ScopeWait::Probe(Level::Scope)),
        Just(ScopeWait::Probe(Level::Endpoint)),
    ]
}

fn draw() -> impl Strategy<Value = f64> {
    prop_oneof![0.0..1.0f64, Just(0.0), Just(0.999_999_999)]
}

fn observation() -> impl Strategy<Value = Observation> {
    prop_oneof![
        (0u16..1000, proptest::option::of(any::<bool>())).prop_map(|(status, should_retry)| {
            Observation::Status {
                status,
                should_retry,
            }
        }),
        prop_oneof![
            Just(Phase::BeforeSend),
            Just(Phase::AfterSend),
            Just(Phase::Final)
        ]
        .prop_map(Observation::Transport),
    ]
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "POST", "PATCH", "CONNECT",
        ])
        .prop_map(str::to_string),
        "[A-Za-z]{1,8}",
    ]
}

/// What is left of the budget at `elapsed`.
fn left(policy: &Policy, elapsed: Duration) -> Duration {
    policy.budget.saturating_sub(elapsed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_server_delay_is_never_cut_short_and_never_overstays(
        policy in policy(),
        server in server_delay(),
        attempt in 1u32..10,
        elapsed in duration(),
        unit in draw(),
    ) {
        let progress = Progress { attempt, elapsed };
        let honoured = server.delay.max(policy.floor);
        match next_step(Verdict::Retryable, Some(server), progress, &policy, Draw(unit)) {
            Next::Wait(wait) => {
                prop_assert!(attempt < policy.attempts);
                // Never earlier than the server allowed, after the floor.
                prop_assert!(wait.duration >= server.delay);
                prop_assert!(wait.duration >= policy.floor);
                prop_assert_eq!(wait.cause, WaitCause::Server { server, honoured });
                // Never past --max-wait, nor the end of the budget.
                if let Some(max_wait) = policy.max_wait {
                    prop_assert!(wait.duration <= max_wait);
                }
                prop_assert!(wait.duration < left(&policy, elapsed));
                // Jitter only adds, and at most its fraction (capped at 2 s).
                let most = honoured.mul_f64(policy.jitter.min(1.0)).min(Duration::from_secs(2));
                prop_assert!(wait.duration - honoured <= most);
            }
            Next::Stop(stop) => {
                if attempt >= policy.attempts {
                    prop_assert_eq!(stop.kind(), Kind::RetryExhausted);
                } else {
                    // It ends only when the server's delay does not fit.
                    prop_assert_eq!(stop.kind(), Kind::BudgetExhausted);
                    let over_max_wait = policy.max_wait.is_some_and(|m| honoured > m);
                    prop_assert!(over_max_wait || honoured >= left(&policy, elapsed));
                }
                // And tells the caller not to come back before the server allowed.
                prop_assert_eq!(stop.not_before, Some(honoured));
            }
        }
    }

    #[test]
    fn a_cut_server_wait_never_lets_the_caller_back_before_the_server_allowed(
        policy in policy(),
        server in server_delay(),
        elapsed in duration(),
        unit in draw(),
        cut in 0.0f64..1.5,
    ) {
        let progress = Progress { attempt: 1, elapsed };
        if let Next::Wait(wait) = next_step(Verdict::Retryable, Some(server), progress, &policy, Draw(unit)) {
            let slept = wait.duration.mul_f64(cut);
            let not_before = cut_wait(&wait, slept).expect("a server delay binds the caller");
            // What was slept plus what is kept is never less than the
            // server's delay: the ending is never earlier than it allowed.
            if slept < wait.duration {
                prop_assert!(slept + not_before >= server.delay);
            }
        }
    }

    #[test]
    fn a_cut_scope_wait_keeps_the_gate_and_the_breaker(
        cause in scope_wait(),
        wait in duration(),
        cut in 0.0f64..1.5,
    ) {
        let slept = wait.mul_f64(cut);
        match cut_scope_wait(cause, wait, slept) {
            Some(left) => {
                prop_assert!(matches!(cause, ScopeWait::Gate(_) | ScopeWait::HalfOpen(_)));
                if slept < wait {
                    prop_assert_eq!(slept + left, wait);
                }
            }
            None => prop_assert!(matches!(cause, ScopeWait::Rate | ScopeWait::Probe(_))),
        }
    }

    #[test]
    fn no_attempt_starts_with_the_budget_spent(policy in policy(), elapsed in duration()) {
        match attempt_room(&policy, elapsed) {
            Ok(left) => {
                prop_assert!(!left.is_zero());
                prop_assert_eq!(elapsed + left, policy.budget);
            }
            Err(stop) => {
                prop_assert!(elapsed >= policy.budget);
                prop_assert_eq!(stop.kind(), Kind::BudgetExhausted);
                prop_assert_eq!(stop.not_before, None);
            }
        }
    }

    #[test]
    fn backoff_fits_the_limits_or_ends_the_run(
        policy in policy(),
        attempt in 1u32..10,
        elapsed in duration(),
        unit in draw(),
    ) {
        let progress = Progress { attempt, elapsed };
        match next_step(Verdict::Retryable, None, progress, &policy, Draw(unit)) {
            Next::Wait(wait) => {
                prop_assert_eq!(wait.cause, WaitCause::Backoff { n: attempt });
                prop_assert!(wait.duration <= policy.backoff_max);
                if let Some(max_wait) = policy.max_wait {
                    prop_assert!(wait.duration <= max_wait);
                }
                prop_assert!(wait.duration < left(&policy, elapsed));
            }
            Next::Stop(stop) => {
                prop_assert!(matches!(stop.kind(), Kind::RetryExhausted | Kind::BudgetExhausted));
                prop_assert_eq!(stop.not_before, None);
            }
        }
    }

    #[test]
    fn a_scope_wait_is_never_cut_short_and_never_overstays(
        policy in policy(),
        gate in duration(),
        elapsed in duration(),
        unit in draw(),
        cause in scope_wait(),
    ) {
        let probe = matches!(cause, ScopeWait::Probe(_));
        let breaker = probe || matches!(cause, ScopeWait::HalfOpen(_));
        match scope_step(cause, gate, elapsed, &policy, Draw(unit)) {
            Next::Wait(wait) => {
                if probe {
                    // Until the other run's probe ends: never past its expiry.
                    prop_assert!(wait.duration <= gate);
                } else {
                    prop_assert!(wait.duration >= gate);
                }
                if cause == ScopeWait::Rate {
                    prop_assert_eq!(wait.duration, gate, "a --rate slot is waited exactly");
                }
                if let Some(max_wait) = policy.max_wait {
                    prop_assert!(wait.duration <= max_wait);
                }
                prop_assert!(wait.duration < left(&policy, elapsed));
            }
            Next::Stop(stop) => {
                let kind = if breaker { Kind::CircuitOpen } else { Kind::BudgetExhausted };
                prop_assert_eq!(stop.kind(), kind);
                prop_assert_eq!(stop.not_before, Some(gate));
                let patience = policy.max_wait.map_or(left(&policy, elapsed), |m| m.min(left(&policy, elapsed)));
                if probe {
                    prop_assert!(patience <= Duration::from_millis(1), "it waits behind a probe while it may");
                } else {
                    let over_max_wait = policy.max_wait.is_some_and(|m| gate > m);
                    prop_assert!(over_max_wait || gate >= left(&policy, elapsed));
                }
            }
        }
    }

    #[test]
    fn a_run_that_opened_a_breaker_never_comes_back_before_it_half_opens(
        policy in policy(),
        server in proptest::option::of(server_delay()),
        attempt in 1u32..12,
        elapsed in duration(),
        unit in draw(),
        half_open in duration(),
    ) {
        let progress = Progress { attempt, elapsed };
        let plain = next_step(Verdict::Retryable, server, progress, &policy, Draw(unit));
        match opened_breaker(plain.clone(), Some((half_open, Level::Endpoint))) {
            Next::Wait(wait) => prop_assert_eq!(Next::Wait(wait), plain, "it goes on as it would"),
            Next::Stop(stop) => {
                let Next::Stop(plain) = plain else { panic!("a wait became a stop") };
                if plain.kind() == Kind::RetryExhausted {
                    prop_assert_eq!(stop.kind(), Kind::CircuitOpen);
                }
                if stop.kind() == Kind::CircuitOpen {
                    prop_assert!(stop.not_before >= Some(half_open));
                    prop_assert!(stop.not_before >= plain.not_before);
                } else {
                    prop_assert_eq!(stop, plain);
                }
            }
        }
    }

    #[test]
    fn a_checked_write_goes_again_only_when_the_check_says_it_did_not_happen(
        observation in observation(),
        policy in policy(),
        keyed in any::<bool>(),
        check in proptest::option::of(0u16..1000),
        met in any::<bool>(),
        attempt in 1u32..10,
        elapsed in duration(),
        unit in draw(),
    ) {
        let replay = Replay::of("POST", keyed);
        let verdict = classify_keyed(observation, replay, keyed, &policy);
        if !effect_unknown(observation, true, &policy) {
            return Ok(());
        }
        let settled = settle(check, met);
        match after_check(settled) {
            Ok(again) => {
                prop_assert!(matches!(check, Some(404 | 410)), "{check:?} {verdict:?}");
                let next = next_step(again, None, Progress { attempt, elapsed }, &policy, Draw(unit));
                if let Next::Stop(stop) = next {
                    prop_assert!(matches!(stop.kind(), Kind::RetryExhausted | Kind::BudgetExhausted));
                }
            }
            Err(why) => {
                let kind = why.kind();
                prop_assert!(kind == Kind::Succeeded || kind == Kind::NeedsHuman);
                prop_assert_eq!(kind == Kind::Succeeded, settled == Settlement::Happened);
                prop_assert!(kind != Kind::Succeeded || matches!(check, Some(200..=299)));
            }
        }
    }

    #[test]
    fn a_keyed_422_is_never_retried(
        should_retry in proptest::option::of(any::<bool>()),
        policy in policy(),
        attempt in 1u32..10,
        elapsed in duration(),
        unit in draw(),
    ) {
        let observation = Observation::Status { status: 422, should_retry };
        let verdict = classify_keyed(observation, Replay::Safe, true, &policy);
        let next = next_step(verdict, None, Progress { attempt, elapsed }, &policy, Draw(unit));
        prop_assert!(matches!(next, Next::Stop(ref s) if s.kind() == Kind::NonRetryable));
    }

    #[test]
    fn a_spent_retry_budget_never_lets_the_caller_back_before_the_server_or_the_refill(
        policy in policy(),
        server in proptest::option::of(server_delay()),
        attempt in 1u32..12,
        elapsed in duration(),
        unit in draw(),
        refills_in in duration(),
    ) {
        let progress = Progress { attempt, elapsed };
        let plain = next_step(Verdict::Retryable, server, progress, &policy, Draw(unit));
        match (budget_refused(plain.clone(), Some(refills_in)), &plain) {
            (Next::Stop(stop), Next::Wait(wait)) => {
                prop_assert_eq!(stop.kind(), Kind::RetryExhausted);
                prop_assert!(stop.not_before >= Some(refills_in));
                if let WaitCause::Server { honoured, .. } = wait.cause {
                    prop_assert!(stop.not_before >= Some(honoured));
                }
            }
            (other, _) => prop_assert_eq!(&other, &plain, "a stop stays as it was"),
        }
        prop_assert_eq!(budget_refused(plain.clone(), None), plain);
    }

    #[test]
    fn a_write_that_may_have_been_processed_is_never_replayed(
        method in method(),
        declared_idempotent in any::<bool>(),
        observation in observation(),
        policy in policy(),
        attempt in 1u32..10,
        elapsed in duration(),
        unit in draw(),
    ) {
        let replay = Replay::of(&method, declared_idempotent);
        let verdict = classify(observation, replay, &policy);
        let next = next_step(verdict, None, Progress { attempt, elapsed }, &policy, Draw(unit));
        if replay == Replay::Unsafe && matches!(next, Next::Wait(_)) {
            // Only when the request never reached the server, or the server
            // says it did not process it (408, 429) or vouches for a retry.
            let unprocessed = match observation {
                Observation::Transport(phase) => phase == Phase::BeforeSend,
                Observation::Status { status, should_retry } => {
                    should_retry == Some(true)
                        || (should_retry.is_none() && [408, 429].contains(&status))
                }
            };
            prop_assert!(unprocessed, "{method} replayed after {observation:?}");
        }
        if verdict == Verdict::SideEffectUnknown {
            prop_assert!(matches!(next, Next::Stop(ref s) if s.kind() == Kind::SideEffectUnknown));
        }
        // Success means a 2xx or 3xx, whatever else the answer said.
        if verdict == Verdict::Success {
            prop_assert!(
                matches!(observation, Observation::Status { status: 200..=399, .. }),
                "{observation:?}"
            );
        }
    }

    #[test]
    fn jitter_only_adds_and_stays_within_its_fraction(
        wait in duration(),
        fraction in prop_oneof![-1.0..0.0f64, 0.0..1.0f64, 1.0..10.0f64],
        unit in prop_oneof![-1.0..0.0f64, draw(), 1.0..2.0f64],
    ) {
        let extra = delay::jitter(wait, fraction, unit);
        let most = wait.mul_f64(fraction.clamp(0.0, 1.0)).min(Duration::from_secs(2));
        prop_assert!(extra <= most);
        prop_assert!(delay::honoured(wait, Duration::from_secs(1)) >= wait);
    }

    #[test]
    fn backoff_stays_under_its_ceiling(
        n in any::<u32>(),
        base in (0u64..10_000).prop_map(Duration::from_millis),
        max in (0u64..100_000).prop_map(Duration::from_millis),
        unit in draw(),
    ) {
        let chosen = delay::backoff(n, base, max, unit);
        prop_assert!(chosen <= max);
        let exp = n.saturating_sub(1).min(31);
        prop_assert!(chosen <= base.saturating_mul(1 << exp));
    }

    #[test]
    fn delta_seconds_mean_what_they_say(seconds in any::<i64>(), now in clock()) {
        let parsed = delay::parse_retry_after(&seconds.to_string(), now).unwrap();
        let expected = Duration::from_secs(seconds.max(0).unsigned_abs()).min(MAX_SERVER_DELAY);
        prop_assert_eq!(parsed.delay, expected);
        prop_assert_eq!(parsed.source, DelaySource::RetryAfterSeconds);
    }

    #[test]
    fn an_http_date_means_the_time_until_it(now in clock(), date in clock()) {
        let parsed = delay::parse_retry_after(&httpdate::fmt_http_date(date), now).unwrap();
        let expected = date.duration_since(now).unwrap_or_default().min(MAX_SERVER_DELAY);
        prop_assert_eq!(parsed.delay, expected);
        prop_assert_eq!(parsed.source, DelaySource::RetryAfterDate);
    }

    #[test]
    fn duplicated_retry_after_takes_the_longest_valid_value(
        values in proptest::collection::vec(
            prop_oneof![
                (0u32..100_000).prop_map(|s| s.to_string()),
                // Printable, without the comma that makes a value a list.
                "[ -+\\--~]{0,12}",
            ],
            1..6,
        ),
        now in clock(),
    ) {
        let headers = values.iter().map(|v| ("Retry-After", v.as_str()));
        let found = delay::server_delay(headers, now);
        let valid: Vec<Duration> = values
            .iter()
            .filter_map(|v| delay::parse_retry_after(v, now))
            .map(|d| d.delay)
            .collect();
        prop_assert_eq!(found.delay.map(|d| d.delay), valid.iter().max().copied());
        prop_assert_eq!(found.ignored.len(), values.len() - valid.len());
    }

    #[test]
    fn a_joined_list_waits_for_its_longest_member(
        seconds in proptest::collection::vec(0u32..100_000, 1..6),
        now in clock(),
    ) {
        let joined = seconds.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        let found = delay::server_delay([("Retry-After", joined.as_str())], now);
        let longest = Duration::from_secs(u64::from(*seconds.iter().max().unwrap()));
        prop_assert_eq!(found.delay.map(|d| d.delay), Some(longest));
    }

    #[test]
    fn any_header_value_parses_without_panicking(value in any::<String>(), now in clock()) {
        let found = delay::server_delay([("Retry-After", value.as_str()), ("retry-after-ms", value.as_str())], now);
        if let Some(d) = found.delay {
            prop_assert!(d.delay <= MAX_SERVER_DELAY);
            prop_assert!(now.checked_add(d.delay).is_some());
        }
    }
}

/// Wall-clock times from 1970 to 2200, to the second (HTTP-dates have no finer unit).
fn clock() -> impl Strategy<Value = SystemTime> {
    (0u64..7_258_118_400).prop_map(|s| UNIX_EPOCH + Duration::from_secs(s))
}
