//! `--metrics ADDR` end to end: a real copy and a real watch scraped over plain TCP while they
//! run, the figures checked against the run's own summary and recording; the scrape checked
//! by the real `promtool check metrics`; a real Prometheus scraping a watch in which a drop
//! happens (a sender pausing over loopback: the network's drop, as in tests/watch_net.rs) and
//! the drop counter queried back through its HTTP API; a taken port refused before copying;
//! and the Grafana dashboard in docs/ querying only metrics the endpoint exports.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod util;
use util::{bin, free_port, have};

/// `GET path` over a plain TCP connection: (status, headers, body).
fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    // Prometheus (Go) sends a body over 2 KB in chunks: undone here, or a long query answer
    // read as no answer at all.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok((status, head.to_string(), body))
}

/// An HTTP/1.1 chunked body's data: "SIZE\r\nDATA\r\n" … "0\r\n\r\n".
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Scrapes /metrics, retrying while the process is still starting.
fn scrape(port: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match http_get(port, "/metrics") {
            Ok((200, head, body)) => {
                assert!(
                    head.to_ascii_lowercase()
                        .contains("content-type: text/plain; version=0.0.4"),
                    "{head}"
                );
                return body;
            }
            r if Instant::now() > deadline => panic!("no scrape from port {port}: {r:?}"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// The value of the one sample `series` (name with labels, exactly as exposed).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} in:\n{text}"))
        .parse()
        .unwrap()
}

/// Sum over every sample of a family (all label sets).
fn sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// The real `promtool check metrics` on a scrape: no error and no lint remark.
fn promtool_accepts(text: &str) {
    if !have("promtool") {
        eprintln!(
            "skipped promtool: not installed (Debian package prometheus; .ci/run installs it)"
        );
        return;
    }
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {said}\n{text}"
    );
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Ends a child of this test with SIGTERM (copyscope's own clean stop).
fn terminate(child: &Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
}

/// Kills a child this test started when the test ends, however it ends.
struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    fn new(c: Child) -> KillOnDrop {
        KillOnDrop(Some(c))
    }

    /// The child, now the test's to wait for.
    fn take(mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_watch_exports_what_its_summary_says() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // 200 MiB by dd, released once the watch has sampled, as a child of the followed shell:
    // its counters join the shell's when it is reaped, all at once and exactly. (dd exec'd
    // under the followed pid would lose what it wrote after the last sample before it exited
    // and was reaped by a parent that is not followed.) The shell outlives the watch.
    let mut dd = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "read go; dd if=/dev/zero of='{}' bs=1M count=200 status=none; sleep 8",
            dir.path().join("out").display()
        ))
        .stdin(Stdio::piped())
        // Not the test's stdout and stderr: a file the test runner writes to, on the watched
        // filesystem, would grow as this writer's own (51 bytes off the total once).
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let watch = Command::new(bin())
        .args(["watch", "--json", "--until-idle", "4", "--duration", "60"])
        .args(["--metrics", &format!("127.0.0.1:{port}"), "--pid"])
        .arg(dd.id().to_string())
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let watch = KillOnDrop::new(watch);
    let deadline = Instant::now() + Duration::from_secs(30);
    while value(&scrape(port), "copyscope_elapsed_seconds") < 0.3 {
        assert!(Instant::now() < deadline, "the watch never sampled");
        std::thread::sleep(Duration::from_millis(100));
    }
    writeln!(dd.stdin.take().unwrap(), "go").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = scrape(port);
        if value(&text, "copyscope_intake_bytes_total") >= (200 << 20) as f64 {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "dd's bytes never arrived:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let (status, _, body) = http_get(port, "/").unwrap();
    assert_eq!(status, 404, "{body}");
    let child = watch.take();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("metrics at http://127.0.0.1:{port}/metrics")),
        "{stderr}"
    );
    let lines = json_lines(&out.stdout);
    let summary = lines.iter().rfind(|v| v["type"] == "summary").unwrap();
    let written = summary["bytes_copied"].as_u64().unwrap();
    // `write_bytes` counts whole pages: at most a few over what dd wrote.
    assert!(
        (200 << 20..=(200 << 20) + (256 << 10)).contains(&written),
        "{summary}"
    );
    assert_eq!(
        value(&text, "copyscope_intake_bytes_total"),
        written as f64,
        "{text}"
    );
    assert!(
        sum(&text, "copyscope_drops_total") <= summary["drops"].as_f64().unwrap(),
        "{summary}\n{text}"
    );
    let info = text
        .lines()
        .find(|l| l.starts_with("copyscope_info{"))
        .unwrap();
    assert!(info.contains("mode=\"watch\""), "{info}");
    assert!(
        !text.contains("copyscope_copy_"),
        "a watch has no copy progress"
    );
    promtool_accepts(&text);
    assert!(dd.wait().unwrap().success());
}

#[test]
fn a_copy_exports_the_progress_it_records() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst, rec) = (
        dir.path().join("src.bin"),
        dir.path().join("dst.bin"),
        dir.path().join("run.jsonl"),
    );
    std::fs::write(&src, vec![7u8; 48 << 20]).unwrap();
    let port = free_port();
    // 48 MiB at 16 MiB/s: three seconds to scrape it in.
    let copy = Command::new(bin())
        .args(["--json", "--bwlimit", "16M", "--metrics"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--record")
        .arg(&rec)
        .arg(&src)
        .arg(&dst)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let copy = KillOnDrop::new(copy);
    std::thread::sleep(Duration::from_millis(1500));
    let text = scrape(port);
    let child = copy.take();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = value(&text, "copyscope_copy_done_bytes");
    assert!(done > 0.0 && done < (48 << 20) as f64, "mid-copy: {done}");
    assert_eq!(
        value(&text, "copyscope_copy_planned_bytes"),
        (48 << 20) as f64
    );
    assert_eq!(value(&text, "copyscope_copy_planned_files"), 1.0);
    assert_eq!(value(&text, "copyscope_intake_bytes_total"), done);
    // The figure is the model's after one of the samples the recording holds.
    let recorded: Vec<f64> = std::fs::read_to_string(&rec)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "sample")
        .filter_map(|v| v["engine"]["bytes_copied"].as_f64())
        .collect();
    assert!(
        recorded.contains(&done),
        "{done} is one of the recorded samples' bytes: {recorded:?}"
    );
    let info = text
        .lines()
        .find(|l| l.starts_with("copyscope_info{"))
        .unwrap();
    assert!(info.contains("mode=\"copy\""), "{info}");
    promtool_accepts(&text);
}

#[test]
fn a_port_in_use_is_refused_before_anything_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let src = dir.path().join("src");
    std::fs::write(&src, b"x").unwrap();
    let dst = dir.path().join("dst");
    let out = Command::new(bin())
        .args(["--plain", "--metrics"])
        .arg(format!("127.0.0.1:{port}"))
        .arg(&src)
        .arg(&dst)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("--metrics 127.0.0.1:{port}: cannot listen there")),
        "{stderr}"
    );
    assert!(!dst.exists(), "nothing copied");
    // Not for the commands that have no live model of a copy or watch.
    let out = Command::new(bin())
        .args(["demo", "--plain", "--metrics", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Prometheus' HTTP API: the samples of an instant query.
fn prom_query(port: u16, query: &str) -> Vec<Value> {
    let encoded: String = query
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, _, body) =
        http_get(port, &format!("/api/v1/query?query={encoded}")).unwrap_or_default();
    if status != 200 {
        return Vec::new();
    }
    let v: Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn start_prometheus(dir: &Path, target: u16, web: u16) -> KillOnDrop {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: copyscope\n    scrape_interval: 1s\n    \
             scrape_timeout: 1s\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        ),
    )
    .unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let prom = KillOnDrop::new(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !matches!(http_get(web, "/-/ready"), Ok((200, _, _))) {
        assert!(Instant::now() < deadline, "prometheus did not become ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    prom
}

/// A real Prometheus scrapes a watch every second; a sender over loopback pauses for 2 s
/// (the network's drop, see tests/watch_net.rs) and the drop counter comes back through
/// Prometheus' query API with that cause.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end scenario: the watch, the writer, the scrapes and their checks, in order"
)]
fn prometheus_scrapes_the_drop_counter_of_a_watch() {
    if !have("prometheus") {
        eprintln!(
            "skipped: prometheus is not installed (Debian package prometheus; .ci/run installs it)"
        );
        return;
    }
    if !Path::new("/sys/class/net/lo/statistics/rx_bytes").exists() {
        eprintln!("skipped: no /sys/class/net/lo");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (target, web) = (free_port(), free_port());
    let _prom = start_prometheus(dir.path(), target, web);

    // The receiver: a child (cat under bash's pid) reading the socket into a file of the
    // watched directory, followed by --pid (a watch counts what reaches files on the watched
    // file system, not socket or /dev/null writes); the sender: this test, 1 MiB every 20 ms
    // for 2.5 s, 2 s of nothing, 2.5 s more.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let receiver = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port}; exec cat <&3 > '{}'",
            dir.path().join("received.bin").display()
        ))
        .spawn()
        .unwrap();
    let mut receiver = KillOnDrop::new(receiver);
    let (mut sock, _) = listener.accept().unwrap();
    let watch = Command::new(bin())
        .args(["watch", "--json", "--duration", "90", "--net", "lo"])
        .args(["--metrics", &format!("127.0.0.1:{target}"), "--pid"])
        .arg(receiver.0.as_ref().unwrap().id().to_string())
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut watch = KillOnDrop::new(watch);
    // Its JSON lines are read as they come: a pipe left full stops the watch at its next
    // line, and the endpoint then serves the last figures from before the drop.
    let mut stdout = watch.0.as_mut().unwrap().stdout.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    // Prometheus sees the target up before the first byte.
    let deadline = Instant::now() + Duration::from_secs(30);
    while prom_query(web, "up").iter().all(|r| r["value"][1] != "1") {
        assert!(
            Instant::now() < deadline,
            "prometheus never scraped the watch"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let chunk = vec![0u8; 1 << 20];
    let burst = |sock: &mut TcpStream| {
        let end = Instant::now() + Duration::from_millis(2500);
        while Instant::now() < end {
            sock.write_all(&chunk).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    burst(&mut sock);
    std::thread::sleep(Duration::from_secs(2));
    burst(&mut sock);
    drop(sock);
    assert!(receiver.0.as_mut().unwrap().wait().unwrap().success());
    // The drop closed when the second burst came; Prometheus scrapes within a second.
    let deadline = Instant::now() + Duration::from_secs(20);
    let counted: Vec<(String, f64)> = loop {
        let rows = prom_query(web, "copyscope_drops_total");
        let counted: Vec<(String, f64)> = rows
            .iter()
            .filter_map(|r| {
                let v = r["value"][1].as_str()?.parse::<f64>().ok()?;
                Some((r["metric"]["cause"].as_str()?.to_string(), v))
            })
            .filter(|(_, v)| *v >= 1.0)
            .collect();
        if !counted.is_empty() {
            break counted;
        }
        if Instant::now() > deadline {
            let direct = scrape(target);
            let targets = http_get(web, "/api/v1/targets")
                .map(|r| r.2)
                .unwrap_or_default();
            let names: Vec<String> =
                prom_query(web, "count by (__name__) ({__name__=~\"copyscope_.*\"})")
                    .iter()
                    .map(|r| r.to_string())
                    .collect();
            let direct = format!("{direct}\ntargets: {targets}\nnames: {names:?}");
            let child = watch.take();
            terminate(&child);
            let _ = child.wait_with_output().unwrap();
            panic!(
                "no drop counted in Prometheus: {rows:?} (up: {:?})\nthe endpoint:\n{direct}\nthe watch said:\n{}",
                prom_query(web, "up"),
                String::from_utf8_lossy(&said.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    dashboard_panels_return_data(web);
    let child = watch.take();
    terminate(&child);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each cause Prometheus counted is the main cause of as many drops the watch printed:
    // the label is the model's diagnosis. (Which cause it is depends on the machine: on a
    // quiet one the network's; while other writers keep the disk's writeback busy, that.)
    let lines = json_lines(&said.join().unwrap());
    let printed: Vec<&str> = lines
        .iter()
        .filter(|v| v["type"] == "diagnosis" && v["kind"] == "drop")
        .filter_map(|d| d["causes"][0]["cause"].as_str())
        .collect();
    for (cause, n) in &counted {
        let seen = printed.iter().filter(|c| *c == cause).count();
        assert!(
            seen as f64 >= *n,
            "Prometheus counted {n} {cause} drops, the watch printed {printed:?}"
        );
    }
    eprintln!("Prometheus counted drops by cause: {counted:?}");
    // The job's labels are Prometheus' own; the info metric came through too.
    let info = prom_query(web, "copyscope_info");
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0]["metric"]["mode"], "watch");
    assert_eq!(info[0]["metric"]["job"], "copyscope");
}

/// Every metric the Grafana dashboard queries is one the endpoint exports, so the two never
/// drift apart; and the dashboard is one Grafana can import (panels with targets).
#[test]
fn the_grafana_dashboard_queries_only_exported_metrics() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/grafana/copyscope.json");
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(dash["title"].is_string());
    let known = copyscope::report::metrics::series_names();
    let panels = dash["panels"].as_array().expect("panels");
    let mut queried = 0;
    for p in panels {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().expect("every target has an expr");
            let names: Vec<&str> = expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .filter(|w| w.starts_with("copyscope_"))
                .collect();
            assert!(!names.is_empty(), "{expr} queries copyscope");
            for n in names {
                assert!(
                    known.iter().any(|k| k == n),
                    "panel {:?} queries {n}, which the endpoint does not export",
                    p["title"]
                );
                queried += 1;
            }
        }
    }
    assert!(queried >= 8, "the dashboard shows the main figures");
}

/// Every panel of the Grafana dashboard that a watch on this machine feeds gets data from the
/// real Prometheus scraping it: its queries as Grafana sends them (`$instance` any,
/// `$__rate_interval` a minute). The ZFS panels need a pool, and the copy's progress a copy.
fn dashboard_panels_return_data(web: u16) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/grafana/copyscope.json");
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut checked = 0;
    for p in dash["panels"].as_array().expect("panels") {
        let title = p["title"].as_str().unwrap_or_default();
        let exprs: Vec<String> = p["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["expr"].as_str())
            .map(|e| {
                e.replace("$instance", ".*")
                    .replace("$__rate_interval", "1m")
            })
            .collect();
        if exprs.is_empty() || title.starts_with("ZFS") || title == "Copy progress" {
            continue;
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while exprs.iter().all(|e| prom_query(web, e).is_empty()) {
            assert!(
                Instant::now() < deadline,
                "the dashboard's panel {title:?} gets no data from Prometheus: {exprs:?}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        checked += 1;
    }
    assert!(checked >= 5, "{checked} panels checked");
}

/// Sockets among a process's descriptors now (0 once it has gone).
fn sockets_of(pid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|t| t.to_string_lossy().starts_with("socket:"))
        .count()
}

/// Connections to `port` opened as fast as they are taken and held, each with half a request
/// header (a slow client), until `stop`; returns how many were established.
fn hold_connections(port: u16, stop: &std::sync::atomic::AtomicBool, most: usize) -> usize {
    use std::sync::atomic::Ordering;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut held: Vec<TcpStream> = Vec::new();
    let mut established = 0;
    while !stop.load(Ordering::SeqCst) {
        if held.len() >= most {
            // The endpoint's timeouts close some: give their descriptors back and go on.
            held.retain(|s| {
                let mut b = [0u8; 1];
                s.set_nonblocking(true).unwrap();
                !matches!((&*s).read(&mut b), Ok(0))
            });
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(mut s) => {
                established += 1;
                let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n");
                held.push(s);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    established
}

/// A local user opening connections to `--metrics` for the whole of a 4 000-file copy run
/// with `ulimit -n 1100` cannot take the copy's descriptors: the endpoint holds at most its
/// cap of connections at once and every file is copied right.
#[test]
fn connections_to_the_endpoint_cannot_take_the_copys_descriptors() {
    use std::sync::atomic::{AtomicBool, Ordering};
    // The attacker needs more descriptors than the copy has.
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        },
    )
    .unwrap();
    let most = lim.maximum.unwrap_or(4096).min(4096) as usize - 200;
    assert!(most > 1100, "the test needs 1 300 descriptors, has {most}");
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    for d in 0..40 {
        std::fs::create_dir_all(src.join(format!("d{d}"))).unwrap();
        for f in 0..100 {
            let seed = (d * 100 + f) as u8;
            let bytes: Vec<u8> = (0..4096u32).map(|i| (i as u8) ^ seed).collect();
            std::fs::write(src.join(format!("d{d}/f{f}")), bytes).unwrap();
        }
    }
    let port = free_port();
    // 16 MiB at 4 MiB/s: four seconds of copying under attack, however loaded the machine.
    let copy = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 1100 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(["--plain", "-a", "--bwlimit", "4M", "--metrics"])
        .arg(format!("127.0.0.1:{port}"))
        .arg(&src)
        .arg(&dst)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = copy.id();
    let mut copy = KillOnDrop::new(copy);
    scrape(port);
    // The copy's own sockets (signal pipes, the listener; a scrape's, closing, at most).
    let before = sockets_of(pid);
    let stop = AtomicBool::new(false);
    let (established, most_sockets, status) = std::thread::scope(|s| {
        let attacker = s.spawn(|| hold_connections(port, &stop, most));
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut most_sockets = 0;
        let status = loop {
            most_sockets = most_sockets.max(sockets_of(pid));
            if let Some(st) = copy.0.as_mut().unwrap().try_wait().unwrap() {
                break st;
            }
            assert!(Instant::now() < deadline, "the copy did not finish");
            std::thread::sleep(Duration::from_millis(50));
        };
        stop.store(true, Ordering::SeqCst);
        (attacker.join().unwrap(), most_sockets, status)
    });
    let out = copy.take().wait_with_output().unwrap();
    eprintln!("the attack held {established} connections; the copy {most_sockets} sockets at most");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(status.success(), "{status:?}\n{said}");
    assert!(
        said.contains("done: ") && said.contains(" in 4 000 files"),
        "{said}"
    );
    util::assert_same_tree(&src, &dst);
    let cap = copyscope::frontend::metrics::MAX_CONNECTIONS;
    assert!(
        most_sockets <= before + cap,
        "{most_sockets} sockets open at once, {before} before the attack"
    );
    assert!(
        established > 100,
        "the attack held {established} connections (the kernel's queue takes more than the cap)"
    );
}

/// The shipped alert rules load in Prometheus and fire as their unit tests say
/// (`promtool check rules`, `promtool test rules`).
#[test]
fn shipped_alert_rules_pass_promtool() {
    if !have("promtool") {
        return eprintln!("skipped: promtool not installed (Debian package prometheus)");
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/prometheus");
    for args in [
        ["check", "rules", "copyscope-alerts.yml"],
        ["test", "rules", "copyscope-alerts.test.yml"],
    ] {
        let o = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("promtool runs");
        assert!(
            o.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
