/**
 * Builds the QR test harness (qr.html) with the app's own Vite settings, so the harness bundles
 * the components and the decoder's .wasm exactly as the app does.
 *
 * Differences from vite.config.ts, each on purpose: the root is this folder (the app's index.html
 * stays untouched); only the Svelte plugin is kept, because the PWA plugin would build a service
 * worker for the harness and resolves its `srcDir` from the root; the output goes wherever the
 * caller says (`--outDir`), outside the app's dist/.
 */
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import appConfig from '../../../vite.config.ts';

const harnessRoot = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

export default defineConfig({
  ...appConfig,
  root: harnessRoot,
  publicDir: false,
  cacheDir: `${repoRoot}node_modules/.vite-qr-harness`,
  plugins: [svelte({ configFile: false })],
  server: { host: '127.0.0.1', strictPort: true },
  preview: { host: '127.0.0.1', strictPort: true },
  build: {
    ...appConfig.build,
    sourcemap: false,
    emptyOutDir: true,
    rolldownOptions: { input: { qr: `${harnessRoot}qr.html` } },
  },
});
