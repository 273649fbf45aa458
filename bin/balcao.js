#!/usr/bin/env node
// Entry point of the `balcao` command. TypeScript sources run through tsx's loader, so
// `npx balcao …` works right after `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
