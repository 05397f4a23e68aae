// Types of the browser platform's imports (browser.ts).
declare module "path-browserify" {
  const path: unknown;
  export default path;
}
