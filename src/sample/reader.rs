//! `SignalReader`: reads every signal for one tick, cheaply: small /proc files stay open
//! and are re-read from offset 0 into reused buffers; `txgs` is reopened each tick and read
//! to end of file, retried whole when a row vanishes mid-read; no subprocess runs per tick.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Instant;

use rustix::time::{ClockId, clock_gettime};

use super::cpu::CpuMeter;
use super::diskstats::sum_diskstats;
use super::procfs::{page_cache, parse_meminfo, parse_psi, parse_vmstat};
use super::root::{MAX_FILE_BYTES, SysRoot, open_kernel_file};
use super::threads::ThreadReader;
use super::zfs::{named_kstat_u64, parse_dmu_tx, parse_txgs};
use super::{Environment, Sample, ZfsSample};
use crate::copy::{Progress, ProgressSnapshot};

/// txg rows kept per sample: enough to see the open, quiescing, syncing and the last
/// few committed txgs without making recordings heavy.
pub const TXG_ROWS_KEPT: usize = 8;

/// A kstat file returns at most one page per read() (the seq_file buffer), so a full
/// `txgs` (100 rows ≈ 14 KB) takes several; a row dropped between two of them makes the
/// next read fail with EIO (spl-procfs-list.c), and the whole file is read again.
const TXGS_READ_ATTEMPTS: usize = 4;

/// A file kept open and re-read from offset 0 each tick into a reused buffer.
#[derive(Debug)]
struct KeptFile {
    path: PathBuf,
    file: Option<File>,
    buf: Vec<u8>,
}

impl KeptFile {
    fn new(path: PathBuf) -> Self {
        KeptFile {
            path,
            file: None,
            buf: Vec::new(),
        }
    }

    /// The whole file now, read to end of file from offset 0 (a seq_file gives at most a
    /// page per read); `None` (and a reopen next time) on any error.
    fn read(&mut self) -> Option<&str> {
        if self.file.is_none() {
            self.file = open_kernel_file(&self.path).ok();
        }
        let mut f = self.file.as_ref()?;
        let read = f
            .seek(SeekFrom::Start(0))
            .and_then(|_| read_to_eof(&mut f, &mut self.buf));
        match read {
            Ok(len) => std::str::from_utf8(&self.buf[..len]).ok(),
            Err(_) => {
                self.file = None;
                None
            }
        }
    }
}

/// The pool's kstat files.
#[derive(Debug)]
struct ZfsFiles {
    pool: String,
    txgs_path: PathBuf,
    txgs_buf: Vec<u8>,
    dmu_tx: KeptFile,
    arcstats: KeptFile,
    zil: KeptFile,
    objset: Option<KeptFile>,
}

impl ZfsFiles {
    /// Reopens txgs and reads all of it.
    fn read_txgs(&mut self) -> Option<&str> {
        let path = &self.txgs_path;
        let n = read_whole_retrying(
            || open_kernel_file(path),
            &mut self.txgs_buf,
            TXGS_READ_ATTEMPTS,
        )?;
        std::str::from_utf8(&self.txgs_buf[..n]).ok()
    }
}

/// Reads `r` sequentially until read() returns 0, however short each read is, into `buf`
/// (grown as needed, never shrunk); the number of bytes read.
pub fn read_to_eof(r: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut len = 0;
    loop {
        if len == buf.len() {
            if len >= MAX_FILE_BYTES {
                return Ok(len);
            }
            buf.resize((len * 2).max(8192), 0);
        }
        match r.read(&mut buf[len..]) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Opens and reads a whole file up to `attempts` times: a procfs list whose oldest rows
/// are dropped while it is read in pieces fails the read (EIO), and a fresh open starts
/// over. `None` when every attempt failed.
pub fn read_whole_retrying<R: Read>(
    mut open: impl FnMut() -> std::io::Result<R>,
    buf: &mut Vec<u8>,
    attempts: usize,
) -> Option<usize> {
    for _ in 0..attempts {
        // A file that cannot be opened will not open on a retry within the same tick.
        let mut file = open().ok()?;
        if let Ok(n) = read_to_eof(&mut file, buf) {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    /// Hands out `data` at most `chunk` bytes per read(), like a kstat's seq_file does
    /// a page at a time; fails once with EIO at `fail_at` when set (a dropped row).
    struct ShortReads<'a> {
        data: &'a [u8],
        pos: usize,
        chunk: usize,
        fail_at: Option<usize>,
    }

    impl Read for ShortReads<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.fail_at.is_some_and(|f| self.pos >= f) {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            let n = self.chunk.min(out.len()).min(self.data.len() - self.pos);
            out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    const AGED_TXGS: &str = include_str!("../../tests/fixtures/zfs-2.1/aged-pool/txgs");

    #[test]
    fn short_reads_are_joined_to_the_whole_file() {
        let mut r = ShortReads {
            data: AGED_TXGS.as_bytes(),
            pos: 0,
            chunk: 4096,
            fail_at: None,
        };
        let mut buf = Vec::new();
        let n = read_to_eof(&mut r, &mut buf).unwrap();
        assert!(
            AGED_TXGS.len() > 3 * 4096,
            "the fixture must span several pages"
        );
        assert_eq!(&buf[..n], AGED_TXGS.as_bytes());
        let mut tiny = ShortReads {
            data: AGED_TXGS.as_bytes(),
            pos: 0,
            chunk: 7,
            fail_at: None,
        };
        let n = read_to_eof(&mut tiny, &mut buf).unwrap();
        assert_eq!(&buf[..n], AGED_TXGS.as_bytes());
    }

    #[test]
    fn a_row_dropped_mid_read_restarts_the_whole_read() {
        let mut opens = 0;
        let mut buf = Vec::new();
        let n = read_whole_retrying(
            || {
                opens += 1;
                let fail_at = (opens == 1).then_some(4096);
                Ok(ShortReads {
                    data: AGED_TXGS.as_bytes(),
                    pos: 0,
                    chunk: 4096,
                    fail_at,
                })
            },
            &mut buf,
            TXGS_READ_ATTEMPTS,
        );
        assert_eq!(opens, 2);
        assert_eq!(&buf[..n.unwrap()], AGED_TXGS.as_bytes());
        let always_failing = read_whole_retrying(
            || {
                Ok(ShortReads {
                    data: b"txg",
                    pos: 0,
                    chunk: 1,
                    fail_at: Some(0),
                })
            },
            &mut buf,
            TXGS_READ_ATTEMPTS,
        );
        assert_eq!(always_failing, None);
    }
}

/// Reads all signals of one tick. Built once from the [`Environment`].
#[derive(Debug)]
pub struct SignalReader {
    page_size: u64,
    meminfo: KeptFile,
    vmstat: KeptFile,
    diskstats: KeptFile,
    psi: KeptFile,
    dest_devs: Vec<(u32, u32)>,
    src_devs: Vec<(u32, u32)>,
    cpu: Option<CpuMeter>,
    threads: ThreadReader,
    zfs: Option<ZfsFiles>,
}

fn now_raw_ns() -> u64 {
    let t = clock_gettime(ClockId::MonotonicRaw);
    u64::try_from(t.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0))
}

impl SignalReader {
    /// Prepares the readers for `env` (devices, pool) under `root`.
    pub fn new(root: &SysRoot, env: &Environment) -> Self {
        let zfs = env.zfs_pool.as_ref().map(|pool| ZfsFiles {
            pool: pool.clone(),
            txgs_path: root.join(format!("proc/spl/kstat/zfs/{pool}/txgs")),
            txgs_buf: Vec::new(),
            dmu_tx: KeptFile::new(root.join("proc/spl/kstat/zfs/dmu_tx")),
            arcstats: KeptFile::new(root.join("proc/spl/kstat/zfs/arcstats")),
            zil: KeptFile::new(root.join("proc/spl/kstat/zfs/zil")),
            objset: env
                .zfs_objset
                .as_ref()
                .map(|o| KeptFile::new(root.join(format!("proc/spl/kstat/zfs/{pool}/{o}")))),
        });
        SignalReader {
            page_size: if env.page_size > 0 {
                env.page_size
            } else {
                rustix::param::page_size() as u64
            },
            meminfo: KeptFile::new(root.join("proc/meminfo")),
            vmstat: KeptFile::new(root.join("proc/vmstat")),
            diskstats: KeptFile::new(root.join("proc/diskstats")),
            psi: KeptFile::new(root.join("proc/pressure/io")),
            dest_devs: env
                .dest_devices
                .iter()
                .map(|d| (d.major, d.minor))
                .collect(),
            src_devs: env
                .source_devices
                .iter()
                .map(|d| (d.major, d.minor))
                .collect(),
            cpu: CpuMeter::new(root),
            threads: ThreadReader::new(root),
            zfs,
        }
    }

    /// Watch mode: the threads read each tick are those of `pids` (the followed writers).
    pub fn follow_processes(&mut self, pids: &[u32]) {
        self.threads.follow(pids);
    }

    /// `(tid, running)` of the writer's threads the last [`SignalReader::read`] saw (the
    /// copy's threads, or every thread of the followed processes): the exact trace's list.
    pub fn writer_threads(&self) -> &[(u32, bool)] {
        self.threads.copiers()
    }

    /// Reads every source once. `t_ns` stamps the sample; `birth_offset_ns` is computed from
    /// the live CLOCK_MONOTONIC_RAW against `now_ns`, the same instant on the sampler's clock.
    pub fn read(&mut self, engine: ProgressSnapshot, t_ns: u64) -> Sample {
        let raw = now_raw_ns();
        let mut s = Sample {
            t_ns,
            engine,
            ..Default::default()
        };
        let mem = self.meminfo.read().and_then(|t| parse_meminfo(t).ok());
        let vm = self.vmstat.read().and_then(|t| parse_vmstat(t).ok());
        if let (Some(m), Some(v)) = (mem, vm) {
            s.page_cache = Some(page_cache(&m, &v, self.page_size));
        }
        if (!self.dest_devs.is_empty() || !self.src_devs.is_empty())
            && let Some(text) = self.diskstats.read()
        {
            s.dest_disk = sum_diskstats(text, &self.dest_devs);
            s.source_disk = sum_diskstats(text, &self.src_devs);
        }
        s.psi_io = self.psi.read().and_then(|t| parse_psi(t).ok());
        s.cpu = self.cpu.as_mut().and_then(CpuMeter::read);
        s.threads = self.threads.read();
        if let Some(z) = self.zfs.as_mut() {
            let txgs = z.read_txgs().and_then(|t| parse_txgs(t).ok()).map(|mut t| {
                let skip = t.rows.len().saturating_sub(TXG_ROWS_KEPT);
                t.rows.drain(..skip);
                t.rows
            });
            let dmu = z.dmu_tx.read().and_then(|t| parse_dmu_tx(t).ok());
            let anon = z
                .arcstats
                .read()
                .and_then(|t| named_kstat_u64(t, "anon_size"));
            let objset_nwritten = z
                .objset
                .as_mut()
                .and_then(|o| o.read().and_then(|t| named_kstat_u64(t, "nwritten")));
            if txgs.is_some() || dmu.is_some() || anon.is_some() || objset_nwritten.is_some() {
                s.zfs = Some(ZfsSample {
                    pool: z.pool.clone(),
                    txgs: txgs.unwrap_or_default(),
                    dmu_tx: dmu.unwrap_or_default(),
                    arc_anon: anon,
                    birth_offset_ns: i64::try_from(t_ns)
                        .unwrap_or(i64::MAX)
                        .saturating_sub(i64::try_from(raw).unwrap_or(i64::MAX)),
                    objset_nwritten,
                    zil_commits: z
                        .zil
                        .read()
                        .and_then(|t| named_kstat_u64(t, "zil_commit_count")),
                });
            }
        }
        s
    }
}

/// One tick, synchronously: stamps the sample with the time since `start` and reads
/// everything (used by tests, `watch` and the sampler thread).
pub fn read_sample(reader: &mut SignalReader, progress: &Progress, start: Instant) -> Sample {
    let t_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    reader.read(progress.snapshot(), t_ns)
}
