/**
 * Atomic file writes for checkpoints and safetensors files: the bytes go to a temporary file
 * beside the target, which is fsynced and renamed over it (then the folder is fsynced), so a
 * crash leaves the old file or the new one, never a mix.
 *
 * - A target that is a symbolic link is followed: the file it points to is replaced and the link
 *   stays (as a shell's `>` would write through it).
 * - A process killed mid-write leaves its temporary file; the next write to the same target
 *   removes such leftovers of our own naming (`.<name>.tmp-<host>-<pid>-<random>`) when the
 *   writer was on this machine and its process is gone, or when the file was not touched for
 *   an hour (a writer on another machine sharing the folder, or a name from before the host
 *   was part of it).
 * - Failures are CheckpointErrors naming the user's path (not the temporary file), with the
 *   system's error as `cause`.
 */
import { closeSync, fsyncSync, hostname, lstatSync, openSync, path as nodePath, readdirSync, readlinkSync, renameSync, statSync, unlinkSync, writeSync } from "../core/platform/node.js";
import { CheckpointError } from "./errors.js";

/** A temporary file untouched this long is stale whoever wrote it. */
export const STALE_TEMP_MS = 60 * 60 * 1000;

/** Eight hex digits of this machine's name (FNV-1a), so a pid in a temporary file's name is known to be this machine's. */
export const TEMP_HOST_TAG = (() => {
  let h = 0x811c9dc5;
  for (const c of hostname()) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
})();

function describe(x: unknown): string {
  return x === null ? "null" : Array.isArray(x) ? "an array" : typeof x === "object" ? `a ${(x as object).constructor?.name ?? "object"}` : `${typeof x} ${String(x)}`;
}

/**
 * A path argument must be a non-empty string: a number would be a file descriptor to Node's fs
 * (0 is standard input), a Buffer or URL is not what our API documents.
 */
export function checkPath(op: string, path: unknown): asserts path is string {
  if (typeof path !== "string" || path.length === 0) throw new CheckpointError(`the path must be a non-empty string, got ${typeof path === "string" ? "an empty string" : describe(path)}`, { op });
  if (path.includes("\0")) throw new CheckpointError(`the path ${JSON.stringify(path)} contains a NUL character`, { op });
}

/** What went wrong with the file system, in words about the user's file. */
function ioReason(e: unknown, path: string): string {
  const code = (e as { code?: string })?.code;
  const dir = nodePath.dirname(nodePath.resolve(path));
  switch (code) {
    case "ENOENT":
      return `its folder ${dir} does not exist (ENOENT)`;
    case "ENOTDIR":
      return `a part of ${dir} is not a folder (ENOTDIR)`;
    case "EISDIR":
      return `it is a folder (EISDIR)`;
    case "EFBIG":
      return `the file would be larger than this process may write (EFBIG: the file size limit, ulimit -f, or the file system's largest file)`;
    case "ENOSPC":
      return `no space is left on the device (ENOSPC)`;
    case "EDQUOT":
      return `the disk quota is exhausted (EDQUOT)`;
    case "EACCES":
    case "EPERM":
      return `permission denied in ${dir} (${code})`;
    case "EROFS":
      return `the file system is read-only (EROFS)`;
    case "ELOOP":
      return `too many levels of symbolic links (ELOOP)`;
    default:
      return code ? `${code}: ${(e as Error).message}` : String((e as Error)?.message ?? e);
  }
}

/** The file a path names, symbolic links followed (also a dangling one: the file it would create). */
function followLinks(path: string): string {
  let p = nodePath.resolve(path);
  for (let hops = 0; ; hops++) {
    let isLink: boolean;
    try {
      isLink = lstatSync(p).isSymbolicLink();
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return p;
      throw e;
    }
    if (!isLink) return p;
    if (hops === 40) throw Object.assign(new Error("ELOOP"), { code: "ELOOP" });
    p = nodePath.resolve(nodePath.dirname(p), readlinkSync(p));
  }
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as { code?: string }).code === "ESRCH"; // (EPERM: it exists, another user's)
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Removes stale temporary files of ours for the target `base` in `dir` (best effort: never fails the write). */
export function removeStaleTemps(dir: string, base: string, now = Date.now()): string[] {
  const ours = new RegExp(`^\\.${escapeRegExp(base)}\\.tmp-(?:([0-9a-f]{8})-)?(\\d+)-[0-9a-z]+$`);
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = ours.exec(name);
    if (!m) continue;
    const file = nodePath.join(dir, name);
    try {
      const st = lstatSync(file);
      if (!st.isFile()) continue;
      const pid = Number(m[2]);
      const deadHere = m[1] === TEMP_HOST_TAG && pid !== process.pid && processGone(pid);
      if (deadHere || now - st.mtimeMs > STALE_TEMP_MS) {
        unlinkSync(file);
        removed.push(file);
      }
    } catch {
      // (gone meanwhile, or not ours to remove)
    }
  }
  return removed;
}

/** Writes `bytes` to `path` atomically (see the file's comment); `op` names the API in errors. */
export function writeFileAtomic(path: string, bytes: Uint8Array, op = "writeFileAtomic"): void {
  checkPath(op, path);
  if (!(bytes instanceof Uint8Array)) throw new CheckpointError(`the bytes must be a Uint8Array, got ${describe(bytes)}`, { op, path });
  const fail = (e: unknown): never => {
    throw new CheckpointError(`cannot write the file: ${ioReason(e, path)}`, { path, op, cause: e });
  };
  let target: string;
  try {
    target = followLinks(path);
  } catch (e) {
    return fail(e);
  }
  try {
    if (statSync(target).isDirectory()) fail(Object.assign(new Error("EISDIR"), { code: "EISDIR" }));
  } catch (e) {
    if (e instanceof CheckpointError) throw e;
    // (a target that does not exist yet is the usual case)
  }
  const dir = nodePath.dirname(target);
  const base = nodePath.basename(target);
  removeStaleTemps(dir, base);
  const tmp = nodePath.join(dir, `.${base}.tmp-${TEMP_HOST_TAG}-${process.pid}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`);
  const removeTmp = () => {
    try {
      unlinkSync(tmp);
    } catch {
      // (never made, or already gone)
    }
  };
  let fd: number;
  try {
    fd = openSync(tmp, "wx", 0o644);
  } catch (e) {
    return fail(e);
  }
  try {
    // (in pieces of at most 1 MiB: a process killed meanwhile leaves only the temporary file)
    let at = 0;
    while (at < bytes.byteLength) at += writeSync(fd, bytes, at, Math.min(bytes.byteLength - at, 1 << 20));
    fsyncSync(fd);
    closeSync(fd);
  } catch (e) {
    try {
      closeSync(fd);
    } catch {
      // (already closed)
    }
    removeTmp();
    return fail(e);
  }
  try {
    renameSync(tmp, target);
  } catch (e) {
    removeTmp();
    return fail(e);
  }
  try {
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // (some file systems cannot fsync a directory; the rename itself is still atomic)
  }
}
