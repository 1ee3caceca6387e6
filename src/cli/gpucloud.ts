#!/usr/bin/env node
// The gpucloud CLI's entry. The CLI starts afresh for every command, and most of a start is compiling the
// modules it imports (client-node's generated API above all), so Node's compile cache is turned on before
// anything else is imported: the next start reuses the compiled code (docs/performance.md, "The CLI's start").
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { runCli } = await import('../console/program.ts');
process.exitCode = await runCli(process.argv.slice(2));
