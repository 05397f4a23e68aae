/**
 * `stagecraft worker`: starts a worker server (src/remote/worker.ts) and prints the address it
 * listens on ("stagecraft worker listening on HOST:PORT", on stdout, so a parent process that
 * asked for port 0 can read the port), then serves until SIGINT or SIGTERM.
 */
import { readFileSync } from "node:fs";
import { startWorker, type WorkerOptions } from "../remote/worker.js";
import { StagecraftError } from "../core/errors.js";

export const WORKER_USAGE = `usage: stagecraft worker [options]

  --listen HOST:PORT         where to listen (default 127.0.0.1:0: loopback, a free port). An address
                             that is not loopback needs --token or TLS.
  --token T                  a secret every call must carry (or the STAGECRAFT_WORKER_TOKEN variable)
  --tls-cert F --tls-key F   serve TLS with this certificate chain and private key (PEM files)
  --max-message-bytes N      largest gRPC message received or sent (default 16 MiB; tensors larger
                             travel in chunks)
  --max-tensor-elements N    largest tensor, in elements (default 2^28)
  --max-tensor-bytes N       largest tensor, in bytes (default 2^30)
  --max-session-bytes N      bytes one client session may hold (default 2^32)
  --session-timeout-ms N     a session idle this long is freed with its tensors (default 60000)
  --max-calls-in-flight N    calls of one session waiting for inputs or uploading at once (default 256)
  --input-wait-ms N          longest a call waits for inputs an earlier call makes (default 60000)`;

const NUMERIC: Record<string, keyof WorkerOptions> = {
  "--max-message-bytes": "maxMessageBytes",
  "--max-tensor-elements": "maxTensorElements",
  "--max-tensor-bytes": "maxTensorBytes",
  "--max-session-bytes": "maxSessionBytes",
  "--session-timeout-ms": "sessionTimeoutMs",
  "--max-calls-in-flight": "maxCallsInFlight",
  "--input-wait-ms": "inputWaitMs",
};

export async function workerMain(argv: string[]): Promise<number> {
  const options: WorkerOptions = {};
  const envToken = process.env.STAGECRAFT_WORKER_TOKEN;
  if (envToken) options.token = envToken;
  let certFile: string | undefined;
  let keyFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      return v;
    };
    try {
      if (a === "--help") {
        console.log(WORKER_USAGE);
        return 0;
      } else if (a === "--listen") options.listen = value();
      else if (a === "--token") options.token = value();
      else if (a === "--tls-cert") certFile = value();
      else if (a === "--tls-key") keyFile = value();
      else if (a in NUMERIC) {
        const v = value();
        const n = Number(v);
        if (!/^\d+$/.test(v)) throw new UsageError(`${a} takes a positive integer, got ${JSON.stringify(v)}`);
        (options as Record<string, number>)[NUMERIC[a]!] = n;
      } else throw new UsageError(`unexpected argument ${JSON.stringify(a)}`);
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      console.error(`${e.message}\n\n${WORKER_USAGE}`);
      return 2;
    }
  }
  try {
    if (certFile !== undefined) options.tlsCert = readFileSync(certFile);
    if (keyFile !== undefined) options.tlsKey = readFileSync(keyFile);
    const worker = await startWorker(options);
    if (options.token !== undefined && options.tlsCert === undefined && !/^(127\.|localhost|\[::1\])/.test(worker.address)) {
      console.error("stagecraft worker: warning: the token travels unencrypted without TLS (--tls-cert, --tls-key)");
    }
    console.log(`stagecraft worker listening on ${worker.address}`);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    await worker.close();
    return 0;
  } catch (e) {
    // (a refused option, an unreadable file, an address in use: said in one line, no stack)
    if (!(e instanceof Error)) throw e;
    console.error(`stagecraft worker: ${e instanceof StagecraftError ? "" : `${e.name}: `}${e.message}`);
    return 2;
  }
}

class UsageError extends Error {}
