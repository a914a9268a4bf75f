use std::time::Duration;

use super::*;

fn from_toml(text: &str) -> Result<Config, ConfigError> {
    let cfg: Config = Figment::from(Serialized::defaults(Config::default()))
        .merge(Toml::string(text))
        .extract()
        .map_err(|e| ConfigError::Figment(figment_message(e)))?;
    cfg.validate()?;
    Ok(cfg)
}

#[test]
fn defaults_need_a_password_for_login() {
    let err = from_toml("").unwrap_err().to_string();
    assert!(err.contains("auth.password"), "{err}");
    let cfg = from_toml("[auth]\nstrategy = \"anonymous\"").unwrap();
    assert_eq!(cfg.server.port, 20001);
    assert_eq!(cfg.metrics.timeout.0, Duration::from_secs(10));
}

#[test]
fn unknown_keys_and_bad_values_name_the_key() {
    let err =
        from_toml("[auth]\nstrategy = \"anonymous\"\n[server]\nprot = 1").unwrap_err().to_string();
    assert!(err.contains("`server.prot`"), "{err}");
    let err = from_toml("[auth]\nstrategy = \"anonymous\"\n[server]\nrequest_timeout = \"soon\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("server.request_timeout"), "{err}");
    let err = from_toml("[auth]\nstrategy = \"anonymous\"\nsigning_key = \"short\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("auth.signing_key"), "{err}");
    let err = from_toml("[auth]\nstrategy = \"anonymous\"\n[metrics]\nbogus = 3")
        .unwrap_err()
        .to_string();
    assert!(err.contains("metrics.bogus"), "{err}");
}

#[test]
fn every_problem_is_reported_at_once() {
    let err =
        from_toml("[server]\naddress = \"nowhere\"\nweb_root = \"x\"\n[metrics]\ntimeout = \"0s\"")
            .unwrap_err();
    let ConfigError::Several(all) = &err else { panic!("expected several problems, got {err}") };
    let keys: Vec<String> = all
        .iter()
        .map(|e| match e {
            ConfigError::Invalid { key, .. } => key.clone(),
            other => panic!("unexpected {other}"),
        })
        .collect();
    assert_eq!(keys, ["server.address", "server.web_root", "auth.password", "metrics.timeout"]);
}

#[test]
fn per_user_strategies_need_the_kube_source() {
    let err = from_toml(
        "[auth]\nstrategy = \"token\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"x\"]",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("auth.strategy") && err.contains("cluster.source = \"kube\""), "{err}");
    assert!(
        from_toml(
            "[auth]\nstrategy = \"header\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"x\"]"
        )
        .is_err()
    );
    // A remote read from a snapshot has no API server to review the caller there either.
    let remotes = "[[cluster.remotes]]\nname = \"west\"\nkubeconfig = \"k\"\n\
                   [[cluster.remotes]]\nname = \"north\"\nsource = \"snapshot\"\nsnapshot = [\"x\"]";
    let err =
        from_toml(&format!("[auth]\nstrategy = \"token\"\n{remotes}")).unwrap_err().to_string();
    assert!(err.contains("cluster.remotes[1] (north)") && err.contains("\"snapshot\""), "{err}");
    assert!(from_toml(&format!("[auth]\nstrategy = \"anonymous\"\n{remotes}")).is_ok());
    let cfg = from_toml("[auth]\nstrategy = \"header\"").unwrap();
    assert_eq!(cfg.auth.header_name, "X-Forwarded-Access-Token");
    assert_eq!(cfg.auth.review_cache_ttl.0, Duration::from_secs(60));
    assert_eq!(
        (cfg.auth.namespace_access.verb.as_str(), cfg.auth.namespace_access.resource.as_str()),
        ("list", "pods")
    );
}

#[test]
fn signing_keys_may_be_listed_and_passwords_hashed() {
    let two = "[auth]\nstrategy = \"anonymous\"\nsigning_key = [\"0123456789abcdef0123456789abcdef\", \"fedcba9876543210fedcba9876543210\"]";
    assert_eq!(from_toml(two).unwrap().auth.signing_key.unwrap().keys().len(), 2);
    let short = "[auth]\nstrategy = \"anonymous\"\nsigning_key = [\"0123456789abcdef0123456789abcdef\", \"short\"]";
    assert!(from_toml(short).unwrap_err().to_string().contains("auth.signing_key"));
    let phc = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    assert!(from_toml(&format!("[auth]\npassword_hash = \"{phc}\"")).is_ok());
    let err = from_toml("[auth]\npassword_hash = \"plain text\"").unwrap_err().to_string();
    assert!(err.contains("auth.password_hash"), "{err}");
    let err = from_toml(&format!("[auth]\npassword = \"x\"\npassword_hash = \"{phc}\""))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not both"), "{err}");
}

#[test]
fn argon2_memory_cost_is_bounded_and_proxies_are_cidrs() {
    let hash = |m: u32| {
        format!(
            "$argon2id$v=19$m={m},t=2,p=1$c29tZXNhbHRzb21lc2FsdA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        )
    };
    assert!(from_toml(&format!("[auth]\npassword_hash = \"{}\"", hash(19_456))).is_ok());
    assert!(from_toml(&format!("[auth]\npassword_hash = \"{}\"", hash(65_536))).is_ok());
    let err = from_toml(&format!("[auth]\npassword_hash = \"{}\"", hash(65_537)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("auth.password_hash") && err.contains("65537"), "{err}");
    let ok = "[auth]\nstrategy = \"anonymous\"\ntrusted_proxies = [\"10.0.0.0/8\", \"fd00::/8\", \"127.0.0.1\"]";
    assert_eq!(from_toml(ok).unwrap().auth.trusted_proxies.len(), 3);
    let err = from_toml("[auth]\nstrategy = \"anonymous\"\ntrusted_proxies = [\"10.0.0.0/33\"]")
        .unwrap_err()
        .to_string();
    assert!(err.contains("auth.trusted_proxies"), "{err}");
}

#[test]
fn health_rules_are_read_and_every_bad_one_named() {
    let ok = "[auth]\nstrategy = \"anonymous\"\n[[health.rate]]\nnamespace = \"bookinfo\"\nkind = \"app\"\nname = \"reviews\"\n[[health.rate.tolerance]]\ncode = \"^4\\\\d\\\\d$\"\ndirection = \".*\"\nprotocol = \"http\"\ndegraded = 10\nfailure = 20.5\n";
    let cfg = from_toml(ok).unwrap();
    let t = &cfg.health.rate[0].tolerance[0];
    assert_eq!((t.code.as_deref(), t.degraded, t.failure), (Some("^4\\d\\d$"), 10.0, 20.5));
    assert_eq!(cfg.health.rules().effective().len(), 2);
    assert_eq!(cfg.health.export_interval.0, Duration::from_secs(60));
    let bad = "[auth]\nstrategy = \"anonymous\"\n[[health.rate]]\nname = \"(\"\n[[health.rate.tolerance]]\ncode = \"5XX\"\n[[health.rate.tolerance]]\ncode = \"[\"\ndegraded = 30\nfailure = 20\n";
    let err = from_toml(bad).unwrap_err();
    let ConfigError::Several(all) = &err else { panic!("expected several problems, got {err}") };
    let keys: Vec<String> = all
        .iter()
        .map(|e| match e {
            ConfigError::Invalid { key, .. } => key.clone(),
            other => panic!("unexpected {other}"),
        })
        .collect();
    assert_eq!(
        keys,
        [
            "health.rate[0].name",
            "health.rate[0].tolerance[1].code",
            "health.rate[0].tolerance[1].degraded"
        ]
    );
}

#[test]
fn backend_tables_are_kept() {
    let cfg = from_toml(
        "[auth]\nstrategy = \"anonymous\"\n[metrics.prometheus]\nurl = \"http://x:9090\"",
    )
    .unwrap();
    let t = cfg.backend_table("prometheus");
    assert_eq!(t["url"], "http://x:9090");
    assert_eq!(t["timeout_ms"], 10_000);
    assert_eq!(t["max_series"], 100_000);
}
