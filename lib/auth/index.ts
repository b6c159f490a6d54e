// The auth room: accounts and their passwords, login sessions with CSRF tokens, the login
// throttle, and who is asking in one request.
// May import: db, http, log.
export type { Account, NewAccount, Role } from './account-store.ts';
export {
  createAccount,
  findAccount,
  listAccounts,
  normalizeUsername,
  personExists,
  roles,
  setPassword,
  setRole,
  usernamePattern,
} from './account-store.ts';
export type { LoginTally } from './auth.ts';
export { Auth } from './auth.ts';
export { checkNewPassword, hashPassword, verifyPassword } from './password.ts';
export type { Identity, SessionControl } from './request-auth.ts';
export { Requester } from './requester.ts';
export type { CookieOptions } from './session.ts';
export { SessionStore } from './session.ts';
export type { WrittenMarks } from './written-mark.ts';
