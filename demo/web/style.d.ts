// Style sheets the page imports (esbuild bundles them into app.css).
declare module "*.css";
