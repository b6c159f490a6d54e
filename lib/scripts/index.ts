// The scripts room: the handler scripts of scripts/ loaded like PHP files (compiled on first use,
// again in development when they change), run for a request, and their errors as PHP shows them:
// file and line in the TypeScript source, parse errors, display_errors.
// May import: auth, db, http, log, page, render, search.
export { ScriptLoader } from './loader.ts';
export { errorPagePolicy, renderErrorPage } from './display-errors.ts';
export { ScriptRunner } from './run.ts';
export { describeError, ScriptParseError } from './stack.ts';
