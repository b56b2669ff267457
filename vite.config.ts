import { fileURLToPath } from 'node:url';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vite';
import { VitePWA } from 'vite-plugin-pwa';

export default defineConfig({
  plugins: [
    // No svelte.config.js: the defaults, said here rather than announced on every build.
    svelte({ configFile: false }),
    VitePWA({
      strategies: 'injectManifest',
      srcDir: 'workers',
      filename: 'sw.ts',
      injectRegister: false,
      registerType: 'autoUpdate',
      injectManifest: {
        globPatterns: ['**/*.{js,css,html,svg,png,webmanifest,wasm}'],
        // One self-contained script, as a service worker is: vite-plugin-pwa 2.0 builds the
        // "es" format with `inlineDynamicImports`, which Rolldown reports as deprecated on
        // every build; "iife" is the same script without it.
        rollupFormat: 'iife',
      },
      manifest: {
        name: 'Sovereign Mesh',
        short_name: 'Mesh',
        description: 'Offline-first, end-to-end encrypted data sharing between your machines',
        start_url: '/',
        scope: '/',
        display: 'standalone',
        orientation: 'any',
        background_color: '#f3f6f4',
        theme_color: '#0f3d3e',
        icons: [
          { src: '/icons/icon-192.png', sizes: '192x192', type: 'image/png', purpose: 'any' },
          { src: '/icons/icon-512.png', sizes: '512x512', type: 'image/png', purpose: 'any' },
          { src: '/icons/maskable-512.png', sizes: '512x512', type: 'image/png', purpose: 'maskable' },
          { src: '/icons/icon.svg', sizes: 'any', type: 'image/svg+xml', purpose: 'any' },
        ],
      },
    }),
  ],
  // Only the browser bundle: Node code is not bundled.
  resolve: { alias: { crypto: fileURLToPath(new URL('./src/app/shims/node-crypto.ts', import.meta.url)) } },
  worker: { format: 'es' },
  build: {
    target: 'es2022',
    sourcemap: true,
    // A build prints what a user needs: Rolldown's plugin timing report is for profiling builds.
    rolldownOptions: { checks: { bundlerTimings: false } },
  },
  server: {
    host: '127.0.0.1',
    proxy: { '/ws': { target: 'ws://127.0.0.1:8787', ws: true }, '/api': 'http://127.0.0.1:8787' },
  },
});
