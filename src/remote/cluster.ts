/**
 * `sc.remote.connect({ cluster: { worker: ["host:port", ...] } })`: a cluster spec maps job
 * names to their tasks' addresses (TensorFlow's ClusterSpec); connecting opens a session on
 * every task and lists each task's devices as "/job:NAME/task:I/device:cpu:0" among
 * sc.listDevices() (of kind "remote": ops are not placed there one by one; staged functions run
 * there through sc.remote.device). Closing the cluster ends the sessions and unlists the devices.
 */
import { addDevice, removeDevice, REMOTE_KIND } from "../core/device.js";
import { userLocation, ValueError } from "../core/errors.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { isPlainObject } from "../core/objects.js";
import { WorkerConnection } from "./connection.js";
import { positiveLimit, splitAddress } from "./limits.js";
import type { StatsReply } from "./proto.js";

export interface ConnectOptions {
  /** Job name -> the addresses (host:port) of its tasks, task 0 first. */
  cluster: Record<string, string[]>;
  /** The workers' token (`stagecraft worker --token`). */
  token?: string;
  /** TLS: true (the system's CAs) or { ca: PEM } for a worker with its own certificate authority. */
  tls?: boolean | { ca?: string | Uint8Array };
  /** Milliseconds any one call may take (default 30000): then it fails with a RemoteUnavailableError. */
  timeoutMs?: number;
}

const CONNECT_OPTIONS = optionKeys<ConnectOptions>()("cluster", "token", "tls", "timeoutMs");

export const DEFAULT_TIMEOUT_MS = 30_000;

/** Open connections by task prefix ("/job:worker/task:0"). */
const connections = new Map<string, WorkerConnection>();

/** A remote device name split: its task's connection and the device on the worker ("cpu:0"). */
export function remoteTarget(name: string, api: string): { connection: WorkerConnection; device: string; name: string } {
  const m = /^(\/job:[^/]+\/task:\d+)(?:\/device:([a-z]+):(\d+))?$/i.exec(name);
  if (!m) throw new ValueError(`expected a remote device name like "/job:worker/task:0/device:cpu:0", got ${JSON.stringify(name)}`, api);
  const connection = connections.get(m[1]!);
  if (!connection) {
    throw new ValueError(`no connected task ${m[1]}; connected: ${[...connections.keys()].join(", ") || "none"} (sc.remote.connect first)`, api);
  }
  const device = m[2] ? `${m[2].toLowerCase()}:${m[3]}` : "cpu:0";
  if (!connection.devices.includes(device)) throw new ValueError(`task ${m[1]} (${connection.address}) has no device ${device}; it has ${connection.devices.join(", ")}`, api);
  return { connection, device, name: `${m[1]}/device:${device}` };
}

export class Cluster {
  constructor(private readonly tasks: WorkerConnection[]) {}

  /** The remote devices, e.g. "/job:worker/task:0/device:cpu:0". */
  get devices(): string[] {
    return this.tasks.flatMap((c) => c.devices.map((d) => `${c.prefix}/device:${d}`));
  }

  /** What a task's worker holds: for the whole worker and for this client's session (handles, bytes). */
  async stats(task: string): Promise<StatsReply> {
    const loc = userLocation();
    const { connection } = remoteTarget(task, "remote.Cluster.stats");
    return connection.unary("stats", { session: connection.session }, "Stats", loc);
  }

  /** Ends every session (the workers free what they hold for it) and unlists the devices. */
  async close(): Promise<void> {
    await Promise.all(
      this.tasks.map(async (c) => {
        if (connections.get(c.prefix) === c) connections.delete(c.prefix);
        for (const d of c.devices) removeDevice(`${c.prefix}/device:${d}`);
        await c.close();
      }),
    );
  }
}

export async function connect(options: ConnectOptions): Promise<Cluster> {
  const api = "remote.connect";
  checkOptions(api, options, CONNECT_OPTIONS);
  if (!isPlainObject(options?.cluster)) throw new ValueError("options.cluster must map job names to lists of task addresses, e.g. { worker: [\"127.0.0.1:7000\"] }", api);
  const timeoutMs = options.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : positiveLimit(options.timeoutMs, "timeoutMs", api);
  if (options.token !== undefined && typeof options.token !== "string") throw new ValueError("token must be a string", api);
  if (options.tls !== undefined && typeof options.tls !== "boolean") checkOptions(api, options.tls, ["ca"]);
  const tasks: WorkerConnection[] = [];
  for (const [job, addresses] of Object.entries(options.cluster)) {
    if (!/^[a-z_][a-z0-9_-]*$/.test(job)) throw new ValueError(`job name ${JSON.stringify(job)} must be a lower-case identifier`, api);
    if (!Array.isArray(addresses) || addresses.some((a) => typeof a !== "string")) throw new ValueError(`cluster.${job} must be a list of addresses (host:port)`, api);
    addresses.forEach((address, i) => {
      splitAddress(address, api);
      const prefix = `/job:${job}/task:${i}`;
      if (connections.has(prefix)) throw new ValueError(`${prefix} is connected already (${connections.get(prefix)!.address}): close that cluster first`, api);
      tasks.push(new WorkerConnection(address, prefix, { timeoutMs, ...(options.token !== undefined ? { token: options.token } : {}), ...(options.tls !== undefined ? { tls: options.tls } : {}) }));
    });
  }
  const loc = userLocation();
  const opened = await Promise.allSettled(tasks.map((c) => c.open(loc)));
  const failed = opened.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) {
    await Promise.all(tasks.map((c) => c.close()));
    throw failed.reason;
  }
  for (const c of tasks) {
    connections.set(c.prefix, c);
    for (const d of c.devices) addDevice({ name: `${c.prefix}/device:${d}`, kind: REMOTE_KIND, description: `worker ${c.address}, its ${d}` });
  }
  return new Cluster(tasks);
}
