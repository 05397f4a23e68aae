/**
 * `node --import stagecraft/register app.ts`: runs TypeScript files and converts every
 * function of the user's modules with AutoGraph as they load (each gets a converted twin in the
 * same scope, so closures keep working). Stack traces use the inline source maps (pointing at
 * the original code).
 */
import { register } from "node:module";

process.setSourceMapsEnabled(true);
const ext = import.meta.url.endsWith(".ts") ? "ts" : "js";
register(new URL(`./register-hooks.${ext}`, import.meta.url));
