//! `probe_environment`: facts read once at start (destination filesystem, ZFS pool and
//! dataset, the disks behind source and destination, tunables, page size) and one note per
//! missing signal saying what is n/a and what to do about it (docs/signals.md).

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Environment;
use super::blockdev::{BlockDev, block_name_of_path, disks_for_dev, disks_for_name};
use super::mountinfo::{MountEntry, find_mount, normalize, parse_mountinfo, zfs_pool_of};
use super::procfs::{VM_TUNABLES, parse_u64_value};
use super::root::SysRoot;
use super::zfs::{ZFS_TUNABLES, parse_objset, parse_txgs, parse_zpool_list_vhp};

/// How long `zpool list` may take before it is abandoned (a suspended pool can hang it).
const ZPOOL_TIMEOUT: Duration = Duration::from_secs(5);

/// Probes the destination and sources under `root`. ZFS leaf disks come from running
/// `zpool list -vHP POOL` once, only when `root` is the live `/` and `zpool` is installed.
pub fn probe_environment(root: &SysRoot, sources: &[PathBuf], dest: &Path) -> Environment {
    probe_with(root, sources, Some(dest), &live_zpool_list(root))
}

/// `copyscope pipe`: the environment of a stream from `source` (a file on standard input, or
/// none) into `dest` (a file on standard output, or none: a pipe, a socket, a device has no
/// filesystem of its own and no disks).
pub fn probe_stream_environment(
    root: &SysRoot,
    source: Option<&Path>,
    dest: Option<&Path>,
) -> Environment {
    let sources: Vec<PathBuf> = source.map(Path::to_path_buf).into_iter().collect();
    probe_with(root, &sources, dest, &live_zpool_list(root))
}

/// `zpool list -vHP POOL` on the live root; refused against a fixture tree.
fn live_zpool_list(root: &SysRoot) -> impl Fn(&str) -> Result<String, String> {
    let live = root.is_live();
    move |pool: &str| {
        if live {
            run_zpool_list(pool)
        } else {
            Err("zpool is not run against a --sys-root tree".to_string())
        }
    }
}

/// [`probe_environment`] with the `zpool list -vHP POOL` output supplied by `zpool_list`
/// (`Err(reason)` when unavailable), so tests can feed a captured output.
pub fn probe_environment_with(
    root: &SysRoot,
    sources: &[PathBuf],
    dest: &Path,
    zpool_list: &dyn Fn(&str) -> Result<String, String>,
) -> Environment {
    probe_with(root, sources, Some(dest), zpool_list)
}

/// The leaf disks of the pools met, each pool's `zpool list` run once.
struct PoolDisks<'a> {
    zpool_list: &'a dyn Fn(&str) -> Result<String, String>,
    cache: Vec<(String, Result<Vec<BlockDev>, String>)>,
}

impl PoolDisks<'_> {
    fn of(&mut self, root: &SysRoot, pool: &str) -> Result<Vec<BlockDev>, String> {
        if let Some((_, r)) = self.cache.iter().find(|(p, _)| p == pool) {
            return r.clone();
        }
        let r = (self.zpool_list)(pool).map(|text| {
            let mut set = BTreeSet::new();
            for leaf in parse_zpool_list_vhp(&text, pool) {
                if let Some(name) = block_name_of_path(root, Path::new(&leaf)) {
                    set.extend(disks_for_name(root, &name));
                }
            }
            set.into_iter().collect::<Vec<_>>()
        });
        self.cache.push((pool.to_string(), r.clone()));
        r
    }
}

/// The destination (when there is one), the sources' disks, the tunables.
fn probe_with(
    root: &SysRoot,
    sources: &[PathBuf],
    dest: Option<&Path>,
    zpool_list: &dyn Fn(&str) -> Result<String, String>,
) -> Environment {
    let mut env = Environment {
        page_size: rustix::param::page_size() as u64,
        ..Default::default()
    };
    let mounts = match root.read_to_string("proc/self/mountinfo") {
        Ok(t) => parse_mountinfo(&t),
        Err(e) => {
            env.notes.push(format!(
                "filesystem n/a: cannot read {} ({e})",
                root.join("proc/self/mountinfo").display()
            ));
            Vec::new()
        }
    };
    let mut pools = PoolDisks {
        zpool_list,
        cache: Vec::new(),
    };
    if let Some(dest) = dest {
        probe_destination(root, &mounts, dest, &mut pools, &mut env);
        if root.is_live() {
            env.dest_free_bytes = free_bytes(dest);
        }
    }
    env.dest_disks = env.dest_devices.iter().map(|d| d.name.clone()).collect();
    let src = source_disks(root, &mounts, sources, &mut pools);
    if src != env.dest_devices {
        env.source_devices = src;
    }

    // Tunables and the remaining signal sources.
    for name in VM_TUNABLES {
        if let Some(v) = root.read_value(format!("proc/sys/vm/{name}")) {
            env.tunables.push((format!("vm.{name}"), v));
        }
    }
    env.mem_total = root
        .read_to_string("proc/meminfo")
        .ok()
        .and_then(|t| super::procfs::parse_meminfo(&t).ok())
        .and_then(|m| m.mem_total);
    check_sources(root, &mut env);
    env
}

/// `statvfs` of `path`, or of its nearest existing parent (a copy's destination may not
/// exist yet): the bytes available to an unprivileged writer.
fn free_bytes(path: &Path) -> Option<u64> {
    path.ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .chain(std::iter::once(Path::new(".")))
        .find_map(|p| rustix::fs::statvfs(p).ok())
        .map(|v| v.f_bavail.saturating_mul(v.f_frsize))
}

/// The destination's filesystem, its pool and dataset on ZFS, and its disks.
fn probe_destination(
    root: &SysRoot,
    mounts: &[MountEntry],
    dest: &Path,
    pools: &mut PoolDisks,
    env: &mut Environment,
) {
    let dest_abs = absolute(root, dest);
    let dest_mount = find_mount(mounts, &dest_abs).cloned();
    if let Some(m) = &dest_mount {
        env.fs_type = Some(m.fs_type.clone());
        env.mount_source = Some(m.source.clone());
        env.mount_point = Some(m.mount_point.clone());
    } else if !mounts.is_empty() {
        env.notes.push(format!(
            "filesystem n/a: no mount in mountinfo holds {}",
            dest_abs.display()
        ));
    }
    match dest_mount.as_ref().filter(|m| m.fs_type == "zfs") {
        Some(m) => probe_zfs_destination(root, m, pools, env),
        None => probe_block_destination(root, &dest_abs, dest_mount.as_ref(), env),
    }
}

/// A destination on ZFS: the dataset, its objset kstat, the pool's leaf disks and kstats.
fn probe_zfs_destination(
    root: &SysRoot,
    m: &MountEntry,
    pools: &mut PoolDisks,
    env: &mut Environment,
) {
    let pool = zfs_pool_of(&m.source).to_string();
    env.zfs_dataset = Some(m.source.clone());
    env.zfs_objset = find_objset(root, &pool, &m.source);
    if env.zfs_objset.is_none() {
        env.notes.push(format!(
            "dataset intake n/a: no objset kstat names {} (OpenZFS < 0.8, or a snapshot)",
            m.source
        ));
    }
    match pools.of(root, &pool) {
        Ok(d) if !d.is_empty() => env.dest_devices = d,
        Ok(_) => env.notes.push(format!(
            "device n/a: no block device found for the leaf vdevs of pool {pool}"
        )),
        Err(why) => env.notes.push(format!(
            "device n/a: leaf disks of pool {pool} unknown ({why}); device rate and utilisation are not shown"
        )),
    }
    probe_zfs(root, &pool, env);
    env.zfs_pool = Some(pool);
}

/// A destination off ZFS: the disks behind its device number (or its mount source).
fn probe_block_destination(
    root: &SysRoot,
    dest_abs: &Path,
    dest_mount: Option<&MountEntry>,
    env: &mut Environment,
) {
    let dev = device_of(root, dest_abs, dest_mount);
    // btrfs and similar report an anonymous 0:N st_dev although they sit on a real
    // device: the mount source names it.
    let by_source = match (dev, dest_mount) {
        (Some((0, _)), Some(m)) => disks_of_source(root, &m.source),
        _ => Vec::new(),
    };
    match dev {
        Some((0, _)) if !by_source.is_empty() => env.dest_devices = by_source,
        Some((0, _)) => env.notes.push(format!(
            "device n/a: {} has no block device of its own (major 0); device rate and utilisation are not shown",
            env.fs_type.as_deref().unwrap_or("the destination filesystem")
        )),
        Some((ma, mi)) => {
            env.dest_devices = disks_for_dev(root, ma, mi);
            if env.dest_devices.is_empty() {
                env.notes.push(format!(
                    "device n/a: {} has no entry, so the destination disk is unknown",
                    root.join(format!("sys/dev/block/{ma}:{mi}")).display()
                ));
            }
        }
        None => env
            .notes
            .push("device n/a: the destination's device number is unknown".to_string()),
    }
}

/// The sources' disks (the caller drops them when they are exactly the destination's).
fn source_disks(
    root: &SysRoot,
    mounts: &[MountEntry],
    sources: &[PathBuf],
    pools: &mut PoolDisks,
) -> Vec<BlockDev> {
    let mut src = BTreeSet::new();
    for s in sources {
        let abs = absolute(root, s);
        let m = find_mount(mounts, &abs).cloned();
        match &m {
            Some(m) if m.fs_type == "zfs" => {
                if let Ok(d) = pools.of(root, zfs_pool_of(&m.source)) {
                    src.extend(d);
                }
            }
            _ => match device_of(root, &abs, m.as_ref()) {
                Some((0, _)) => {
                    if let Some(m) = &m {
                        src.extend(disks_of_source(root, &m.source));
                    }
                }
                Some((ma, mi)) => src.extend(disks_for_dev(root, ma, mi)),
                None => {}
            },
        }
    }
    src.into_iter().collect()
}

/// `path` made absolute and normalised; on the live root symlinks in its existing part are
/// resolved too, so the mount lookup sees the real location.
fn absolute(root: &SysRoot, path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let abs = normalize(&abs);
    if !root.is_live() {
        return abs;
    }
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(p), Some(n)) => {
                rest.push(n.to_os_string());
                existing = p;
            }
            _ => return abs,
        }
    }
}

/// The device number of the filesystem holding `path`: stat of its nearest existing ancestor
/// on the live root, else mountinfo's field 3.
fn device_of(root: &SysRoot, path: &Path, mount: Option<&MountEntry>) -> Option<(u32, u32)> {
    if root.is_live() {
        let mut p = Some(path);
        while let Some(cur) = p {
            if let Ok(md) = std::fs::metadata(cur) {
                let dev = md.dev();
                return Some((rustix::fs::major(dev), rustix::fs::minor(dev)));
            }
            p = cur.parent();
        }
    }
    mount.map(|m| (m.major, m.minor))
}

/// The disks behind a mount source that is a device path (`/dev/sda2`, `/dev/mapper/vg-lv`);
/// empty for sources such as `tmpfs`, `server:/export` or `pool/dataset`.
fn disks_of_source(root: &SysRoot, source: &str) -> Vec<BlockDev> {
    if !source.starts_with("/dev/") {
        return Vec::new();
    }
    block_name_of_path(root, Path::new(source))
        .map(|name| disks_for_name(root, &name))
        .unwrap_or_default()
}

/// The `objset-0x…` kstat whose `dataset_name` is `dataset`.
fn find_objset(root: &SysRoot, pool: &str, dataset: &str) -> Option<String> {
    let dir = root.join(format!("proc/spl/kstat/zfs/{pool}"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("objset-"))
        .collect();
    names.sort();
    names.into_iter().find(|n| {
        root.read_to_string(format!("proc/spl/kstat/zfs/{pool}/{n}"))
            .ok()
            .and_then(|t| parse_objset(&t).ok())
            .is_some_and(|o| o.dataset_name == dataset)
    })
}

/// ZFS tunables, the dirty-data limits, and notes for missing txgs/dmu_tx/arcstats.
fn probe_zfs(root: &SysRoot, pool: &str, env: &mut Environment) {
    let param = |name: &str| root.read_value(format!("sys/module/zfs/parameters/{name}"));
    for name in ZFS_TUNABLES {
        if let Some(v) = param(name) {
            env.tunables.push((name.to_string(), v));
        }
    }
    env.zfs_dirty_data_max = param("zfs_dirty_data_max").and_then(|v| parse_u64_value(&v));
    env.zfs_version = root
        .read_value("sys/module/zfs/version")
        .filter(|v| !v.is_empty());
    env.zfs_sync_percent = param("zfs_dirty_data_sync_percent")
        .and_then(|v| parse_u64_value(&v))
        .and_then(|v| u32::try_from(v).ok())
        .or_else(|| {
            // ≤0.7 had a byte threshold (zfs_dirty_data_sync) instead of a percentage.
            let bytes = param("zfs_dirty_data_sync").and_then(|v| parse_u64_value(&v))?;
            let max = env.zfs_dirty_data_max.filter(|m| *m > 0)?;
            u32::try_from(bytes.saturating_mul(100) / max).ok()
        });
    env.zfs_delay_percent = param("zfs_delay_min_dirty_percent")
        .and_then(|v| parse_u64_value(&v))
        .and_then(|v| u32::try_from(v).ok());
    if env.zfs_dirty_data_max.is_none() {
        env.notes.push(format!(
            "zfs dirty limit n/a: {} unreadable, so dirty data cannot be shown as a share of the limit",
            root.join("sys/module/zfs/parameters/zfs_dirty_data_max").display()
        ));
    }
    let history = param("zfs_txg_history").and_then(|v| parse_u64_value(&v));
    let txgs_path = root.join(format!("proc/spl/kstat/zfs/{pool}/txgs"));
    match super::root::read_kernel_file(&txgs_path) {
        Err(_) => env.notes.push(format!(
            "txg syncs n/a: {} missing (OpenZFS older than 0.6.3, or the pool is not imported)",
            txgs_path.display()
        )),
        Ok(_) if history == Some(0) => env.notes.push(
            "txg syncs n/a: zfs_txg_history is 0; enable it with `echo 100 > /sys/module/zfs/parameters/zfs_txg_history`"
                .to_string(),
        ),
        Ok(t) if parse_txgs(&t).is_err() => env.notes.push(format!(
            "txg syncs n/a: {} has no `txg` header line",
            txgs_path.display()
        )),
        Ok(_) => {}
    }
    for (file, what) in [
        ("dmu_tx", "zfs write throttle n/a"),
        ("arcstats", "zfs dirty estimate (arcstats anon_size) n/a"),
    ] {
        let p = root.join(format!("proc/spl/kstat/zfs/{file}"));
        if !p.exists() {
            env.notes.push(format!("{what}: {} missing", p.display()));
        }
    }
}

/// Notes for page cache, diskstats, PSI and CPU sources that cannot be read.
fn check_sources(root: &SysRoot, env: &mut Environment) {
    for (rel, what) in [
        ("proc/meminfo", "page cache dirty/writeback n/a"),
        ("proc/vmstat", "page cache thresholds n/a"),
        ("proc/diskstats", "device counters n/a"),
    ] {
        if root.open(rel).is_err() {
            env.notes
                .push(format!("{what}: cannot read {}", root.join(rel).display()));
        }
    }
    let psi = root.join("proc/pressure/io");
    if !psi.exists() {
        env.notes
            .push("io pressure n/a: kernel without PSI (boot with psi=1)".to_string());
    } else if super::root::read_kernel_file(&psi).is_err() {
        env.notes.push(format!(
            "io pressure n/a: {} unreadable (PSI disabled: boot with psi=1)",
            psi.display()
        ));
    }
    if !root.is_live() {
        env.notes.push(
            "cpu n/a: --sys-root is a fixture tree and the CPU meter reads only the live /proc"
                .to_string(),
        );
    }
}

/// Finds `zpool` on PATH or in the sbin directories (often missing from a user's PATH).
fn find_zpool() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/sbin", "/usr/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join("zpool"))
        .find(|p| p.is_file())
}

/// Runs `zpool list -vHP POOL` once, with a timeout.
pub fn run_zpool_list(pool: &str) -> Result<String, String> {
    let bin = find_zpool().ok_or_else(|| "`zpool` not found; install zfsutils".to_string())?;
    let mut child = Command::new(&bin)
        .args(["list", "-vHP", pool])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let deadline = Instant::now() + ZPOOL_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                if let Some(mut so) = child.stdout.take() {
                    so.read_to_string(&mut out)
                        .map_err(|e| format!("reading zpool output: {e}"))?;
                }
                return if status.success() {
                    Ok(out)
                } else {
                    Err(format!("`zpool list -vHP {pool}` failed ({status})"))
                };
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`zpool list` took over {ZPOOL_TIMEOUT:?}"));
            }
            Err(e) => return Err(format!("waiting for zpool: {e}")),
        }
    }
}
