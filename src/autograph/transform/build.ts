/**
 * @babel/types with fast builders for the nodes the transform makes most. Babel's builders
 * validate every field (microseconds per node); these build the same plain objects directly
 * (the inputs are the transform's own, already valid). Everything else is Babel's.
 *
 * Babel's types are re-exported as types only; the functions of @babel/types the transform calls
 * are listed below, each forwarding to the package loaded at its first call (babel.ts: loading
 * Babel is left to the first conversion). A function missing from the list is a type error where
 * it is called, not a silent undefined.
 */
import type * as T from "@babel/types";
import { babelTypes } from "./babel.js";

export type * from "@babel/types";

type Types = typeof T;
/** A function of @babel/types, called through the package loaded at first use. */
function lazy<K extends keyof Types>(name: K): Types[K] {
  let f: ((...a: unknown[]) => unknown) | undefined;
  return ((...a: unknown[]) => (f ??= babelTypes()[name] as unknown as (...a: unknown[]) => unknown)(...a)) as unknown as Types[K];
}

/** `VISITOR_KEYS[type]`: the child keys Babel visits for a node type. */
export function visitorKeys(type: string): readonly string[] | undefined {
  return babelTypes().VISITOR_KEYS[type];
}

export const cloneNode = lazy("cloneNode");
export const isReferenced = lazy("isReferenced");
export const isFunction = lazy("isFunction");
export const isClass = lazy("isClass");
export const isLoop = lazy("isLoop");
export const isLiteral = lazy("isLiteral");
export const isExpression = lazy("isExpression");
export const isFor = lazy("isFor");
// (Babel's builders of the nodes the transform makes less often: these validate their fields)
export const breakStatement = lazy("breakStatement");
export const catchClause = lazy("catchClause");
export const classExpression = lazy("classExpression");
export const conditionalExpression = lazy("conditionalExpression");
export const continueStatement = lazy("continueStatement");
export const emptyStatement = lazy("emptyStatement");
export const forInStatement = lazy("forInStatement");
export const forOfStatement = lazy("forOfStatement");
export const functionDeclaration = lazy("functionDeclaration");
export const functionExpression = lazy("functionExpression");
export const importDeclaration = lazy("importDeclaration");
export const importSpecifier = lazy("importSpecifier");
export const labeledStatement = lazy("labeledStatement");
export const newExpression = lazy("newExpression");
export const objectExpression = lazy("objectExpression");
export const objectProperty = lazy("objectProperty");
export const staticBlock = lazy("staticBlock");
const superNode = lazy("super");
export { superNode as super };
export const switchCase = lazy("switchCase");
export const switchStatement = lazy("switchStatement");
export const thisExpression = lazy("thisExpression");
export const throwStatement = lazy("throwStatement");
export const tryStatement = lazy("tryStatement");
export const updateExpression = lazy("updateExpression");

type Expr = T.Expression;

export function identifier(name: string): T.Identifier {
  return { type: "Identifier", name } as T.Identifier;
}

export function memberExpression(object: Expr | T.Super, property: Expr | T.Identifier | T.PrivateName, computed = false, optional: boolean | null = null): T.MemberExpression {
  return { type: "MemberExpression", object, property, computed, optional } as T.MemberExpression;
}

export function callExpression(callee: Expr | T.Super | T.V8IntrinsicIdentifier, args: T.CallExpression["arguments"]): T.CallExpression {
  return { type: "CallExpression", callee, arguments: args } as T.CallExpression;
}

export function arrowFunctionExpression(params: T.ArrowFunctionExpression["params"], body: T.BlockStatement | Expr, async = false): T.ArrowFunctionExpression {
  return { type: "ArrowFunctionExpression", params, body, async, expression: body.type !== "BlockStatement" } as T.ArrowFunctionExpression;
}

export function blockStatement(body: T.Statement[], directives: T.Directive[] = []): T.BlockStatement {
  return { type: "BlockStatement", body, directives } as T.BlockStatement;
}

export function expressionStatement(expression: Expr): T.ExpressionStatement {
  return { type: "ExpressionStatement", expression } as T.ExpressionStatement;
}

export function assignmentExpression(operator: string, left: T.LVal | T.OptionalMemberExpression, right: Expr): T.AssignmentExpression {
  return { type: "AssignmentExpression", operator, left, right } as T.AssignmentExpression;
}

export function sequenceExpression(expressions: Expr[]): T.SequenceExpression {
  return { type: "SequenceExpression", expressions } as T.SequenceExpression;
}

export function logicalExpression(operator: "||" | "&&" | "??", left: Expr, right: Expr): T.LogicalExpression {
  return { type: "LogicalExpression", operator, left, right } as T.LogicalExpression;
}

export function binaryExpression(operator: T.BinaryExpression["operator"], left: Expr | T.PrivateName, right: Expr): T.BinaryExpression {
  return { type: "BinaryExpression", operator, left, right } as T.BinaryExpression;
}

export function unaryExpression(operator: T.UnaryExpression["operator"], argument: Expr, prefix = true): T.UnaryExpression {
  return { type: "UnaryExpression", operator, argument, prefix } as T.UnaryExpression;
}

export function arrayExpression(elements: T.ArrayExpression["elements"] = []): T.ArrayExpression {
  return { type: "ArrayExpression", elements } as T.ArrayExpression;
}

export function arrayPattern(elements: T.ArrayPattern["elements"]): T.ArrayPattern {
  return { type: "ArrayPattern", elements } as T.ArrayPattern;
}

export function stringLiteral(value: string): T.StringLiteral {
  return { type: "StringLiteral", value } as T.StringLiteral;
}

export function numericLiteral(value: number): T.NumericLiteral {
  return { type: "NumericLiteral", value } as T.NumericLiteral;
}

export function booleanLiteral(value: boolean): T.BooleanLiteral {
  return { type: "BooleanLiteral", value } as T.BooleanLiteral;
}

export function nullLiteral(): T.NullLiteral {
  return { type: "NullLiteral" } as T.NullLiteral;
}

export function variableDeclaration(kind: T.VariableDeclaration["kind"], declarations: T.VariableDeclarator[]): T.VariableDeclaration {
  return { type: "VariableDeclaration", kind, declarations } as T.VariableDeclaration;
}

export function variableDeclarator(id: T.VariableDeclarator["id"], init: Expr | null = null): T.VariableDeclarator {
  return { type: "VariableDeclarator", id, init } as T.VariableDeclarator;
}

export function ifStatement(test: Expr, consequent: T.Statement, alternate: T.Statement | null = null): T.IfStatement {
  return { type: "IfStatement", test, consequent, alternate } as T.IfStatement;
}

export function whileStatement(test: Expr, body: T.Statement): T.WhileStatement {
  return { type: "WhileStatement", test, body } as T.WhileStatement;
}

export function returnStatement(argument: Expr | null = null): T.ReturnStatement {
  return { type: "ReturnStatement", argument } as T.ReturnStatement;
}

export function spreadElement(argument: Expr): T.SpreadElement {
  return { type: "SpreadElement", argument } as T.SpreadElement;
}
