/**
 * @babel/types with fast builders for the nodes the transform makes most. Babel's builders
 * validate every field (microseconds per node); these build the same plain objects directly
 * (the inputs are the transform's own, already valid). Everything else is Babel's.
 */
import type * as T from "@babel/types";

export * from "@babel/types";

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
