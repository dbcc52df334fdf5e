// The console's build (scripts/lib/consoleBuild.ts runs it): hashed assets under /assets/, a manifest that the build
// reads to measure the sign-in page's first load, no source maps in the served files, and no inline script (the
// service's Content-Security-Policy refuses them; api/console.ts).
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  plugins: [react()],
  build: {
    outDir: process.env.CONSOLE_OUT_DIR || 'dist',
    emptyOutDir: true,
    manifest: true,
    sourcemap: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 600,
  },
});
