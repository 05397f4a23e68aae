/** A worker's limits and their defaults (no Node module here: the browser build's stub exports them too). */
export interface WorkerLimits {
  /** Bytes of any one gRPC message, received or sent (larger tensors travel in chunks). */
  maxMessageBytes: number;
  /** Elements of any one tensor a client sends or a function makes (static shapes checked at registration). */
  maxTensorElements: number;
  /** Bytes of any one tensor. */
  maxTensorBytes: number;
  /** Bytes of all the tensors one session holds: handles, variables and captured constants. */
  maxSessionBytes: number;
  /** Milliseconds a session lives without a call or keep-alive: then its handles are freed. */
  sessionTimeoutMs: number;
  /**
   * Calls of one session in flight at once that hold memory while they wait: calls waiting for
   * inputs an earlier call makes, and uploads under way. One more is refused (RESOURCE_EXHAUSTED).
   */
  maxCallsInFlight: number;
  /** Milliseconds a call waits for inputs an earlier call makes, whatever its deadline (none included). */
  inputWaitMs: number;
}

export const DEFAULT_WORKER_LIMITS: WorkerLimits = {
  maxMessageBytes: 16 * 2 ** 20,
  maxTensorElements: 2 ** 28,
  maxTensorBytes: 2 ** 30,
  maxSessionBytes: 2 ** 32,
  sessionTimeoutMs: 60_000,
  maxCallsInFlight: 256,
  inputWaitMs: 60_000,
};

