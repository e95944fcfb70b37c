#!/usr/bin/env node
// Thin launcher: the CLI is bundled by `npm run build` into dist/cli.js.
require('../dist/cli.js').cli(process.argv.slice(2));
