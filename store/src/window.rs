//! Frames read through a small buffer instead of through the file's
//! mapping, where that is cheaper.
//!
//! A full load of a large file checks every byte of it. Read through the
//! mapping, each page it touches costs a page fault to map and a page-table
//! entry to tear down when the session is dropped: kernel work that grows
//! with the number of pages, which a plain `read` does not do. Where the
//! page cache holds the file in small pages (a file grown by small appends
//! does), that work costs more than the copy a `read` makes, so the load
//! reads its frames with `pread` into a buffer that stays in the core's
//! cache, checks them there, and builds records that address the mapping,
//! which it never touches itself: payload pages are mapped later, and only
//! those whose content is read. A frame longer than the buffer is checked
//! through the mapping.
//!
//! Where the page cache holds the file in huge pages (2 MiB, as a file
//! written in large pieces gets on kernels with large folios), one fault
//! maps 2 MiB and the mapping is the cheaper way: no byte is copied, and
//! the checks overlap the memory reads. [`mapping_is_cheap`] tells the two
//! apart by sampling the file's 2 MiB regions.

use crate::format::{self, FRAME_PREFIX, FrameView};
use crate::scan::Limits;

/// Bytes of each loading thread's buffer: large enough that a refill
/// (one system call) is rare next to the frames checked, small enough to
/// stay in the core's level-2 cache beside the code and the records.
pub(crate) const BUFFER: usize = 256 << 10;

/// A window of a file's bytes, refilled from the file as a walk moves on.
pub(crate) struct Window<'a> {
    file: &'a std::fs::File,
    /// The whole file, mapped: the source of frames longer than the buffer.
    map: &'a [u8],
    buf: &'a mut [u8],
    /// File offset of `buf[0]`.
    lo: usize,
    /// File offset just past the bytes read into `buf`.
    hi: usize,
}

impl<'a> Window<'a> {
    /// A window over `file` (mapped as `map`) reading into `buf`.
    pub(crate) fn new(file: &'a std::fs::File, map: &'a [u8], buf: &'a mut [u8]) -> Self {
        Self {
            file,
            map,
            buf,
            lo: 0,
            hi: 0,
        }
    }

    /// Bytes of the file from `pos` on, at least `need` of them (the
    /// caller has checked that the file holds them), with the file offset
    /// of the returned slice's first byte; `None` when the file cannot be
    /// read (the caller then lets the verifying reader decide).
    #[inline]
    fn bytes(&mut self, pos: usize, need: usize) -> Option<(&[u8], usize)> {
        if pos >= self.lo && pos + need <= self.hi {
            return Some((&self.buf[..self.hi - self.lo], self.lo));
        }
        if need > self.buf.len() {
            return Some((self.map, 0));
        }
        let n = self.buf.len().min(self.map.len() - pos);
        self.lo = pos;
        self.hi = pos;
        read_at(self.file, &mut self.buf[..n], pos)?;
        self.hi = pos + n;
        Some((&self.buf[..n], pos))
    }

    /// The frame at `pos`, when it is intact: both copies of its body
    /// length agree, it ends inside the file, it is within `limits` and its
    /// checksum matches; `None` otherwise. Its bytes are read in the order
    /// they lie in the file (length, body, trailer), the order the hardware
    /// streams them in.
    #[inline]
    pub(crate) fn intact_frame(&mut self, pos: usize, limits: &Limits) -> Option<FrameView<'_>> {
        let len = self.map.len();
        if len - pos < format::MIN_FRAME {
            return None;
        }
        let (b, base) = self.bytes(pos, format::MIN_FRAME)?;
        let body_len = format::read_u32(b, pos - base);
        if (body_len as usize) < format::BODY_FIXED || body_len > limits.max_frame_len {
            return None;
        }
        let total = body_len as usize + 12;
        if total > len - pos {
            return None;
        }
        let (b, base) = self.bytes(pos, total)?;
        let at = pos - base;
        let v = view(b, at, pos, total);
        let good = format::checksum_ok(&v)
            & (format::read_u32(b, at + total - 4) == body_len)
            & (v.content_len <= limits.max_content_len);
        good.then_some(v)
    }
}

/// The frame of `total` bytes at `at` of `b`, which lies at file offset
/// `pos` (its lengths already checked).
#[inline]
fn view(b: &[u8], at: usize, pos: usize, total: usize) -> FrameView<'_> {
    FrameView {
        offset: pos as u64,
        kind: b[at + 4],
        flags: b[at + 5],
        content_len: format::read_u32(b, at + 8),
        link: format::read_u64(b, at + 12),
        payload: &b[at + FRAME_PREFIX..at + total - format::FRAME_SUFFIX],
        raw: &b[at..at + total],
    }
}

/// Fills `buf` from `file` at offset `pos`; `None` on any error, or when
/// the file ends first (it was cut short since it was mapped).
fn read_at(file: &std::fs::File, buf: &mut [u8], pos: usize) -> Option<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, pos as u64).ok()
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buf, pos);
        None
    }
}

/// 0: decide; 1: always through a buffer; 2: always through the mapping
/// (see [`crate::set_load_reads_mapping`]).
static FORCED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Sets what [`reads_mapping`] answers regardless of the file.
pub(crate) fn force_mapping(mapping: Option<bool>) {
    let v = match mapping {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    };
    FORCED.store(v, std::sync::atomic::Ordering::Relaxed);
}

/// Whether a load reads the frames of `map` through the mapping: when a
/// test forced one way, that way; otherwise for files checked on two
/// threads (`parallel`) where [`mapping_is_cheap`].
pub(crate) fn reads_mapping(map: &[u8], parallel: bool) -> bool {
    match FORCED.load(std::sync::atomic::Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => parallel && mapping_is_cheap(map),
    }
}

/// Regions of the mapping [`mapping_is_cheap`] samples.
const SAMPLES: usize = 8;

/// The size of a huge page, and of the regions sampled.
pub(crate) const REGION: usize = 2 << 20;

/// Whether reading the file through its mapping (`map`) is cheaper than
/// through a buffer: at least a quarter of up to [`SAMPLES`] of its 2 MiB
/// regions, spread over the file, are mapped as huge pages once touched.
/// Each sampled region is touched (one read of its first byte, which maps
/// it), then the kernel is asked which of them it mapped huge
/// (`PAGEMAP_SCAN`, Linux 6.7 and later). `false` where that cannot be
/// asked, and for files shorter than two regions.
fn mapping_is_cheap(map: &[u8]) -> bool {
    #[cfg(target_os = "linux")]
    {
        let base = map.as_ptr() as usize;
        let first = base.next_multiple_of(REGION);
        let end = (base + map.len()) & !(REGION - 1);
        if end < first + 2 * REGION {
            return false;
        }
        let regions = (end - first) / REGION;
        let n = regions.min(SAMPLES);
        let mut sampled = [0usize; SAMPLES];
        for (i, at) in sampled.iter_mut().enumerate().take(n) {
            *at = first + i * regions / n * REGION;
            // SAFETY: `*at` lies inside the mapping (first <= *at < end
            // <= base + map.len()), which `map` keeps alive.
            unsafe { std::ptr::read_volatile(*at as *const u8) };
        }
        huge_among(&sampled[..n], first, end).is_some_and(|huge| huge * 4 >= n)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = map;
        false
    }
}

/// How many of the full 2 MiB regions of `map` the kernel maps with huge
/// pages once each is touched, and how many full regions `map` has; `None`
/// where the kernel cannot tell (see [`huge_among`]) and off Linux.
#[cfg(any(test, feature = "bench"))]
pub(crate) fn huge_regions_of(map: &[u8]) -> Option<(usize, usize)> {
    #[cfg(target_os = "linux")]
    {
        let base = map.as_ptr() as usize;
        let first = base.next_multiple_of(REGION);
        let end = (base + map.len()) & !(REGION - 1);
        if end <= first {
            return Some((0, 0));
        }
        let starts: Vec<usize> = (first..end).step_by(REGION).collect();
        for &at in &starts {
            // SAFETY: `at` lies inside the mapping, which `map` keeps alive.
            unsafe { std::ptr::read_volatile(at as *const u8) };
        }
        huge_among(&starts, first, end).map(|huge| (huge, starts.len()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = map;
        None
    }
}

/// How many of the regions starting at `sampled` (inside `first..end`) the
/// kernel maps with huge pages; `None` when it cannot tell.
#[cfg(target_os = "linux")]
fn huge_among(sampled: &[usize], first: usize, end: usize) -> Option<usize> {
    // The argument and result layouts of PAGEMAP_SCAN (linux/fs.h).
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct PageRegion {
        start: u64,
        end: u64,
        categories: u64,
    }
    #[repr(C)]
    struct ScanArg {
        size: u64,
        flags: u64,
        start: u64,
        end: u64,
        walk_end: u64,
        vec: u64,
        vec_len: u64,
        max_pages: u64,
        category_inverted: u64,
        category_mask: u64,
        category_anyof_mask: u64,
        return_mask: u64,
    }
    const PAGE_IS_HUGE: u64 = 1 << 6;
    // _IOWR('f', 16, struct pm_scan_arg): 96 bytes of argument.
    const PAGEMAP_SCAN: libc::c_ulong = 0xC060_6610;
    // SAFETY: a plain open of a procfs file, closed below.
    let fd = unsafe {
        libc::open(
            c"/proc/self/pagemap".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let mut out = [PageRegion {
        start: 0,
        end: 0,
        categories: 0,
    }; 2 * SAMPLES];
    let mut huge = 0;
    let mut at = first as u64;
    let mut answered = true;
    while at < end as u64 {
        let mut arg = ScanArg {
            size: std::mem::size_of::<ScanArg>() as u64,
            flags: 0,
            start: at,
            end: end as u64,
            walk_end: 0,
            vec: out.as_mut_ptr() as u64,
            vec_len: out.len() as u64,
            max_pages: 0,
            category_inverted: 0,
            category_mask: PAGE_IS_HUGE,
            category_anyof_mask: 0,
            return_mask: PAGE_IS_HUGE,
        };
        // SAFETY: `arg` and `out` outlive the call, and the kernel writes
        // at most `vec_len` regions to `out`.
        let n = unsafe { libc::ioctl(fd, PAGEMAP_SCAN as _, &mut arg) };
        let Ok(n) = usize::try_from(n) else {
            answered = false;
            break;
        };
        for r in &out[..n.min(out.len())] {
            huge += sampled
                .iter()
                .filter(|&&s| s as u64 >= r.start && (s + REGION) as u64 <= r.end)
                .count();
        }
        if arg.walk_end <= at {
            break;
        }
        at = arg.walk_end;
    }
    // SAFETY: `fd` was opened above and is not used again.
    unsafe { libc::close(fd) };
    answered.then_some(huge)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The huge pages `/proc/self/smaps` reports for the mapping that
    /// starts at `start`, in regions.
    fn smaps_huge_regions(start: usize) -> usize {
        smaps_regions(start, "AnonHugePages:")
    }

    /// `field` of `/proc/self/smaps` for the mapping that starts at
    /// `start`, in 2 MiB regions.
    fn smaps_regions(start: usize, field: &str) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let head = format!("{start:x}-");
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        assert!(lines.next().is_some(), "mapping {head} not in smaps");
        let kb: usize = lines
            .take_while(|l| !l.contains('-') || l.starts_with("VmFlags"))
            .find_map(|l| l.strip_prefix(field))
            .map(|v| v.trim().trim_end_matches("kB").trim().parse().expect("kB"))
            .unwrap_or_else(|| panic!("{field} missing for mapping {head} in smaps"));
        kb * 1024 / REGION
    }

    /// For a file's mapping, `huge_regions_of` counts what `smaps` reports
    /// as `FilePmdMapped` (however many huge folios the page cache gave
    /// the file: all, some or none), and every full region of it.
    #[test]
    fn huge_regions_of_a_file_agree_with_smaps() {
        use std::io::Write;
        let path =
            std::env::temp_dir().join(format!("smith-window-huge-{}.bin", std::process::id()));
        let mut f = std::fs::File::create(&path).expect("create");
        let piece = vec![0x5au8; REGION];
        for _ in 0..5 {
            f.write_all(&piece).expect("write");
        }
        f.write_all(&piece[..4096]).expect("write");
        f.sync_all().expect("sync");
        drop(f);
        let f = std::fs::File::open(&path).expect("open");
        // SAFETY: a read-only mapping of the file written above.
        let map = unsafe { memmap2::Mmap::map(&f) }.expect("map");
        let found = huge_regions_of(&map);
        let base = map.as_ptr() as usize;
        let full = ((base + map.len()) & !(REGION - 1))
            .saturating_sub(base.next_multiple_of(REGION))
            / REGION;
        let expected = smaps_regions(base, "FilePmdMapped:");
        drop(map);
        std::fs::remove_file(&path).expect("remove");
        if let Some((huge, regions)) = found {
            assert_eq!(regions, full);
            assert_eq!(huge, expected);
        }
    }

    /// The kernel's answer through `PAGEMAP_SCAN` agrees with what it
    /// reports in `smaps` for memory whose huge pages it chose itself
    /// (anonymous memory with huge pages requested: as many as the
    /// machine's settings give, none where they are off).
    #[test]
    fn pagemap_scan_counts_the_huge_pages_smaps_reports() {
        let len = 4 * REGION;
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len + REGION,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(raw, libc::MAP_FAILED);
        let first = (raw as usize).next_multiple_of(REGION);
        // SAFETY: [first, first + len) lies inside the mapping.
        unsafe {
            libc::madvise(first as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            for r in 0..4 {
                std::ptr::write_volatile((first + r * REGION) as *mut u8, 1);
            }
        }
        let sampled = [
            first,
            first + REGION,
            first + 2 * REGION,
            first + 3 * REGION,
        ];
        let found = huge_among(&sampled, first, first + len);
        // smaps lists the part of the mapping from `first` on as its own
        // entry only when the kernel split it; read the whole mapping's.
        let expected = smaps_huge_regions(raw as usize);
        // SAFETY: unmaps the mapping made above.
        unsafe { libc::munmap(raw, len + REGION) };
        match found {
            Some(n) => assert_eq!(n, expected),
            // Kernels before 6.7 have no PAGEMAP_SCAN.
            None => {
                let release =
                    std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("release");
                let mut v = release
                    .split(['.', '-'])
                    .map(|p| p.parse::<u32>().unwrap_or(0));
                let (major, minor) = (v.next().unwrap_or(0), v.next().unwrap_or(0));
                assert!(
                    (major, minor) < (6, 7),
                    "PAGEMAP_SCAN failed on Linux {release}"
                );
            }
        }
    }
}
