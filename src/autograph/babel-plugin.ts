/**
 * `stagecraft/babel`: the AutoGraph Babel plugin. Every function of a file gets a converted
 * twin in the same scope, registered with the runtime (so closures keep working), and the
 * file imports `ag` from `stagecraft/autograph-runtime` (option `runtime` to change it).
 *
 *   // babel.config.json
 *   { "presets": ["@babel/preset-typescript"], "plugins": ["stagecraft/babel"] }
 */
import { autographPlugin, type AutographPluginOptions } from "./transform/plugin.js";

export type { AutographPluginOptions };
export default autographPlugin;
