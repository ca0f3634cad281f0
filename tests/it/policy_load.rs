//! Policies as data: built-ins load, overrides are validated, user files work, errors are clear.

use tierscope_engine::policy::{self, KnobValue, PolicyError, PolicyKind};

fn set(k: &str, v: &str) -> Vec<(String, String)> {
    vec![(k.to_owned(), v.to_owned())]
}

/// The registry drives the built-ins: each kind's line lists its built-in policies, and
/// those are the built-ins, in registry order, each of the kind whose line names it (a TOML
/// whose `kind` disagrees with its registry line fails here). Every kind ships one.
#[test]
fn the_builtins_are_the_registrys() {
    let ps = policy::builtins().expect("built-ins parse");
    let names: Vec<&str> = ps.iter().map(|p| p.name.as_str()).collect();
    let registered: Vec<&str> = PolicyKind::ALL
        .iter()
        .flat_map(|k| k.builtins().iter().copied())
        .collect();
    assert_eq!(names, registered);
    assert_eq!(policy::builtin_names(), registered);
    for p in &ps {
        assert!(p.kind.builtins().contains(&p.name.as_str()), "{}", p.name);
    }
    for k in PolicyKind::ALL {
        assert!(!k.builtins().is_empty(), "kind {k} ships no built-in");
    }
}

#[test]
fn the_builtins_load_with_their_kinds() {
    let ps = policy::builtins().expect("built-ins parse");
    let kind = |n: &str| {
        ps.iter()
            .find(|p| p.name == n)
            .map(|p| (p.kind, p.respect_floors))
    };
    assert_eq!(kind("opencode"), Some((PolicyKind::Flat, false)));
    // One flat baseline per agent, each simulating its own agent's compaction.
    for agent in ["opencode", "claude-code", "codex"] {
        assert_eq!(kind(agent), Some((PolicyKind::Flat, false)));
        let p = policy::load(agent, &[]).expect("flat");
        assert_eq!(p.choice("rules"), agent);
    }
    assert_eq!(kind("age"), Some((PolicyKind::Progressive, false)));
    assert_eq!(kind("retention"), Some((PolicyKind::Progressive, true)));
    assert_eq!(kind("decay"), Some((PolicyKind::Decay, false)));
    assert_eq!(kind("oracle-legal"), Some((PolicyKind::Oracle, true)));
    let r = policy::load("retention", &[]).expect("retention");
    assert_eq!(r.num("demote_at"), 0.9);
    assert_eq!(r.num("target"), 0.75);
    assert_eq!(r.num("promote_at"), 0.6);
    assert_eq!(r.num("min_dwell"), 3.0);
    assert_eq!(r.choice("boundary"), "user-turn");
    assert_eq!(r.num("ttl_s"), 300.0);
    assert_eq!(r.num("thrash_window"), 20.0);
    assert_eq!(r.num("relevance_window"), 10.0);
    // Every knob has a spec with help; numeric ones have a range and a step.
    for p in &ps {
        for s in &p.specs {
            assert!(!s.help.is_empty(), "{}.{}", p.name, s.name);
            if let KnobValue::Num(_) = s.default {
                assert!(
                    s.min.is_some() && s.max.is_some() && s.step.is_some(),
                    "{}.{}",
                    p.name,
                    s.name
                );
            }
        }
        assert_eq!(p.knobs.len(), p.specs.len());
    }
}

#[test]
fn overrides_are_applied_and_checked() {
    let p = policy::load("retention", &set("demote_at", "0.95")).expect("valid");
    assert_eq!(p.num("demote_at"), 0.95);
    assert_eq!(p.overridden, ["demote_at"]);

    let e = policy::load("retention", &set("demote_on", "0.95")).unwrap_err();
    assert!(matches!(e, PolicyError::UnknownKnob { .. }));
    assert!(e.to_string().contains("demote_at"), "lists the knobs: {e}");

    let e = policy::load("retention", &set("demote_at", "7")).unwrap_err();
    assert!(e.to_string().contains("above the maximum"), "{e}");

    let e = policy::load("retention", &set("min_dwell", "1.5")).unwrap_err();
    assert!(e.to_string().contains("whole number"), "{e}");

    let e = policy::load("retention", &set("promote_at", "0.8")).unwrap_err();
    assert!(matches!(e, PolicyError::Constraint { .. }));
    assert!(
        e.to_string().contains("promote_at < target < demote_at"),
        "{e}"
    );

    let e = policy::load("retention", &set("boundary", "tuesday")).unwrap_err();
    assert!(e.to_string().contains("user-turn"), "{e}");

    let e = policy::load("decay", &set("respect_floors", "maybe")).unwrap_err();
    assert!(e.to_string().contains("true or false"), "{e}");
    let d = policy::load("decay", &set("respect_floors", "true")).expect("valid");
    assert!(d.respect_floors);

    let e = policy::parse_overrides(&["demote_at".to_owned()]).unwrap_err();
    assert!(matches!(e, PolicyError::BadOverride { .. }));

    let e = policy::load("nonesuch", &[]).unwrap_err();
    assert!(
        e.to_string().contains("retention"),
        "lists the built-ins: {e}"
    );
}

#[test]
fn user_files_load_and_bad_files_explain_themselves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("gentle.toml");
    std::fs::write(
        &good,
        "kind = \"progressive\"\ndescription = \"gentle\"\nrespect_floors = true\n[knobs]\ndemote_at = 0.97\ntarget = 0.9\npromote_at = 0.5\n",
    )
    .expect("write");
    let p = policy::load(good.to_str().expect("utf-8"), &set("min_dwell", "5")).expect("loads");
    assert_eq!(p.name, "gentle");
    assert_eq!(p.num("demote_at"), 0.97);
    assert_eq!(p.num("min_dwell"), 5.0);
    assert_eq!(
        p.spec("demote_at").map(|s| s.default.clone()),
        Some(KnobValue::Num(0.97))
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "kind = \"progressive\"\nrespect_floors = true\n[knobs]\ntarget = 0.95\n",
    )
    .expect("write");
    let e = policy::load(bad.to_str().expect("utf-8"), &[]).unwrap_err();
    assert!(
        e.to_string().contains("promote_at < target < demote_at"),
        "{e}"
    );

    let kind = dir.path().join("kind.toml");
    std::fs::write(&kind, "kind = \"magic\"\nrespect_floors = true\n").expect("write");
    let e = policy::load(kind.to_str().expect("utf-8"), &[]).unwrap_err();
    assert!(matches!(e, PolicyError::UnknownKind { .. }), "{e}");

    let floors = dir.path().join("floors.toml");
    std::fs::write(&floors, "kind = \"truncate\"\n").expect("write");
    let e = policy::load(floors.to_str().expect("utf-8"), &[]).unwrap_err();
    assert!(e.to_string().contains("respect_floors"), "{e}");
}

/// Each kind answers, in its own file, what the engine and the explorer ask of it: its headline
/// knobs are knobs it declares and reads, it is pressure-driven exactly when it reads the
/// pressure thresholds, and its floors come from where it says (a knob, always, or the file).
/// Checked over every built-in and each driver a choice picks.
/// What the engine treats a kind as beyond its decision is the kind's own answer: one baseline
/// (`full`, what divergence cost is measured against), one compaction (`flat`, whose summaries
/// a model may write and whose recorded trigger is the recording), one that needs the probes
/// (`oracle`); every other kind is a schedule. And a kind without the `fold` boundary rejects
/// it as a choice it does not have (no rule outside the kinds names `decay`).
#[test]
fn what_a_kind_is_to_the_engine_is_its_own_answer() {
    use tierscope_engine::policy::{KindRole, PolicyKind};
    let roles: Vec<(PolicyKind, KindRole)> =
        PolicyKind::ALL.iter().map(|k| (*k, k.role())).collect();
    let with = |r: KindRole| -> Vec<PolicyKind> {
        roles
            .iter()
            .filter(|(_, x)| *x == r)
            .map(|(k, _)| *k)
            .collect()
    };
    assert_eq!(with(KindRole::Baseline), [PolicyKind::Full]);
    assert_eq!(with(KindRole::Compaction), [PolicyKind::Flat]);
    assert_eq!(with(KindRole::Oracle), [PolicyKind::Oracle]);
    for p in policy::builtins().expect("built-ins parse") {
        assert_eq!(p.role(), p.kind.role(), "{}", p.name);
        if p.spec("boundary").is_some() {
            let err = policy::load(&p.name, &set("boundary", "fold"))
                .expect_err("fold is decay's boundary");
            assert!(
                err.to_string().contains("\"fold\" is not one of"),
                "{}: {err}",
                p.name
            );
        }
    }
}

#[test]
fn every_kind_answers_what_the_explorer_asks() {
    use tierscope_engine::policy::Floors;
    let mut ps = policy::builtins().expect("built-ins parse");
    ps.push(policy::load("retention", &set("driver", "age")).expect("age driver"));
    ps.push(policy::load("decay", &set("respect_floors", "false")).expect("decay"));
    for p in &ps {
        let head = p.headline_knobs();
        // Every kind but `full` (nothing to tune) has a knob worth the header.
        assert_eq!(head.is_empty(), p.name == "full", "{}: {head:?}", p.name);
        for k in head {
            assert!(p.reads(k), "{}: headline knob {k} is not read", p.name);
        }
        let thresholds = ["demote_at", "target", "promote_at"];
        assert_eq!(
            p.pressure_driven(),
            thresholds.iter().all(|k| p.reads(k)),
            "{}",
            p.name
        );
        // A wait before promoting again is a knob the policy reads, at its value.
        if let Some(w) = p.promotion_wait() {
            assert!(p.reads(w.knob), "{}: {} is not read", p.name, w.knob);
            assert_eq!(w.requests as f64, p.num(w.knob), "{}", p.name);
        }
        match p.kind.floors() {
            Floors::Knob(k) => assert_eq!(p.respect_floors, p.flag(k), "{}", p.name),
            Floors::Always => assert!(p.respect_floors, "{}", p.name),
            Floors::Declared => {}
        }
    }
    // The one pressure-driven built-in is retention; its header shows its thresholds.
    let driven: Vec<&str> = ps
        .iter()
        .filter(|p| p.pressure_driven())
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(driven, ["retention"]);
    let r = policy::load("retention", &[]).expect("retention");
    assert_eq!(
        r.headline_knobs(),
        ["demote_at", "target", "promote_at", "min_dwell"]
    );
    // Retention waits `promote_after` requests before promoting a demoted episode again; the
    // age driver never promotes, so it has no wait.
    let wait = r.promotion_wait().map(|w| (w.requests, w.knob));
    assert_eq!(wait, Some((20, "promote_after")));
    let age = policy::load("retention", &set("driver", "age")).expect("age driver");
    assert_eq!(age.promotion_wait(), None);
    // A narrow header names the headline knobs by their kinds' short names.
    let short: Vec<&str> = r
        .headline_knobs()
        .iter()
        .filter_map(|k| r.spec(k).map(|s| s.short_name()))
        .collect();
    assert_eq!(short, ["dem", "tgt", "pro", "dwell"]);
    // The thresholds a pressure-driven policy draws are its knobs' values.
    let t = r.thresholds().expect("retention is pressure-driven");
    assert_eq!(
        [t.demote_at, t.target, t.promote_at],
        [r.num("demote_at"), r.num("target"), r.num("promote_at")]
    );
    // Each kind proposes pairs of its own knobs to sweep first.
    for p in &ps {
        for (a, b) in p.sweep_pairs() {
            assert!(
                p.spec(a).is_some() && p.spec(b).is_some(),
                "{}: {a}, {b}",
                p.name
            );
        }
    }
}
