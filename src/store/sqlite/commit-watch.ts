// "Has anything been committed to the database file since I last looked?", for the memories of a
// process (sessions.ts, groups.ts; freshness.ts asks), for the price of one pread (PRAGMA
// data_version, which starts and ends a read transaction, cost 2.5 times as much and was a sixth of
// the check path: docs/benchmarks.md).
//
// The guarantee the memories keep (contract §2, §3): a change committed by any connection — another
// worker, the clubhouse CLI, the sqlite3 shell — is seen by the very next request in every process.
//
// How. In WAL mode every commit rewrites the WAL-index header at the start of the -shm file, which
// every connection to the database maps (https://www.sqlite.org/walformat.html §2.1). Its first copy,
// 48 bytes, holds iChange (incremented by each commit), mxFrame (the last commit frame of the WAL:
// it only grows within one WAL generation), the salts (changed by every WAL restart), the checksum of
// the last frame, and a checksum over all that. epoch() reads those 48 bytes with one pread and
// compares them with the bytes it saved last: equal means no commit in between; different means
// "maybe", and the epoch moves. Each memory remembers the epoch of its last successful catch-up and
// runs its own exact check (PRAGMA data_version and the deletion log; the group generation) only when
// the epoch moved. The case analysis:
// - A commit that returned before a request arrived wrote the header before returning (SQLite's
//   walIndexWriteHdr runs inside the commit), so the request's pread sees those bytes or later ones,
//   never the saved ones: the memory runs its exact check, which reads the database after the pread.
// - The saved bytes go with the epoch they moved, and the caller's exact check runs after the pread
//   that read them: a commit between that pread and the check is seen by the check, and changes the
//   header again, so the next call also says "maybe" (at worst one exact check too many).
// - A torn read (a writer is copying the header while we read it) differs from the saved bytes
//   wherever it caught new ones: "maybe". If it caught no new byte, that writer's commit has not
//   returned yet and no request can depend on it. A torn header is never saved: only one whose
//   checksum SQLite's way verifies (walIndexTryHdr) and whose version this code knows.
// - Equal bytes after a commit would need iChange to wrap 2^32 commits with mxFrame, the salts and
//   both checksums back to their old values; a recovery (after a writer crashed mid-header) restarts
//   iChange at 1 but rebuilds mxFrame and the salts from the WAL itself, which any commit since
//   changed (a frame appended, or a restart's new salts).
// - Our own commits, a checkpoint's WAL restart, a recovery: the header changes without another
//   connection's commit. "Maybe": one exact check too many, never one too few.
// - No -shm to read: a :memory: database, a journal mode other than WAL (PRAGMA journal_mode = WAL
//   can be refused), a missing file, a header this code does not recognise, a failed read. Then
//   every call says "maybe" and the memories run their exact checks on every request.
// - The -shm file cannot be re-initialised under us: SQLite does that only when no connection holds
//   its "dead man switch" lock, and ours does while it is open. That lock is a POSIX record lock,
//   and closing ANY descriptor of a file drops every lock the process holds on it (SQLite's
//   "How To Corrupt" §2.2). So the descriptor read here is opened once per -shm file per process,
//   shared by every store on that file, and closed only after the last of their connections is. (A
//   connection this process opens on the file outside the stores, as some tests do, must be closed
//   before the last store is.)
// - pread and SQLite's shared mapping of the file see the same pages: the page cache is one (Linux,
//   macOS); a system where it is not would need mmap, which node does not offer.
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { endianness } from 'node:os';
import type { DatabaseSync } from 'node:sqlite';

/** The first copy of the WAL-index header (walformat.html §2.1). */
export const WAL_INDEX_HEADER_BYTES = 48;
/** iVersion of the only WAL-index format there has been since SQLite 3.7.0. */
const WAL_INDEX_VERSION = 3007000;

/** Tells a memory whether it must catch up with the database file before answering. */
export interface CommitWatch {
  /**
   * A number that moves whenever a commit may have happened on the file since the previous call, by
   * any connection this one included. A caller that caught up (read what it needs from the database)
   * after a call that returned `e` may answer from memory while later calls still return `e`.
   */
  epoch(): number;
  /** True when epoch() reads the -shm file; false when it moves on every call. */
  readonly shared: boolean;
  /** Releases the -shm descriptor: call after the connection is closed. */
  close(): void;
}

/** A watch that knows nothing: every call may follow a commit. */
export function unwatched(): CommitWatch {
  let epoch = 0;
  return { epoch: () => ++epoch, shared: false, close: () => undefined };
}

const readU32 =
  endianness() === 'LE'
    ? (b: Buffer, at: number) => b.readUInt32LE(at)
    : (b: Buffer, at: number) => b.readUInt32BE(at);

/**
 * True when `header` is a whole WAL-index header as SQLite writes it: a known version, initialised,
 * and its checksum (SQLite's walChecksumBytes over the first 40 bytes, native byte order) right.
 */
export function isCompleteHeader(header: Buffer): boolean {
  if (header.length < WAL_INDEX_HEADER_BYTES) return false;
  if (readU32(header, 0) !== WAL_INDEX_VERSION || header[12] !== 1) return false;
  let s1 = 0;
  let s2 = 0;
  for (let at = 0; at < 40; at += 8) {
    s1 = (s1 + readU32(header, at) + s2) >>> 0;
    s2 = (s2 + readU32(header, at + 4) + s1) >>> 0;
  }
  return s1 === readU32(header, 40) && s2 === readU32(header, 44);
}

interface SharedFile {
  readonly fd: number;
  users: number;
  /** Descriptors a race made twice for this file: closed with it, never before. */
  readonly spare: number[];
}
// Keyed by device and inode: two paths to one file share one descriptor.
const OPEN_FILES = new Map<string, SharedFile>();

const inodeKey = (stat: { dev: bigint; ino: bigint }) => `${stat.dev}:${stat.ino}`;

function acquire(path: string): { key: string; fd: number } | null {
  let key: string;
  try {
    key = inodeKey(statSync(path, { bigint: true }));
  } catch {
    return null;
  }
  let file = OPEN_FILES.get(key);
  if (file === undefined) {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return null;
    }
    // The file opened may not be the one stat saw (replaced in between): key it by what it is.
    key = inodeKey(fstatSync(fd, { bigint: true }));
    file = OPEN_FILES.get(key);
    if (file === undefined) {
      file = { fd, users: 0, spare: [] };
      OPEN_FILES.set(key, file);
    } else {
      file.spare.push(fd);
    }
  }
  file.users++;
  return { key, fd: file.fd };
}

function release(key: string): void {
  const file = OPEN_FILES.get(key);
  if (file === undefined || --file.users > 0) return;
  OPEN_FILES.delete(key);
  for (const fd of [file.fd, ...file.spare]) closeSync(fd);
}

/** How many -shm descriptors this process holds (tests). */
export const openShmFiles = (): number => OPEN_FILES.size;

/** The -shm file of `db`'s main database when `db` is in WAL mode on a file; else null. */
function shmPathOf(db: DatabaseSync): string | null {
  const location = db.location();
  if (location === null || location === '') return null;
  const mode = db.prepare('PRAGMA journal_mode').get()?.['journal_mode'];
  if (mode !== 'wal') return null;
  // A read transaction makes SQLite initialise the WAL index of a database nobody has read yet.
  db.prepare('SELECT count(*) FROM sqlite_schema').get();
  return `${location}-shm`;
}

/**
 * The watch of `db`'s file: one pread of the WAL-index header per call, or unwatched() when the file
 * cannot be watched this way. close() it after closing `db`.
 */
export function watchCommits(db: DatabaseSync): CommitWatch {
  const path = shmPathOf(db);
  const file = path === null ? null : acquire(path);
  if (file === null) return unwatched();
  const read = (into: Buffer) => {
    try {
      return readSync(file.fd, into, 0, WAL_INDEX_HEADER_BYTES, 0) === WAL_INDEX_HEADER_BYTES;
    } catch {
      return false;
    }
  };
  // A header this code cannot read now (a few tries: one may catch a writer mid-copy) it will not
  // read later: watch nothing rather than pay a read that can only say "maybe".
  const first = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  let readable = false;
  for (let attempt = 0; attempt < 5 && !readable; attempt++)
    readable = read(first) && isCompleteHeader(first);
  if (!readable) {
    release(file.key);
    return unwatched();
  }
  return headerWatch(read, () => release(file.key));
}

/**
 * The protocol of watchCommits over any way of reading the header (`read` fills its argument and says
 * whether it could): the epoch stays while the bytes read equal the last complete header saved.
 */
export function headerWatch(read: (into: Buffer) => boolean, release: () => void): CommitWatch {
  const header = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  const saved = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  let valid = false;
  let epoch = 0;
  let open = true;
  return {
    epoch() {
      if (!open || !read(header)) {
        valid = false;
        return ++epoch;
      }
      if (valid && header.equals(saved)) return epoch;
      // Saved only when whole: a torn header could, in theory, equal a later one.
      valid = isCompleteHeader(header);
      if (valid) header.copy(saved);
      return ++epoch;
    },
    shared: true,
    close() {
      if (!open) return;
      open = false;
      release();
    },
  };
}
