// Makes a software Vulkan driver (Mesa's lavapipe) usable by Dawn (the `webgpu` package) without a
// system install, so the WebGPU tests run on machines without a GPU. Debian packages are fetched with
// `apt-get download` into a git-ignored cache (.cache/lavapipe/) and unpacked there with `dpkg -x`.
//
// Debian 12's own Mesa (22.3) is refused by Dawn ("shaderUniform*ArrayDynamicIndexing required"), so on
// bookworm the driver comes from bookworm-backports (Mesa 25); newer releases use their own suite.
//
// Usage:  node scripts/lavapipe.mjs          prints the environment as shell exports:
//         eval "$(node scripts/lavapipe.mjs)"  then run any test file directly.
// As a module: `lavapipeEnv()` returns { env } or { reason } (why it could not be set up).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const DEFAULT_CACHE = join(ROOT, ".cache", "lavapipe");
const LIB_DIR = "usr/lib/x86_64-linux-gnu";

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120_000, ...opts });
}

function has(cmd) {
  try {
    run("sh", ["-c", `command -v ${cmd}`]);
    return true;
  } catch {
    return false;
  }
}

function osRelease() {
  try {
    const text = readFileSync("/etc/os-release", "utf8");
    const get = (k) => text.match(new RegExp(`^${k}="?([^"\\n]*)"?`, "m"))?.[1];
    return { id: get("ID"), codename: get("VERSION_CODENAME") };
  } catch {
    return {};
  }
}

/** The first Debian/Ubuntu mirror the system's apt configuration names. */
function mirror() {
  const texts = [];
  for (const f of ["/etc/apt/sources.list", ...listDir("/etc/apt/sources.list.d").map((n) => join("/etc/apt/sources.list.d", n))]) {
    if (/\.(list|sources)$/.test(f) && existsSync(f)) texts.push(readFileSync(f, "utf8"));
  }
  for (const t of texts) {
    const m = t.match(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)/m) ?? t.match(/^URIs:\s*(\S+)/m);
    if (m && !/security/.test(m[1])) return m[1];
  }
  return null;
}

function listDir(d) {
  try {
    return readdirSync(d);
  } catch {
    return [];
  }
}

/** Whether an installed package satisfies `name (op version)`; false when not installed. */
function installedSatisfies(dep) {
  const m = dep.trim().match(/^([a-z0-9.+-]+)(?::\w+)?(?:\s*\((\S+)\s+([^)]+)\))?/);
  if (!m) return true;
  const [, name, op, version] = m;
  let status;
  try {
    status = run("dpkg-query", ["-W", "-f=${Status}|${Version}", name]);
  } catch {
    return false;
  }
  const [state, installed] = status.split("|");
  if (!state.includes("installed") || state.includes("not-installed")) return false;
  if (!op) return true;
  try {
    run("dpkg", ["--compare-versions", installed, { ">=": "ge", "<=": "le", ">>": "gt", "<<": "lt", "=": "eq" }[op] ?? "ge", version]);
    return true;
  } catch {
    return false;
  }
}

/** Package names of a .deb's Depends that this system lacks (alternatives: the first). */
function missingDeps(deb) {
  const depends = run("dpkg-deb", ["-f", deb, "Depends"]).trim();
  if (!depends) return [];
  return depends
    .split(",")
    .map((d) => d.split("|")[0].trim())
    .filter((d) => !installedSatisfies(d))
    .map((d) => d.match(/^[a-z0-9.+-]+/)[0]);
}

function setUp(cache) {
  if (process.platform !== "linux" || process.arch !== "x64") return `lavapipe setup supports linux-x64 only (this is ${process.platform}-${process.arch})`;
  if (!has("apt-get") || !has("dpkg-deb")) return "lavapipe setup needs apt-get and dpkg (a Debian or Ubuntu system)";
  const { id, codename } = osRelease();
  if (!codename) return "lavapipe setup could not read VERSION_CODENAME from /etc/os-release";
  const uri = mirror();
  if (!uri) return "lavapipe setup found no apt mirror in /etc/apt/sources.list(.d)";
  // Mesa >= 24 is needed; Debian 12 has it only in backports.
  const driverSuite = id === "debian" && codename === "bookworm" ? "bookworm-backports" : codename;
  const components = id === "ubuntu" ? "main universe" : "main";
  rmSync(cache, { recursive: true, force: true });
  const debs = join(cache, "debs");
  const root = join(cache, "root");
  mkdirSync(join(cache, "lists", "partial"), { recursive: true });
  mkdirSync(debs, { recursive: true });
  mkdirSync(root, { recursive: true });
  const suites = driverSuite === codename ? [codename] : [codename, driverSuite];
  writeFileSync(join(cache, "sources.list"), suites.map((s) => `deb ${uri} ${s} ${components}\n`).join(""));
  const o = [
    `-oDir::Etc::SourceList=${join(cache, "sources.list")}`,
    "-oDir::Etc::SourceParts=/dev/null",
    `-oDir::State::Lists=${join(cache, "lists")}`,
    `-oDir::Cache=${join(cache, "apt-cache")}`,
    "-oAPT::Sandbox::User=root",
    "-oAcquire::Retries=1",
    "-oAcquire::http::Timeout=20",
  ];
  mkdirSync(join(cache, "apt-cache", "archives", "partial"), { recursive: true });
  try {
    run("apt-get", [...o, "update"]);
  } catch (e) {
    return `lavapipe setup: apt-get update failed (no network?): ${firstLine(e)}`;
  }
  // Prefer the driver suite's version of each package (newer libdrm for Mesa 25), else the release's.
  const download = (name) => {
    try {
      run("apt-get", [...o, "download", `${name}/${driverSuite}`], { cwd: debs });
    } catch {
      run("apt-get", [...o, "download", name], { cwd: debs });
    }
  };
  try {
    download("mesa-vulkan-drivers");
    const mesa = join(debs, listDir(debs).find((f) => f.startsWith("mesa-vulkan-drivers_")));
    const wanted = new Set(missingDeps(mesa));
    // One more level: what the missing packages need and the system lacks (e.g. a newer LLVM's deps).
    for (const name of [...wanted]) {
      download(name);
      const f = listDir(debs).find((x) => x.startsWith(`${name}_`));
      if (f) for (const d of missingDeps(join(debs, f))) if (!wanted.has(d)) (wanted.add(d), download(d));
    }
  } catch (e) {
    return `lavapipe setup: apt-get download failed: ${firstLine(e)}`;
  }
  for (const f of listDir(debs)) if (f.endsWith(".deb")) run("dpkg-deb", ["-x", join(debs, f), root]);
  const icdDir = join(root, "usr/share/vulkan/icd.d");
  const icd = listDir(icdDir).find((f) => /^lvp_icd.*\.json$/.test(f));
  if (!icd) return "lavapipe setup: the mesa-vulkan-drivers package has no lvp_icd json";
  const lib = join(root, LIB_DIR);
  const text = readFileSync(join(icdDir, icd), "utf8").replace(/"library_path":\s*"[^"]*"/, `"library_path": "${join(lib, "libvulkan_lvp.so")}"`);
  writeFileSync(join(cache, "lvp_icd.json"), text);
  const unresolved = run("ldd", [join(lib, "libvulkan_lvp.so")], { env: { ...process.env, LD_LIBRARY_PATH: lib } })
    .split("\n")
    .filter((l) => l.includes("not found"));
  if (unresolved.length > 0) return `lavapipe setup: libvulkan_lvp.so still lacks ${unresolved.map((l) => l.trim().split(" ")[0]).join(", ")}`;
  return null;
}

function firstLine(e) {
  const s = String(e?.stderr || e?.message || e).trim();
  return s.split("\n").find((l) => l.trim()) ?? s;
}

/** { env } with VK_ICD_FILENAMES / VK_DRIVER_FILES / LD_LIBRARY_PATH, or { reason } when it cannot be set up. */
export function lavapipeEnv(cache = DEFAULT_CACHE) {
  const icd = join(cache, "lvp_icd.json");
  if (!existsSync(icd)) {
    let reason;
    try {
      reason = setUp(cache);
    } catch (e) {
      reason = `lavapipe setup failed: ${firstLine(e)}`;
    }
    if (reason) {
      rmSync(icd, { force: true });
      return { reason };
    }
  }
  const lib = join(cache, "root", LIB_DIR);
  const ld = process.env.LD_LIBRARY_PATH ? `${lib}:${process.env.LD_LIBRARY_PATH}` : lib;
  return { env: { VK_ICD_FILENAMES: icd, VK_DRIVER_FILES: icd, LD_LIBRARY_PATH: ld } };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = lavapipeEnv(process.argv[2] ? resolve(process.argv[2]) : DEFAULT_CACHE);
  if (r.reason) {
    console.error(r.reason);
    console.log(`echo ${JSON.stringify(r.reason)} >&2`);
  } else {
    for (const [k, v] of Object.entries(r.env)) console.log(`export ${k}='${v}'`);
  }
}
