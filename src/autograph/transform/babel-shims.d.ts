declare module "@babel/plugin-transform-typescript" {
  const plugin: unknown;
  export default plugin;
}
