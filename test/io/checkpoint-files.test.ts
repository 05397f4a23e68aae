/** Checkpoint and safetensors files: I/O failures, argument types, symbolic links, stale temporary files, hostile headers. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { TEMP_HOST_TAG } from "../../src/io/atomic-write.js";

const { io } = sc;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dir = mkdtempSync(path.join(os.tmpdir(), "stagecraft-files-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
const model = () => ({ w: sc.variable(sc.tensor([1, 2, 3])) });
/** A CheckpointError whose message matches and names `file`, with no mention of a temporary file. */
const namesFile = (file: string, re: RegExp) => (e: unknown) =>
  e instanceof io.CheckpointError && e.path === file && e.message.includes(file) && re.test(e.message) && !/\.tmp-/.test(e.message);

test("save I/O failures are CheckpointErrors naming the user's path: missing folder, a folder, the file size limit", () => {
  const missing = path.join(dir, "no-such-folder", "m.safetensors");
  assert.throws(() => io.save(model(), missing), namesFile(missing, /cannot write the file: its folder .*no-such-folder does not exist \(ENOENT\)/));
  const folder = path.join(dir, "a-folder");
  mkdirSync(folder);
  assert.throws(() => io.save(model(), folder), namesFile(folder, /it is a folder \(EISDIR\)/));
  assert.throws(() => io.writeSafetensors(folder, { a: sc.scalar(1) }), namesFile(folder, /writeSafetensors: .*EISDIR/));
  // A child whose file size limit (ulimit -f, 1 KiB blocks) is below the checkpoint's size.
  const big = path.join(dir, "big.safetensors");
  const r = spawnSync("bash", ["-c", `ulimit -f 8 && exec "${process.execPath}" --import tsx -e '
    import * as sc from ${JSON.stringify(path.join(ROOT, "src/api/index.ts"))};
    try { sc.io.save({ w: sc.variable(sc.zeros([64, 1024])) }, ${JSON.stringify(big)}); console.log("saved"); }
    catch (e) { console.log(e.constructor.name, e.message); }'`], { cwd: ROOT, encoding: "utf8" });
  assert.match(r.stdout, /^CheckpointError .*big\.safetensors: cannot write the file: the file would be larger than this process may write \(EFBIG/, r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /\.tmp-/);
  assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".big")), [], "the temporary file is removed");
});

test("paths must be strings: restore(obj, 0) does not read standard input; argument types are checked", () => {
  const m = model();
  for (const bad of [0, 1, null, undefined, Buffer.from("x"), new URL("file:///tmp/x"), ""]) {
    assert.throws(() => io.restore(m, bad as never), (e: unknown) => e instanceof io.CheckpointError && /restore: the path must be a non-empty string/.test(e.message), String(bad));
    assert.throws(() => io.save(m, bad as never), (e: unknown) => e instanceof io.CheckpointError && /save: the path must be a non-empty string/.test(e.message), String(bad));
    assert.throws(() => io.readSafetensors(bad as never), (e: unknown) => e instanceof io.CheckpointError && /readSafetensors: the path/.test(e.message), String(bad));
  }
  assert.throws(() => io.save(m, "a\0b"), /contains a NUL character/);
  assert.throws(() => io.decodeSafetensors("not bytes" as never), (e: unknown) => e instanceof io.CheckpointError && /decodeSafetensors: takes the file's bytes \(a Uint8Array or Buffer\), got the string "not bytes"/.test(e.message));
  assert.throws(() => io.decodeSafetensors([1, 2, 3] as never), (e: unknown) => e instanceof io.CheckpointError && /got an array/.test(e.message));
  const file = path.join(dir, "types.safetensors");
  assert.throws(() => io.writeSafetensors(file, [sc.scalar(1)] as never), (e: unknown) => e instanceof io.CheckpointError && /writeSafetensors: .*takes a Map or an object from names to tensors, got an array/.test(e.message));
  assert.throws(() => io.writeSafetensors(file, { a: [1, 2] } as never), (e: unknown) => e instanceof io.CheckpointError && /entry "a": the value of a tensor entry must be a Tensor, got an array/.test(e.message));
  assert.throws(() => io.writeSafetensors(file, { a: sc.scalar(1) }, { n: 3 } as never), (e: unknown) => e instanceof io.CheckpointError && /metadata "n" must be a string, got number 3/.test(e.message));
  assert.throws(() => io.encodeSafetensors(new Map([[1, sc.scalar(1)]]) as never), (e: unknown) => e instanceof io.CheckpointError && /tensor names must be strings, got number 1/.test(e.message));
});

test("safetensors dtypes and names are looked up as own keys: \"__proto__\" is neither a dtype nor lost as a name", () => {
  const header = (h: object) => {
    const json = Buffer.from(JSON.stringify(h));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    return Buffer.concat([len, json, Buffer.alloc(4)]);
  };
  for (const dtype of ["__proto__", "toString", "constructor"]) {
    assert.throws(() => io.decodeSafetensors(header({ t: { dtype, shape: [1], data_offsets: [0, 4] } })), (e: unknown) => e instanceof io.CheckpointError && new RegExp(`entry "t": unsupported dtype "${dtype}"`).test(e.message), dtype);
  }
  // A tensor and a metadata key named "__proto__" round-trip as own entries.
  const bytes = io.encodeSafetensors(new Map([["__proto__", sc.tensor([5, 6])]]), JSON.parse('{"__proto__": "m"}') as Record<string, string>);
  const back = io.decodeSafetensors(bytes);
  assert.deepEqual([...back.tensors.keys()], ["__proto__"]);
  assert.deepEqual(Array.from(back.tensors.get("__proto__")!.tensor.dataSync()), [5, 6]);
  assert.ok(Object.hasOwn(back.metadata, "__proto__") && back.metadata["__proto__"] === "m");
  // (the file written by Python's safetensors still reads)
  const real = io.readSafetensors(path.join(ROOT, "test/fixtures/safetensors/small.safetensors"));
  assert.deepEqual(real.metadata, { framework: "pt" });
});

test("saving to a symbolic link writes the file it points to and keeps the link (also a dangling one)", () => {
  const target = path.join(dir, "real.safetensors");
  const link = path.join(dir, "link.safetensors");
  writeFileSync(target, "old");
  symlinkSync("real.safetensors", link);
  io.save(model(), link);
  assert.ok(lstatSync(link).isSymbolicLink(), "the link is still a link");
  assert.equal(readlinkSync(link), "real.safetensors");
  const m = { w: sc.variable(sc.zeros([3])) };
  io.restore(m, target).assertConsumed();
  assert.deepEqual(Array.from(m.w.dataSync()), [1, 2, 3]);
  // A dangling link: the file it names is created.
  const dangling = path.join(dir, "dangling.safetensors");
  symlinkSync(path.join(dir, "made-by-save.safetensors"), dangling);
  io.save(model(), dangling);
  assert.ok(lstatSync(dangling).isSymbolicLink());
  assert.ok(lstatSync(path.join(dir, "made-by-save.safetensors")).isFile());
  // A loop of links is a CheckpointError, not a hang.
  const loop = path.join(dir, "loop.safetensors");
  symlinkSync("loop.safetensors", loop);
  assert.throws(() => io.save(model(), loop), namesFile(loop, /too many levels of symbolic links/));
});

test("the next save removes stale temporary files of ours (writer gone, or untouched for an hour), and nothing else", () => {
  const file = path.join(dir, "stale.safetensors");
  io.save(model(), file);
  // A writer on this machine that is gone: find a pid that is not running.
  const dead = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
  const deadPid = Number(dead.stdout.trim());
  const host = TEMP_HOST_TAG;
  const names = {
    deadWriter: `.stale.safetensors.tmp-${host}-${deadPid}-abc123`,
    liveWriter: `.stale.safetensors.tmp-${host}-${process.pid}-abc123`,
    otherHostOld: `.stale.safetensors.tmp-0badc0de-${deadPid}-abc123`,
    otherHostNew: `.stale.safetensors.tmp-0badc0de-${deadPid}-def456`,
    oldNaming: `.stale.safetensors.tmp-${deadPid}-xyz789`,
    otherTarget: `.other.safetensors.tmp-${host}-${deadPid}-abc123`,
    notOurs: `.stale.safetensors.tmp-editor-swap`,
  };
  for (const n of Object.values(names)) writeFileSync(path.join(dir, n), "partial");
  const hourAgo = new Date(Date.now() - 2 * 3600 * 1000);
  utimesSync(path.join(dir, names.otherHostOld), hourAgo, hourAgo);
  utimesSync(path.join(dir, names.oldNaming), hourAgo, hourAgo);
  io.save(model(), file);
  const left = new Set(readdirSync(dir));
  assert.deepEqual(
    Object.entries(names).filter(([, n]) => left.has(n)).map(([k]) => k),
    ["liveWriter", "otherHostNew", "otherTarget", "notOurs"],
  );
  assert.deepEqual(Array.from(io.readSafetensors(file).tensors.get("w")!.tensor.dataSync()), [1, 2, 3]);
});
