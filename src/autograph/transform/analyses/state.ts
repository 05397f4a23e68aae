/**
 * The state of each construct that may be staged (`if`, `while`, `for...of`): the variables it
 * modifies (assignments, updates, compound assignments, `x[i] = v` / `x.a = v` modify `x`)
 * that are defined outside it and live after it (for an `if`, also those read by a branch: a
 * staged `if` restores them between tracing its branches; for a loop, those live at its head),
 * or captured by a closure. Annotated on the construct (Anno.STATE) for the converters, which
 * pass it as getState/setState/names (converters/state.ts).
 */
import * as t from "../build.js";
import { childNodes } from "../ast.js";
import { Anno, getAnno, hasAnno, setAnno, type StateInfo } from "../anno.js";
import { isThrowOnly } from "./exits.js";
import type { ScopeInfo, VarKey } from "./scope.js";
import { activityOf, capturedKeys } from "./activity.js";
import { computeLiveness } from "./liveness.js";

export type { StateInfo };

const NON_ASSIGNABLE_FREE = new Set(["arguments", "eval", "undefined", "NaN", "Infinity", "globalThis"]);
export const ASSIGNABLE_KINDS: ReadonlySet<string> = new Set(["var", "let", "param", "hoisted"]);

/** Annotates every `if` and loop of a (lowered) function body with its state. */
export function annotateStates(body: t.BlockStatement, scopes: ScopeInfo): void {
  const captured = capturedKeys(body, scopes);
  const { liveOut, liveInBranches, liveHead } = computeLiveness(body.body, scopes, (n) => getAnno(n, Anno.FOR_OF_EXIT) ?? []);
  const visit = (n: t.Node): void => {
    if (t.isFunction(n) || t.isClass(n)) return;
    const isIf = n.type === "IfStatement" && !hasAnno(n, Anno.NATIVE_JUMP) && !isThrowOnly(n);
    const isLoop = n.type === "WhileStatement" || (n.type === "ForOfStatement" && !n.await);
    if (isIf || isLoop) {
      // An if carries what it modifies that is live after it, or read by a branch (a staged
      // if restores those between tracing its branches); a loop, what is live at its head.
      const live = isIf ? new Set([...(liveOut.get(n) ?? []), ...(liveInBranches.get(n) ?? [])]) : (liveHead.get(n) ?? new Set<VarKey>());
      const act = activityOf(n, scopes);
      const start = scopes.order(n);
      const end = scopes.end(n);
      const keys: VarKey[] = [];
      for (const k of new Set([...act.assigned, ...act.memberWritten])) {
        if (scopes.isLocal(k)) {
          const d = scopes.declOrder(k);
          if (d >= start && d <= end) continue; // declared inside the construct
          const kind = scopes.kindOf(k);
          if (d > end && kind !== "var" && kind !== "hoisted" && kind !== "param") continue; // declared after: in its TDZ here
          if (!live.has(k) && !captured.has(k)) continue;
        } else if (NON_ASSIGNABLE_FREE.has(scopes.nameOf(k))) continue;
        keys.push(k);
      }
      keys.sort((a, b) => scopes.declOrder(a) - scopes.declOrder(b) || scopes.nameOf(a).localeCompare(scopes.nameOf(b)));
      setAnno(n, Anno.STATE, {
        names: keys.map((k) => scopes.nameOf(k)),
        assignable: keys.map((k) => (scopes.isLocal(k) ? ASSIGNABLE_KINDS.has(scopes.kindOf(k)) : act.assigned.has(k))),
      });
    }
    for (const c of childNodes(n)) visit(c);
  };
  visit(body);
}
