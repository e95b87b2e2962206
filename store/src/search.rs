//! Full-text search over stored sessions (`smith session search`,
//! `/search-all`).
//!
//! What is searched: the text a user reads in a conversation — user and
//! assistant messages (with their tool calls' arguments), tool results
//! (a result that refers to its effect's output for its text, §4.1 of
//! docs/session-format.md, is searched in that output) and compaction
//! summaries. Tool-call entries (which repeat a call the
//! assistant message holds), effect records (which repeat a tool's
//! output), run metadata (which repeats the system prompt and tool list on
//! every run) and plugin entries are not, so a hit names the entry a user
//! would look at, once.
//!
//! How: an entry's content is one canonical CBOR item whose text strings
//! are stored verbatim as UTF-8, so the query is first looked for in the
//! entry's bytes as they lie in the mapped file (decompressed first where
//! the entry is stored compressed) with one SIMD substring search
//! ([`aho_corasick`]'s packed searcher); nothing is decoded for the
//! entries that do not hold the query, which is almost all of them. An
//! entry whose bytes hold it is then walked item by item, and the hit is
//! confirmed inside one text string (the bytes could, rarely, span a CBOR
//! head and a text), which also gives the snippet.
//!
//! Case: smart case, as in ripgrep. A query without an uppercase letter
//! matches ASCII letters of either case (`error` finds `Error`); a query
//! with one matches exactly. Letters outside ASCII always match exactly.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use smith_codec::{Decoder, Token};

use crate::entry::{EntryKind, Record};
use crate::error::{ErrorKind, Result, StoreError};
use crate::search_index::{Covered, FileState, Fit, Group, Index, TrigramSet, may_hold};
use crate::session::Session;

/// Characters of context kept on each side of a hit in its snippet.
pub const SNIPPET_CONTEXT: usize = 40;

/// A compiled query.
#[derive(Debug, Clone)]
pub struct Query {
    text: String,
    case_sensitive: bool,
    finder: Finder,
}

/// How a query is looked for.
#[derive(Debug, Clone)]
enum Finder {
    /// Exactly: one pattern (a SIMD substring search inside).
    Exact(AhoCorasick),
    /// ASCII case ignored: every case variant of a short prefix found at
    /// once by the packed SIMD searcher (Teddy), each candidate then
    /// compared whole ignoring ASCII case. A single case-insensitive
    /// automaton would have to stop at every byte that can start the
    /// query (every `n` of English text for "needle"), which is several
    /// times slower.
    Variants {
        prefixes: aho_corasick::packed::Searcher,
        lower: Vec<u8>,
    },
    /// ASCII case ignored where the packed searcher cannot run (no SIMD):
    /// one case-insensitive automaton.
    Folded(AhoCorasick),
}

/// Case variants of the prefix are generated up to this many.
const MAX_VARIANTS: usize = 16;

impl Query {
    /// Compiles `text` with smart case (see the module docs).
    ///
    /// # Errors
    /// `Invalid` for an empty query.
    pub fn new(text: &str) -> Result<Query> {
        if text.is_empty() {
            return Err(StoreError::new(
                ErrorKind::Invalid,
                "the search text is empty; give the words to look for, e.g. `smith session search \"flaky test\"`",
            ));
        }
        let case_sensitive = text.chars().any(char::is_uppercase);
        let automaton = |fold: bool| {
            AhoCorasick::builder()
                .ascii_case_insensitive(fold)
                .match_kind(MatchKind::LeftmostFirst)
                .kind(Some(AhoCorasickKind::DFA))
                .build([text])
                .map_err(|err| {
                    StoreError::new(
                        ErrorKind::Invalid,
                        format!("the search text {text:?} cannot be searched for: {err}"),
                    )
                })
        };
        let finder = if case_sensitive {
            Finder::Exact(automaton(false)?)
        } else {
            let lower = text.as_bytes().to_ascii_lowercase();
            match prefix_variants(&lower) {
                Some(prefixes) => Finder::Variants { prefixes, lower },
                None => Finder::Folded(automaton(true)?),
            }
        };
        Ok(Query {
            text: text.to_owned(),
            case_sensitive,
            finder,
        })
    }

    /// The query as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether letters must match in case (the query has an uppercase
    /// letter).
    pub fn case_sensitive(&self) -> bool {
        self.case_sensitive
    }

    /// The byte range of the first match in `haystack`.
    pub fn find(&self, haystack: &[u8]) -> Option<(usize, usize)> {
        match &self.finder {
            Finder::Exact(a) | Finder::Folded(a) => a.find(haystack).map(|m| (m.start(), m.end())),
            Finder::Variants { prefixes, lower } => {
                let mut at = 0;
                while at < haystack.len() {
                    let m =
                        prefixes.find_in(haystack, aho_corasick::Span::from(at..haystack.len()))?;
                    let start = m.start();
                    let end = start + lower.len();
                    if haystack
                        .get(start..end)
                        .is_some_and(|h| h.eq_ignore_ascii_case(lower))
                    {
                        return Some((start, end));
                    }
                    at = start + 1;
                }
                None
            }
        }
    }
}

/// The packed searcher for every ASCII case variant of the longest prefix
/// of `lower` that has at most [`MAX_VARIANTS`] of them; `None` where the
/// packed searcher is not available.
fn prefix_variants(lower: &[u8]) -> Option<aho_corasick::packed::Searcher> {
    let mut len = 0;
    let mut count = 1usize;
    for &b in lower {
        let more = if b.is_ascii_alphabetic() { 2 } else { 1 };
        if count * more > MAX_VARIANTS {
            break;
        }
        count *= more;
        len += 1;
    }
    let prefix = &lower[..len.max(1)];
    let mut variants: Vec<Vec<u8>> = vec![Vec::with_capacity(prefix.len())];
    for &b in prefix {
        if b.is_ascii_alphabetic() {
            let upper: Vec<Vec<u8>> = variants
                .iter()
                .map(|v| {
                    let mut v = v.clone();
                    v.push(b.to_ascii_uppercase());
                    v
                })
                .collect();
            for v in &mut variants {
                v.push(b);
            }
            variants.extend(upper);
        } else {
            for v in &mut variants {
                v.push(b);
            }
        }
    }
    aho_corasick::packed::Config::new()
        .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
        .builder()
        .extend(variants)
        .build()
}

/// One entry holding the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The entry's id.
    pub entry: u64,
    /// The entry's kind.
    pub kind: EntryKind,
    /// When the entry was written (milliseconds since the Unix epoch).
    pub timestamp_ms: u64,
    /// The text around the first match, on one line, with `…` where it
    /// was cut.
    pub snippet: String,
    /// The match's byte range in [`Hit::snippet`].
    pub matched: (usize, usize),
}

/// What one session's search covered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Searched {
    /// Entries whose content was searched.
    pub entries: u64,
    /// Content bytes searched (after decompression).
    pub bytes: u64,
    /// Entries holding the query.
    pub hits: u64,
}

/// Whether entries of `kind` are searched (see the module docs).
pub fn searched_kind(kind: EntryKind) -> bool {
    matches!(
        kind,
        EntryKind::UserMessage
            | EntryKind::AssistantMessage
            | EntryKind::ToolResult
            | EntryKind::Compaction
    )
}

/// Searches every entry of `session` (all branches, in append order) for
/// `query`, calling `on_hit` for each entry that holds it until it returns
/// `false`. `scratch` is reused for compressed entries.
///
/// # Errors
/// `Malformed` when a compressed entry does not decompress (the session's
/// name and the entry are in the message).
pub fn search_session(
    session: &Session,
    query: &Query,
    scratch: &mut Vec<u8>,
    on_hit: impl FnMut(Hit) -> bool,
) -> Result<Searched> {
    let mut output_scratch = Vec::new();
    search_records(
        session,
        query,
        0..session.records().len(),
        (scratch, &mut output_scratch),
        None,
        on_hit,
    )
}

/// [`search_session`] over the records `range` of `session`, adding the
/// searched text's trigrams to `trigrams` when given (the search index's
/// filter of that range, [`crate::search_index`]): every searched entry's
/// content and every referred output, whether or not it holds the query.
fn search_records(
    session: &Session,
    query: &Query,
    range: std::ops::Range<usize>,
    (scratch, output_scratch): (&mut Vec<u8>, &mut Vec<u8>),
    mut trigrams: Option<&mut TrigramSet>,
    mut on_hit: impl FnMut(Hit) -> bool,
) -> Result<Searched> {
    let mut searched = Searched::default();
    let records = &session.records()[range.clone()];
    for (index, record) in range.zip(records) {
        if !searched_kind(record.entry_kind()) {
            continue;
        }
        let content = content(session, record, scratch)?;
        searched.entries += 1;
        searched.bytes += content.len() as u64;
        if let Some(set) = trigrams.as_deref_mut() {
            set.add(content);
        }
        let mut found = None;
        if query.find(content).is_some() {
            found = confirm(content, query);
        }
        if (found.is_none() || trigrams.is_some())
            && record.entry_kind() == EntryKind::ToolResult
            && let Some(effect) = crate::refs::content_ref(content)
            && let Some(completion) = crate::refs::completion_before(session, index, effect)
        {
            // The result's text is its effect's output (§4.1): searched
            // there, and the hit is the result's.
            let output = self::content(session, completion, output_scratch)?;
            if let Some(text) = crate::refs::output_content(output) {
                if let Some(set) = trigrams.as_deref_mut() {
                    set.add(text.as_bytes());
                }
                if found.is_none() {
                    searched.bytes += text.len() as u64;
                    if let Some((start, end)) = query.find(text.as_bytes()) {
                        found = Some(snippet(text, start, end));
                    }
                }
            }
        }
        let Some((snippet, matched)) = found else {
            continue;
        };
        searched.hits += 1;
        let go_on = on_hit(Hit {
            entry: record.id,
            kind: record.entry_kind(),
            timestamp_ms: record.timestamp_ms,
            snippet,
            matched,
        });
        if !go_on {
            break;
        }
    }
    Ok(searched)
}

/// What a search of the store covered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreSearched {
    /// Sessions searched.
    pub sessions: u64,
    /// The sum over sessions of what each search covered.
    pub within: Searched,
    /// Session files read (bytes on disk).
    pub file_bytes: u64,
    /// Entries the search index ruled out (never decompressed nor
    /// scanned).
    pub ruled_out: u64,
    /// Entries added to the search index by this search.
    pub indexed: u64,
    /// Why the search index was not used or not kept up to date (one
    /// line: what, why, what to do), when that happened.
    pub note: Option<String>,
}

/// How a store search runs.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// The search index's directory ([`crate::search_index`]; smith keeps
    /// it in its cache directory): `None` searches every entry without it.
    pub index_dir: Option<std::path::PathBuf>,
    /// Threads searching, the calling one included (at least one).
    pub threads: usize,
    /// Content bytes of the units of work the records no index group
    /// cuts are cut into (each unit is searched by one thread).
    pub unit_bytes: u64,
}

impl Default for SearchOptions {
    /// No index; as many threads as the machine runs at once.
    fn default() -> Self {
        Self {
            index_dir: None,
            threads: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            unit_bytes: UNIT_BYTES,
        }
    }
}

/// Searches `sessions` (the store's listing, or part of it; newest first
/// is the listing's order) for `query`, calling `on_hit` with each hit's
/// session until it returns `false`, without the search index, on as
/// many threads as the machine runs at once ([`search_sessions_with`]).
///
/// # Errors
/// As [`search_sessions_with`].
pub fn search_sessions(
    store: &crate::Store,
    sessions: &[crate::SessionInfo],
    query: &Query,
    on_hit: impl FnMut(&crate::SessionInfo, Hit) -> bool,
) -> Result<StoreSearched> {
    search_sessions_with(store, sessions, query, &SearchOptions::default(), on_hit)
}

/// Content bytes a unit of work scans when no index groups its records
/// (the default of [`SearchOptions::unit_bytes`]).
pub const UNIT_BYTES: u64 = 4 << 20;

/// Units of work a thread may run ahead of the hits delivered, per
/// thread: what bounds the hits held for the order.
const AHEAD_PER_THREAD: u64 = 4;

/// Searches `sessions` (the store's listing, or part of it; newest first
/// is the listing's order) for `query`, calling `on_hit` with each hit's
/// session until it returns `false`.
///
/// The sessions are cut into units of work (a few MB of content, or one
/// index group) that `options.threads` threads search at once; the hits
/// are handed to `on_hit`, on the calling thread, in the listing's order
/// and each session's entries in append order, exactly as one thread
/// would hand them, and none after `on_hit` returns `false`. Threads run
/// at most a few units ahead of the hits handed over, so the hits held
/// for the order are those of a few units.
///
/// With `options.index_dir`, each session's search index
/// ([`crate::search_index`]) is read first: a session whose every group
/// lacks one of the query's trigrams is not even loaded, and within the
/// others only the groups that may hold it are searched. Entries not yet
/// indexed (a new session, frames appended since) are searched whole and
/// indexed as they are, and the index is written once a session is done.
/// An index that cannot be written is reported in
/// [`StoreSearched::note`], never as a failure.
///
/// # Errors
/// A session that cannot be loaded or whose compressed entry does not
/// decompress: the error names it (loading reports the file and the fix).
/// Only errors met before `on_hit` stops the search are returned.
pub fn search_sessions_with(
    store: &crate::Store,
    sessions: &[crate::SessionInfo],
    query: &Query,
    options: &SearchOptions,
    mut on_hit: impl FnMut(&crate::SessionInfo, Hit) -> bool,
) -> Result<StoreSearched> {
    let threads = options.threads.max(1);
    let mut index_dir = options.index_dir.as_deref();
    let mut note = None;
    if let Some(dir) = index_dir
        && let Err(err) = std::fs::create_dir_all(dir)
    {
        note = Some(format!(
            "note: the search index directory {} could not be made ({err}), so this search reads every entry; make it writable, or remove what is in its way",
            dir.display()
        ));
        index_dir = None;
    }
    let state = std::sync::Mutex::new(State {
        plan: Planner {
            store,
            sessions,
            trigrams: crate::search_index::query_trigrams(query.text()),
            index_dir,
            building: true,
            unit_bytes: options.unit_bytes.max(1),
            pending: std::collections::VecDeque::new(),
            next_session: 0,
        },
        next_seq: 0,
        exhausted: false,
        delivered: 0,
        results: std::collections::BTreeMap::new(),
        stop: false,
        panicked: false,
    });
    let wake = std::sync::Condvar::new();
    let ahead = AHEAD_PER_THREAD * threads as u64;
    let shared = Shared {
        state: &state,
        wake: &wake,
        query,
        ahead,
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|| shared.work());
        }
        // However delivery ends (done, stopped, failed, or `on_hit`
        // panicking), the helpers are told to stop before they are joined.
        let _stop = StopOnDrop(&shared);
        shared
            .deliver(sessions, index_dir, &mut on_hit)
            .map(|mut total| {
                total.note = total.note.or(note);
                total
            })
    })
}

/// Stops the search when dropped.
struct StopOnDrop<'a, 'b, 's>(&'b Shared<'a, 's>);

impl Drop for StopOnDrop<'_, '_, '_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.stop = true;
        drop(st);
        self.0.wake.notify_all();
    }
}

/// One unit of work.
struct Unit {
    seq: u64,
    job: std::sync::Arc<Job>,
    work: Work,
    /// The session's first unit (the session is counted with it).
    first: bool,
    /// Its last (the index is written after it).
    last: bool,
}

/// What a unit does.
enum Work {
    /// Search these records.
    Scan(std::ops::Range<usize>),
    /// Search these records and make them one index group.
    Build(std::ops::Range<usize>),
    /// Nothing to search (the index ruled the session out, or it is
    /// empty).
    Nothing,
    /// The session could not be loaded.
    Failed(StoreError),
}

/// One session's search.
struct Job {
    /// Its place in the listing.
    info: usize,
    session: Option<std::sync::Arc<Session>>,
    /// The index to write once every unit is done (the groups kept; the
    /// units' new groups are appended).
    write: Option<Index>,
    /// Entries the index ruled out.
    ruled_out: u64,
}

/// A unit's outcome.
struct Done {
    job: std::sync::Arc<Job>,
    first: bool,
    last: bool,
    hits: Vec<Hit>,
    searched: Searched,
    group: Option<Group>,
    error: Option<StoreError>,
}

struct State<'s> {
    plan: Planner<'s>,
    next_seq: u64,
    /// Every unit has been handed out.
    exhausted: bool,
    delivered: u64,
    results: std::collections::BTreeMap<u64, Done>,
    stop: bool,
    panicked: bool,
}

struct Shared<'a, 's> {
    state: &'a std::sync::Mutex<State<'s>>,
    wake: &'a std::sync::Condvar,
    query: &'a Query,
    ahead: u64,
}

/// Marks the search stopped when a searching thread panics, so the
/// others do not wait for its unit.
struct PanicGuard<'a, 'b, 's>(&'b Shared<'a, 's>);

impl Drop for PanicGuard<'_, '_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut st = self.0.lock();
            st.panicked = true;
            st.stop = true;
            drop(st);
            self.0.wake.notify_all();
        }
    }
}

/// Buffers a searching thread reuses.
#[derive(Default)]
struct Buffers {
    scratch: Vec<u8>,
    output: Vec<u8>,
    trigrams: Option<TrigramSet>,
}

impl<'s> Shared<'_, 's> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<'s>> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the next unit when the window allows: `Err(())` when it does
    /// not (wait), `Ok(None)` when every unit is handed out.
    fn take(&self, st: &mut State<'s>) -> std::result::Result<Option<Unit>, ()> {
        if st.exhausted {
            return Ok(None);
        }
        if st.next_seq >= st.delivered + self.ahead {
            return Err(());
        }
        match st.plan.next() {
            Some((job, work, first, last)) => {
                let seq = st.next_seq;
                st.next_seq += 1;
                Ok(Some(Unit {
                    seq,
                    job,
                    work,
                    first,
                    last,
                }))
            }
            None => {
                st.exhausted = true;
                Ok(None)
            }
        }
    }

    /// Runs `unit` and files its outcome.
    fn run_and_file(&self, unit: Unit, bufs: &mut Buffers) {
        let seq = unit.seq;
        let done = run(unit, self.query, bufs);
        let mut st = self.lock();
        st.results.insert(seq, done);
        drop(st);
        self.wake.notify_all();
    }

    /// A helper thread: runs units until every one is handed out or the
    /// search stops.
    fn work(&self) {
        let _guard = PanicGuard(self);
        let mut bufs = Buffers::default();
        let mut st = self.lock();
        loop {
            if st.stop {
                return;
            }
            match self.take(&mut st) {
                Ok(Some(unit)) => {
                    drop(st);
                    self.run_and_file(unit, &mut bufs);
                    st = self.lock();
                }
                Ok(None) => {
                    drop(st);
                    self.wake.notify_all();
                    return;
                }
                Err(()) => {
                    st = self
                        .wake
                        .wait(st)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
        }
    }

    /// The calling thread: hands the outcomes over in order, running units
    /// itself while the next outcome is not there.
    fn deliver(
        &self,
        sessions: &[crate::SessionInfo],
        index_dir: Option<&std::path::Path>,
        on_hit: &mut impl FnMut(&crate::SessionInfo, Hit) -> bool,
    ) -> Result<StoreSearched> {
        let mut total = StoreSearched::default();
        let mut bufs = Buffers::default();
        let mut groups: Vec<Group> = Vec::new();
        let mut writes = true;
        let mut st = self.lock();
        loop {
            let next = st.delivered;
            if let Some(done) = st.results.remove(&next) {
                st.delivered += 1;
                drop(st);
                self.wake.notify_all();
                if let Some(err) = done.error {
                    return Err(err);
                }
                let info = &sessions[done.job.info];
                if done.first {
                    total.sessions += 1;
                    total.file_bytes += info.bytes;
                    total.ruled_out += done.job.ruled_out;
                    groups.clear();
                }
                total.within.entries += done.searched.entries;
                total.within.bytes += done.searched.bytes;
                if let Some(group) = done.group {
                    total.indexed += u64::from(group.entries);
                    groups.push(group);
                }
                for hit in done.hits {
                    total.within.hits += 1;
                    if !on_hit(info, hit) {
                        return Ok(total);
                    }
                }
                if done.last
                    && writes
                    && let (Some(dir), Some(index)) = (index_dir, &done.job.write)
                {
                    let mut index = index.clone();
                    index.groups.append(&mut groups);
                    if let Err((path, err)) = crate::search_index::write(dir, &index) {
                        writes = false;
                        // The sessions still to plan are searched without
                        // building filters no one can keep.
                        self.lock().plan.building = false;
                        total.note = Some(format!(
                            "note: the search index could not be written to {} ({err}), so later searches read every entry again; make that directory writable, or remove it",
                            path.display()
                        ));
                    }
                }
                st = self.lock();
                continue;
            }
            if st.panicked {
                return Ok(total);
            }
            if st.exhausted && st.delivered == st.next_seq {
                return Ok(total);
            }
            match self.take(&mut st) {
                Ok(Some(unit)) => {
                    drop(st);
                    self.run_and_file(unit, &mut bufs);
                    st = self.lock();
                }
                // Every unit handed out just now, each one delivered.
                Ok(None) if st.delivered == st.next_seq => return Ok(total),
                Ok(None) | Err(()) => {
                    st = self
                        .wake
                        .wait(st)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
        }
    }
}

/// Runs one unit.
fn run(unit: Unit, query: &Query, bufs: &mut Buffers) -> Done {
    let mut done = Done {
        job: unit.job.clone(),
        first: unit.first,
        last: unit.last,
        hits: Vec::new(),
        searched: Searched::default(),
        group: None,
        error: None,
    };
    let (range, build) = match unit.work {
        Work::Scan(range) => (range, false),
        Work::Build(range) => (range, true),
        Work::Nothing => return done,
        Work::Failed(err) => {
            done.error = Some(err);
            return done;
        }
    };
    let Some(session) = unit.job.session.as_deref() else {
        return done;
    };
    let set = if build {
        Some(bufs.trigrams.get_or_insert_with(TrigramSet::new))
    } else {
        None
    };
    let hits = &mut done.hits;
    match search_records(
        session,
        query,
        range.clone(),
        (&mut bufs.scratch, &mut bufs.output),
        set,
        |hit| {
            hits.push(hit);
            true
        },
    ) {
        Ok(searched) => {
            done.searched = searched;
            if build && let Some(set) = bufs.trigrams.as_mut() {
                let records = &session.records()[range.clone()];
                done.group = Some(Group {
                    first: u32::try_from(range.start).unwrap_or(u32::MAX),
                    end: u32::try_from(range.end).unwrap_or(u32::MAX),
                    entries: u32::try_from(searched.entries).unwrap_or(u32::MAX),
                    bytes: u32::try_from(
                        records
                            .iter()
                            .map(|r| session.content_len(r) as u64)
                            .sum::<u64>(),
                    )
                    .unwrap_or(u32::MAX),
                    filter: set.take_filter(),
                });
            }
        }
        Err(err) => {
            if let Some(set) = bufs.trigrams.as_mut() {
                set.take_filter();
            }
            done.error = Some(err);
        }
    }
    done
}

/// Cuts the sessions into units, in order.
struct Planner<'s> {
    store: &'s crate::Store,
    sessions: &'s [crate::SessionInfo],
    /// The query's trigrams (empty: the index cannot narrow it).
    trigrams: Vec<u32>,
    index_dir: Option<&'s std::path::Path>,
    /// Whether new groups are indexed (until an index cannot be written).
    building: bool,
    unit_bytes: u64,
    /// The current session's units not handed out yet: (job, work, first,
    /// last).
    pending: std::collections::VecDeque<(std::sync::Arc<Job>, Work, bool, bool)>,
    next_session: usize,
}

impl Planner<'_> {
    fn next(&mut self) -> Option<(std::sync::Arc<Job>, Work, bool, bool)> {
        while self.pending.is_empty() {
            let ix = self.next_session;
            if ix >= self.sessions.len() {
                return None;
            }
            self.next_session += 1;
            self.plan(ix);
        }
        self.pending.pop_front()
    }

    /// Queues session `ix`'s units (at least one).
    fn plan(&mut self, ix: usize) {
        let info = &self.sessions[ix];
        let mut job = Job {
            info: ix,
            session: None,
            write: None,
            ruled_out: 0,
        };
        let path = self.store.path_of(info.id);
        // The file as it is before it is read: an index made now covers at
        // most these bytes.
        let state = std::fs::metadata(&path).ok().map(|m| FileState::of(&m));
        let old = match (self.index_dir, state) {
            (Some(dir), Some(state)) => crate::search_index::read(dir, info.id).map(|index| {
                let fit = index.fit(info.id, &path, &state);
                (index, fit)
            }),
            _ => None,
        };
        if let Some((index, Fit::Current)) = &old
            && !self.trigrams.is_empty()
            && !index
                .groups
                .iter()
                .any(|g| may_hold(&g.filter, &self.trigrams))
        {
            job.ruled_out = index.groups.iter().map(|g| u64::from(g.entries)).sum();
            self.pending
                .push_back((std::sync::Arc::new(job), Work::Nothing, true, true));
            return;
        }
        let session = match self.store.load(&info.id.to_hex()) {
            Ok(session) => session,
            Err(err) => {
                self.pending
                    .push_back((std::sync::Arc::new(job), Work::Failed(err), true, true));
                return;
            }
        };
        let records = session.records();
        // The groups of the old index that still describe the file.
        let (mut kept, fit) = match old {
            Some((index, fit)) if fit != Fit::Rebuild => {
                let covered = records
                    .iter()
                    .filter(|r| r.frame_offset < index.covered.bytes)
                    .count();
                if covered as u64 == index.covered.records {
                    (index.groups, fit)
                } else {
                    (Vec::new(), Fit::Rebuild)
                }
            }
            _ => (Vec::new(), Fit::Rebuild),
        };
        let mut from = kept.last().map_or(0, |g| g.end as usize);
        // A small last group takes in the records appended since.
        if from < records.len()
            && let Some(last) = kept.last()
            && u64::from(last.bytes) < crate::search_index::GROUP_BYTES
        {
            from = last.first as usize;
            kept.pop();
        }
        let mut units: Vec<Work> = Vec::new();
        // The kept groups that may hold the query, as units of a few MB.
        let mut run: Option<(std::ops::Range<usize>, u64)> = None;
        for g in &kept {
            if self.trigrams.is_empty() || may_hold(&g.filter, &self.trigrams) {
                let (first, end) = (g.first as usize, g.end as usize);
                match &mut run {
                    Some((r, bytes)) if r.end == first && *bytes < self.unit_bytes => {
                        r.end = end;
                        *bytes += u64::from(g.bytes);
                    }
                    _ => {
                        if let Some((r, _)) = run.take() {
                            units.push(Work::Scan(r));
                        }
                        run = Some((first..end, u64::from(g.bytes)));
                    }
                }
            } else {
                job.ruled_out += u64::from(g.entries);
            }
        }
        if let Some((r, _)) = run.take() {
            units.push(Work::Scan(r));
        }
        let indexing = self.building && self.index_dir.is_some() && state.is_some();
        // The records not indexed yet: one group per unit when indexing,
        // units of a few MB otherwise.
        let cut = if indexing {
            crate::search_index::GROUP_BYTES
        } else {
            self.unit_bytes
        };
        let mut start = from;
        let mut bytes = 0u64;
        for (i, r) in records.iter().enumerate().skip(from) {
            bytes += session.content_len(r) as u64;
            if bytes >= cut || i + 1 == records.len() {
                let range = start..i + 1;
                units.push(if indexing {
                    Work::Build(range)
                } else {
                    Work::Scan(range)
                });
                start = i + 1;
                bytes = 0;
            }
        }
        if indexing
            && fit != Fit::Current
            && let Some(state) = state
        {
            let covered = session.report().scan.valid_end;
            let checks = std::fs::File::open(&path)
                .ok()
                .and_then(|mut f| crate::search_index::checks(&mut f, covered));
            if let Some((head_check, tail_check)) = checks {
                job.write = Some(Index {
                    covered: Covered {
                        session: info.id,
                        file: state.file,
                        seen_len: state.len,
                        seen_mtime_ns: state.mtime_ns,
                        bytes: covered,
                        records: records.len() as u64,
                        head_check,
                        tail_check,
                    },
                    groups: kept,
                });
            }
        }
        job.session = Some(std::sync::Arc::new(session));
        let job = std::sync::Arc::new(job);
        if units.is_empty() {
            units.push(Work::Nothing);
        }
        let n = units.len();
        for (k, work) in units.into_iter().enumerate() {
            self.pending
                .push_back((job.clone(), work, k == 0, k + 1 == n));
        }
    }
}

/// The entry's content: borrowed from the mapping, or decompressed into
/// `scratch`.
fn content<'a>(
    session: &'a Session,
    record: &Record,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8]> {
    if let Some(plain) = session.content_plain(record) {
        return Ok(plain);
    }
    let len = session.content_len(record);
    scratch.clear();
    scratch.resize(len, 0);
    session.decompress(record, scratch)?;
    Ok(scratch)
}

/// The first text string of the CBOR item `content` that holds the query,
/// as a snippet and the match's range in it.
fn confirm(content: &[u8], query: &Query) -> Option<(String, (usize, usize))> {
    let mut dec = Decoder::lenient(content);
    while !dec.is_at_end() {
        match dec.next() {
            Ok(Token::Text(text)) => {
                if let Some((start, end)) = query.find(text.as_bytes()) {
                    return Some(snippet(text, start, end));
                }
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// `text` around `start..end` (a match on character boundaries), at most
/// [`SNIPPET_CONTEXT`] characters on each side, on one line.
fn snippet(text: &str, start: usize, end: usize) -> (String, (usize, usize)) {
    let before: Vec<(usize, char)> = text[..start].char_indices().collect();
    let from = before
        .len()
        .checked_sub(SNIPPET_CONTEXT)
        .map_or(0, |i| before[i].0);
    let to = text[end..]
        .char_indices()
        .nth(SNIPPET_CONTEXT)
        .map_or(text.len(), |(i, _)| end + i);
    let mut out = String::with_capacity(to - from + 8);
    if from > 0 {
        out.push('…');
    }
    let flat = |s: &str, out: &mut String| {
        for c in s.chars() {
            out.push(if c.is_control() { ' ' } else { c });
        }
    };
    flat(&text[from..start], &mut out);
    let m0 = out.len();
    flat(&text[start..end], &mut out);
    let m1 = out.len();
    flat(&text[end..to], &mut out);
    if to < text.len() {
        out.push('…');
    }
    (out, (m0, m1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_case() {
        let q = Query::new("flaky test").unwrap();
        assert!(!q.case_sensitive());
        assert_eq!(q.find(b"a Flaky Test here"), Some((2, 12)));
        let q = Query::new("Flaky").unwrap();
        assert!(q.case_sensitive());
        assert_eq!(q.find(b"a flaky one"), None);
        assert_eq!(q.find(b"a Flaky one"), Some((2, 7)));
        assert!(Query::new("").is_err());
    }

    #[test]
    fn ignoring_case_finds_every_variant_and_checks_the_whole_query() {
        let q = Query::new("flaky test").unwrap();
        for hay in ["FLAKY TEST", "fLaKy TeSt", "a flaky test", "flaky testing"] {
            assert!(q.find(hay.as_bytes()).is_some(), "{hay}");
        }
        // A prefix that matches but a tail that does not, then a match.
        assert_eq!(q.find(b"flaky tent, Flaky Test"), Some((12, 22)));
        assert_eq!(q.find(b"flaky tes"), None);
        // Non-letters and non-ASCII in the query.
        let q = Query::new("é-42 x").unwrap();
        assert_eq!(
            q.find("É-42 x".as_bytes()),
            None,
            "only ASCII case is ignored"
        );
        assert!(q.find("é-42 X".as_bytes()).is_some());
        // Short haystacks and queries.
        let q = Query::new("a").unwrap();
        assert_eq!(q.find(b"A"), Some((0, 1)));
        assert_eq!(q.find(b""), None);
    }

    #[test]
    fn snippets_are_cut_on_characters_and_flattened() {
        let text = format!(
            "{}déjà vu\nthe needle\there{}",
            "x".repeat(60),
            "y".repeat(60)
        );
        let q = Query::new("needle").unwrap();
        let (start, end) = q.find(text.as_bytes()).unwrap();
        let (s, (a, b)) = snippet(&text, start, end);
        assert_eq!(&s[a..b], "needle");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("déjà vu the needle here"), "{s}");
        assert!(!s.contains('\n') && !s.contains('\t'));
        // Short texts are whole.
        let (s, r) = snippet("a needle", 2, 8);
        assert_eq!((s.as_str(), r), ("a needle", (2, 8)));
    }

    #[test]
    fn a_match_across_a_cbor_head_is_not_a_hit() {
        // Two text strings "ab" and "c": the bytes hold "b" 0x61 "c", so a
        // query "bac" matches the bytes (0x61 is the head of "c") but no text.
        let mut content = Vec::new();
        smith_codec::Encoder::new(&mut content)
            .array(2)
            .str("ab")
            .str("c");
        let q = Query::new("bac").unwrap();
        assert!(q.find(&content).is_some(), "{content:?}");
        assert_eq!(confirm(&content, &q), None);
        let q = Query::new("ab").unwrap();
        assert_eq!(confirm(&content, &q), Some(("ab".to_owned(), (0, 2))));
    }
}
