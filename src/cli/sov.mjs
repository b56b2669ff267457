#!/usr/bin/env node
// `sov` entry point (package.json "bin"): lets plain Node run the TypeScript CLI via tsx.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./sov.ts');
process.exitCode = await main(process.argv.slice(2));
