// The log room: Apache's access-log and error-log formats, and the files they go to, reopened on
// SIGHUP.
// May import: none.
export type { AccessEntry } from './access-log.ts';
export { escapeLogItem, formatAccessLine } from './access-log.ts';
export type { LogLevel } from './error-log.ts';
export { formatAuthFailure, formatErrorLine } from './error-log.ts';
export { LogFile } from './log-file.ts';
export { Logs } from './logs.ts';
